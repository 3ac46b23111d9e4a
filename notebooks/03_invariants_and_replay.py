# %% [markdown]
# # 03 — The log is the evidence: replay, tampering, divergence, invariants, resume
#
# A planner–executor run keeps no state of its own. Everything it knows is a fold of a pure reducer over its
# event log, which is what makes a run auditable: anyone holding the log can rebuild every state it went through
# and check it. This notebook leans on that from five sides:
#
# 1. **replay** — rebuild the state from the empty state, and get the live run's state back exactly;
# 2. **tampering** — edit, delete or reorder one event of a copy of a trace, and see labkit name it;
# 3. **divergence** — a wrong reducer, or a wrong recorded state, is found at its first wrong event;
# 4. **invariants** — the three properties of the machine, each made to fail by a deliberately broken part;
# 5. **crash and resume** — a run stopped mid-write picks up from its SQLite log and ends where an uninterrupted
#    run ends, without writing twice.
#
# All files are written to a scratch folder; the shipped traces in `data/traces/` are only read.

# %%
import tempfile
from pathlib import Path

from labkit import EventLogError, find_divergence, load_events, replay, write_jsonl
from labkit.runtime import empty_run_state, outcome_view, reduce_run, runtime_invariants
from labkit.runtime.traces import TRACE_SPECS, record_trace
from labkit.viewer import run_view

TRACES = Path("..") / "data" / "traces"
scratch = Path(tempfile.mkdtemp(prefix="labkit-nb03-"))
events = load_events(TRACES / "write_timeout_unknown.jsonl")
print(len(events), "events in write_timeout_unknown.jsonl, hash chain verified on load")

# %% [markdown]
# ## 1. Replay: the state is a fold over the log
#
# $x_n = \mathrm{reduce}(\ldots\mathrm{reduce}(\mathrm{reduce}(x_0, e_1), e_2)\ldots, e_n)$, starting from the
# empty state $x_0$. `replay` does that fold, and checks on the way that every transition leaves the state the
# replay is in.

# %%
rebuilt = replay(events, reduce_run, empty_run_state())
for name, value in run_view(rebuilt.state).items():
    print(f"{name:10} {value}")

# %% [markdown]
# Is that the state the live run had? The trace was recorded by a real run with an injected clock and run id, so
# it can be recorded again. The new recording is byte-for-byte the shipped file, and the live machine's state
# after every event equals the replayed one.

# %%
spec = next(s for s in TRACE_SPECS if s.name == "write_timeout_unknown")
live = record_trace(spec, out_dir=scratch)
again = (scratch / "write_timeout_unknown.jsonl").read_bytes()
print("recorded again, byte-identical:", again == (TRACES / "write_timeout_unknown.jsonl").read_bytes())
print("final state equal:", rebuilt.state == live.state)
print("state after every event equal:", list(rebuilt.states) == live.machine.states)

# %% [markdown]
# ## 2. Tampering is caught, and named by its sequence number
#
# Every event carries its own SHA-256 and the hash of the event before it. Editing an event breaks its own
# hash; deleting or reordering events breaks the links. `load_events` checks both on every load. Here are three
# tampered copies of the trace.

# %%
lines = (TRACES / "write_timeout_unknown.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
status_line = next(i for i, line in enumerate(lines) if '"type":"status_checked"' in line)

edited = list(lines)
edited[status_line] = edited[status_line].replace('"outcome":"present"', '"outcome":"absent"')
deleted = lines[:status_line] + lines[status_line + 1:]
reordered = [*lines[:status_line - 1], lines[status_line], lines[status_line - 1], *lines[status_line + 1:]]

for name, copy in [("edited.jsonl", edited), ("deleted.jsonl", deleted), ("reordered.jsonl", reordered)]:
    (scratch / name).write_text("".join(copy), encoding="utf-8")
    try:
        load_events(scratch / name)
    except EventLogError as err:
        print(f"{name:16} seq {err.seq}: {err.message}")

# %% [markdown]
# The edit is the dangerous one: it turns "the draft is there" into "the draft is not there", which would make the
# runtime write it again. It is refused before anything reads it.
#
# A forger can go further and re-seal the whole chain, so that every hash is valid again. Below, the status query
# is cut out and the log is re-sealed, as if the runtime had committed the timed-out write on faith. The chain
# checks pass — and replay with the invariants still finds the lie, at the exact event.

# %%
from labkit import EventLog, ReplayDivergence, Transitioned


def resealed(kept, name):
    """Re-seal ``kept`` into a new, internally valid chain, write it, and load it back (verified)."""
    log = EventLog(events[0].run_id)
    for event in kept:
        log.append(event.model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}), at=event.at)
    write_jsonl(scratch / name, list(log.events))
    return load_events(scratch / name)


cut = next(i for i, e in enumerate(events) if e.type == "status_checked")
forged = resealed([*events[:cut], *events[cut + 1:]], "forged.jsonl")
print("forged chain loads:", len(forged), "events")
for seq, name, detail in replay(forged, reduce_run, empty_run_state(), runtime_invariants()).violations:
    print(f"replay finds: {name} at seq {seq}: {detail}")

# %% [markdown]
# A cruder forgery, which also drops the transition the status query led to, does not even replay: the log would
# say `committed` left `COMMITTING` while the replay is still in `UNKNOWN`. A log is not a bag of facts; it has
# to be a walk through the table.

# %%
crude = resealed([e for i, e in enumerate(events) if i not in (cut, cut + 1)], "crude.jsonl")
try:
    replay(crude, reduce_run, empty_run_state())
except ReplayDivergence as err:
    print(err.message)

# %% [markdown]
#
# ## 3. The first divergence
#
# Replay answers "does this log make sense?". `find_divergence` answers a sharper question: given the states a run
# *recorded* after each event, where does a replay first disagree? Two ways to disagree:
#
# **A wrong reducer.** Suppose someone "simplifies" the reducer so that a timed-out tool call counts as an answer.

# %%
from labkit.runtime import ToolResult, describe_event
from labkit.viewer import compare_states


def optimistic_reduce(state, event):
    """A broken reducer: it reads every timeout as ok."""
    if isinstance(event, ToolResult) and event.outcome == "timeout":
        event = event.model_copy(update={"outcome": "ok"})
    return reduce_run(state, event)


divergence = find_divergence(events, live.machine.states, optimistic_reduce, empty_run_state())
print("first divergence at event seq", divergence.seq, "-", describe_event(events[divergence.seq]))
for row in compare_states(run_view(divergence.replayed), run_view(divergence.recorded)):
    if row.changed:
        print(f"  {row.name}: replayed {row.before}, recorded {row.after}")

# %% [markdown]
# The divergence is placed at the tool's answer, not later where a wrong transition would follow: the replayed
# state owes `ok` where the recorded one owes `timeout`.
#
# **A wrong recorded state.** Now the reducer is right, but one recorded state was changed: after the status
# query, it claims the draft is already committed.

# %%
import dataclasses

recorded = list(live.machine.states)
recorded[cut] = dataclasses.replace(recorded[cut], drafts={"diff-R03-R05-R11": {"sha256": "?", "text": "?"}})
print(find_divergence(events, recorded, reduce_run, empty_run_state()))

# %% [markdown]
# ## 4. The three invariants, each broken on purpose
#
# The runtime checks three properties after every event:

# %%
for invariant in runtime_invariants():
    print(f"{invariant.name:28} {invariant.description}")

# %% [markdown]
# They hold in every shipped trace. To see them fire, we break a part of the machine on purpose.
#
# **executed ⇒ validated.** The runtime takes its executor as a parameter, so we can hand it a broken one: it
# reads the record *next to* the one that was validated. The token check at the door passes (the action it is
# handed is the validated one); the tool then runs with other arguments, and the result event records the digest
# of what really ran.

# %%
from labkit.runtime import TASKS, DraftStore, Executor, Runtime, Signer, TickClock, World


class SwappingExecutor(Executor):
    """A broken executor: reads R04 whatever record was validated."""

    def _run_tool(self, action, fault):
        if action.tool == "read_record":
            action = dataclasses.replace(action, args={"id": "R04"})
        return super()._run_tool(action, fault)


world = World(DraftStore(scratch / "swap.sqlite"))
broken = SwappingExecutor(world, Signer(), TASKS["diff3"].policy().version)  # the lesson's default signing key
runtime = Runtime(TASKS["diff3"], None, world, log=EventLog("swap"), clock=TickClock(start=1_790_000_000.0),
                  executor=broken)
result = runtime.run()
print(result.status, result.outcome, "-", result.reason)

# %% [markdown]
# The run was sent to `FAILED` at the first wrong read, and the violation is an event in its log.
#
# **committed ⇒ observed** and **at most one side effect per logical action.** The runtime never commits an
# unobserved write or repeats one, so here we play the broken runtime by hand: the core `LabMachine`, with the
# planner–executor table, reducer and invariants, resumes the trace just after the write timed out, and then does
# what a careless runtime would.

# %%
from labkit import IllegalTransition, InvariantViolation, JsonlLog, LabMachine, describe
from labkit.runtime import ToolCalled, planner_executor_table
from labkit.runtime.table import state_guards


def careless_runtime(prefix, name, **lying_guards):
    """The machine resumed from the first ``prefix`` events of the trace, with the real invariants."""
    write_jsonl(scratch / f"{name}.jsonl", list(prefix))
    guards = {**state_guards(), "goal_met": lambda s, p: True, "escalate": lambda s, p: True, **lying_guards}
    return LabMachine(planner_executor_table(), guards=guards, invariants=runtime_invariants(), reduce=reduce_run,
                      empty=empty_run_state(), log=JsonlLog(scratch / f"{name}.jsonl"), clock=lambda: 1_790_000_100.0,
                      on_violation="raise")


unknown_at = next(i for i, e in enumerate(events) if isinstance(e, Transitioned) and e.dest == "UNKNOWN") + 1

# commit the timed-out write without asking the draft area
machine = careless_runtime(events[:unknown_at], "trusting")
machine.fire("confirmed_present", action_id="a4")
try:
    machine.fire("committed", action_id="a4")
except InvariantViolation as err:
    print(err.name, "at seq", err.seq, "-", err.detail)

# %% [markdown]
# The other careless move: after the timeout, retry the write without asking whether the first one happened. The
# table itself refuses it: the row `UNKNOWN --confirmed_absent--> EXECUTING` is guarded by `status_checked` (a
# status query since the last attempt found the draft absent), so without one there is no row to take, and
# nothing is recorded.

# %%
machine = careless_runtime(events[:unknown_at], "blind_retry")
try:
    machine.fire("confirmed_absent", action_id="a4")  # nobody asked the draft area
except IllegalTransition as err:
    print(err.message)
print("last event in the log:", describe(machine.events[-1]))

# %% [markdown]
# Defence in depth: a runtime whose guard lies ("yes, I checked") gets past the table, and then the third
# invariant stops it. It counts a write whose outcome is unknown as an effect that *may* have happened, until a
# status query settles it — so it fires when the second call is announced, before that write can run.

# %%
machine = careless_runtime(events[:unknown_at], "lying_guard", status_checked=lambda s, p: True)
machine.fire("confirmed_absent", action_id="a4")
action = machine.state.action
try:
    machine.record(ToolCalled(action_id="a4", attempt=2, tool=action.tool, args_sha256=action.args_sha256,
                              policy_version=action.policy_version, side_effect=True))
except InvariantViolation as err:
    print(err.name, "at seq", err.seq, "-", err.detail)
print("last event in the log:", describe(machine.events[-1]))

# %% [markdown]
# Where an invariant fired, the violation was written to the log before the error was raised, and the run is
# halted: a broken property is a fact of the run, not a line in a console that scrolls away. Where the table
# refused, nothing happened, so nothing was written.
#
# ## 5. Crash and resume
#
# The log is also what lets a run survive its process. The executor first authorizes the attempt (a refused one
# is recorded as `execution_refused`, never as a call); the runtime then writes `tool_called` *before* the tool
# runs and `tool_result` after, each in its own SQLite transaction. A run that dies in between leaves a call without a
# result: its outcome is unknown, exactly like a timeout, and the resumed run treats it that way.
#
# Here the power is cut inside `save_draft`, after the draft reached the draft area and before the reply came back.

# %%
from labkit import SqliteLog


class PowerCut(Exception):
    """Stands for the process dying: nothing after it runs."""


class FlakyWorld(World):
    """The real draft area, but the process dies right after a draft is written."""

    def save_draft(self, args, ctx, *, lose_reply=False):
        super().save_draft(args, ctx, lose_reply=lose_reply)
        raise PowerCut("the process died after the write, before its reply")


db, drafts = scratch / "runs.sqlite", scratch / "drafts.sqlite"
log = SqliteLog(db, run_id="crashy")
flaky = FlakyWorld(DraftStore(drafts, "crashy"))
try:
    Runtime(TASKS["diff3"], None, flaky, log=log, clock=TickClock(start=1_790_000_000.0)).run()
except PowerCut as err:
    print("crashed:", err, "| events in the log:", len(log), "| last:", log.events[-1].type)
log.close()
flaky.drafts.close()

# %% [markdown]
# A new process opens the same SQLite file and the same draft area and resumes: the run's task, faults and
# budget come from its `run_started` event, its state from replaying the log. It first records a `resumed` fact
# with the seconds since the run's last event: the run lay stopped then, so its time budget does not count them.

# %%
from labkit.runtime import render_trace

world = World(DraftStore(drafts, "crashy"))
resumed = Runtime(TASKS["diff3"], None, world, log=SqliteLog(db, run_id="crashy"),
                  clock=TickClock(start=1_790_000_100.0))
print("resumed in", resumed.state.status, "with the call open:", resumed.state.action.call_open)
result = resumed.run()
print(render_trace(resumed.events[-8:]))

# %% [markdown]
# Now the same task without any crash, and the comparison. The two logs differ — where the uninterrupted run has
# the tool's answer and an observation, the resumed one has a `resumed` fact, an `interrupted` result and a status
# query — but what the runs achieved must not: `outcome_view` keeps exactly that part of the final state. And the
# draft area saw the write once.

# %%
reference_world = World(DraftStore(scratch / "reference.sqlite"))
reference = Runtime(TASKS["diff3"], None, reference_world, log=EventLog("reference"),
                    clock=TickClock(start=1_790_000_000.0))
reference.run()
print("uninterrupted:", outcome_view(reference.state))
print("resumed:      ", outcome_view(resumed.state))
print("same outcome:", outcome_view(reference.state) == outcome_view(resumed.state),
      "| events:", len(reference.events), "vs", len(resumed.events),
      "| repeated writes:", world.drafts.repeated_keys() or "none")

# %%
import shutil

for done in (world, reference_world, runtime.world):
    done.drafts.close()
resumed.log.close()
shutil.rmtree(scratch)

# %% [markdown]
# ## Your turn
#
# Exercise 04 (`exercises/04_replay_and_compare/`): write a reducer, a hash-chain check and a divergence finder for
# a small job, and let the checker throw tampered and diverging logs at them. `labkit check 04`.
# Exercise 05 (`exercises/05_free_loop_vs_machine/`): count, from their logs, what the free loop and the machine
# each did with unknown writes, repeated side effects and the model's word. `labkit check 05`.
