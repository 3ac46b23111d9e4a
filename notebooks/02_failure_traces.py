# %% [markdown]
# # 02 — Five failure traces, one step at a time
#
# A tool call can end in more ways than "worked" and "crashed". The planner–executor machine gives each way its
# own typed result and its own row in the table, so that what happens next is decided by the table, not by
# whatever the surrounding code happens to do. This notebook walks through five recorded runs:
#
# | trace | what goes wrong |
# |---|---|
# | `normal_success` | nothing: three reads, one draft |
# | `argument_error` | the planner proposes arguments of the wrong type |
# | `permission_denied` | the planner asks for a record the policy restricts |
# | `read_timeout` | a read gets no answer in time |
# | `write_timeout_unknown` | a write gets no answer — but it may have happened |
#
# **How to use it.** At the interesting steps you see the state *before* an event and the event itself; write
# down what you expect the state to be after it, then run the next cell. Predicting first is the point: the
# rules only stick once you have been surprised by one.
#
# The traces are files in `data/traces/`, recorded by the runtime with a scripted planner, a fixed fault
# schedule and an injected clock (`scripts/make_traces.py` records them again, byte for byte). Everything below is
# rebuilt from those files: the states come from replaying the events, never from anything stored beside them.

# %%
from pathlib import Path

from IPython.display import Markdown

from labkit import load_events, mermaid_markdown
from labkit.runtime import FAULTS, describe_event, planner_executor_table
from labkit.viewer import Trace, render_answer, render_question, render_timeline, run_view

TRACES = Path("..") / "data" / "traces"
NAMES = ["normal_success", "argument_error", "permission_denied", "read_timeout", "write_timeout_unknown"]


def open_trace(name):
    """A recorded run, viewed through the fields that decide the next move (see labkit.viewer.run_view)."""
    events = load_events(TRACES / f"{name}.jsonl")
    return Trace.from_catalog(events, project=run_view, describe=lambda e: f"#{e.seq} {describe_event(e)}")


traces = {name: open_trace(name) for name in NAMES}
for name, trace in traces.items():
    final = trace.states[-1]
    print(f"{name:22} {len(trace):3} events  ends {final.status:9} outcome {final.outcome}")

# %% [markdown]
# ## The table every trace follows
#
# All five runs follow the same table, `planner_executor`. Its states are the ones of the lesson: the planner
# works in `PLANNING`, the validator in `VALIDATING`, the executor in `EXECUTING`; `OBSERVING` turns a tool's
# answer into a typed fact, `COMMITTING` makes it part of the state, and `UNKNOWN` and `WAITING_HUMAN` are where a
# run goes when it cannot decide by itself.

# %%
table = planner_executor_table()
Markdown(mermaid_markdown(table, current="UNKNOWN"))

# %% [markdown]
# Each step of a run writes one or more **facts** (what the planner proposed, what the validator decided, what a
# tool answered) and then one **transition**. The fact does not move the machine by itself: reducing it into the
# state records which transition it calls for (the field `owed`), and the next event fires exactly that one. The
# view below shows, for each state, the fields that decide what happens next:
#
# - `status` — the machine state; `owed` — the transition the latest fact calls for;
# - `action` — the logical action in flight: its id, tool (`(write)` if it has a side effect), attempts, whether a
#   call is open, and how the last call ended;
# - `reads`, `drafts` — what has been *committed*; `tool_calls` — budget used; `outcome` — how the run ended.
#
# ## 1. `normal_success`: the cycle
#
# One read takes eleven events. The first thirteen lines of the trace show one full cycle.

# %%
trace = traces["normal_success"]
print(render_timeline(trace, 0, 13))

# %% [markdown]
# **Predict.** The planner has just proposed a read. What does that fact change in the state?

# %%
at = trace.first("proposed")
print(render_question(trace.step(at)))

# %%
print(render_answer(trace.step(at)))

# %% [markdown]
# Nothing moved yet: the proposal only made `proposed` owed. The planner has no way to act; it can only add a
# proposal to the log. Now the transition it called for:

# %%
print(render_question(trace.step(at + 1)))

# %%
print(render_answer(trace.step(at + 1)))

# %% [markdown]
# **Predict.** The last event commits the saved draft. Where does `committed` lead from `COMMITTING`?

# %%
print(render_question(trace.step(-1)))

# %%
print(render_answer(trace.step(-1)))

# %% [markdown]
# `committed` has two rows: to `SUCCEEDED` when the goal predicate holds over the state (all three records
# committed *and* a draft that names every differing field), and back to `PLANNING` otherwise. The planner never
# says "done" in a way that counts: the stop condition is a check on the state.
#
# ## 2. `argument_error`: rejected before anything runs
#
# On its second call the planner proposes `read_record` with a number as the id and a stray field — the kind of
# schema-valid-looking nonsense small models produce.

# %%
trace = traces["argument_error"]
at = trace.first("validation", verdict="rejected")
print(render_timeline(trace, at - 4, at + 4))

# %% [markdown]
# **Predict.** The validator's verdict arrives. What becomes owed, and does the tool-call count change?

# %%
print(render_question(trace.step(at)))

# %%
print(render_answer(trace.step(at)))

# %%
print(render_question(trace.step(at + 1)))

# %%
print(render_answer(trace.step(at + 1)))

# %% [markdown]
# A rejection goes back to `PLANNING` with the reason as feedback; `tool_calls` did not move, because nothing was
# executed. Rejections count as replans, so a planner that keeps proposing nonsense runs into the retry budget and
# ends as `incomplete`, never as a success.
#
# ## 3. `permission_denied`: a person decides
#
# The second task needs record R08. This task's policy forbids no records, so the validator allows the read; but
# the record itself is restricted by its owner, and the tool answers `denied`.

# %%
trace = traces["permission_denied"]
at = trace.first("transitioned", trigger="denied")
print(render_timeline(trace, at - 3))

# %% [markdown]
# **Predict.** The run's policy escalates denials. Where does `denied` lead from `EXECUTING`?

# %%
print(render_question(trace.step(at)))

# %%
print(render_answer(trace.step(at)))

# %%
print(render_question(trace.step(-1)))

# %%
print(render_answer(trace.step(-1)))

# %% [markdown]
# `denied` has two rows, split by the guard `escalate` (a policy setting): `WAITING_HUMAN` when denials go to a
# person, `FAILED` when they do not. In this trace the person refused, so the run failed with the reason recorded.
# Unlike an `error` (definitely not done, so the planner may try something else) a denial is not the planner's to
# route around.
#
# With `escalate_denials=False` the same task fails at once. Here it is, run live, in a scratch draft area:

# %%
import tempfile

from labkit import EventLog
from labkit.runtime import TASKS, DraftStore, FaultPlan, Runtime, TickClock, World, render_trace

scratch = tempfile.TemporaryDirectory()


def live(task, run_id, faults="none"):
    """A fresh run of ``task`` in a scratch draft area, with a tick clock so its output reproduces."""
    world = World(DraftStore(Path(scratch.name) / f"{run_id}.sqlite", area=run_id))
    return Runtime(task, None, world, log=EventLog(run_id), clock=TickClock(start=1_790_000_000.0),
                   faults=FaultPlan.parse(faults))


strict = live(TASKS["diff3-restricted"].model_copy(update={"escalate_denials": False}), "strict")
result = strict.run()
print(result.status, result.outcome, "-", result.reason)
print(render_trace(strict.events[-3:]))

# %% [markdown]
# ## 4. `read_timeout`: a read is simply tried again
#
# The second read gets no answer before its deadline.

# %%
trace = traces["read_timeout"]
at = trace.first("transitioned", trigger="timeout")
print(render_timeline(trace, at - 4, at + 4))

# %% [markdown]
# **Predict.** The action in flight is a read. Where does `timeout` lead from `EXECUTING`?

# %%
print(render_question(trace.step(at)))

# %%
print(render_answer(trace.step(at)))
print(render_answer(trace.step(at + 1)))

# %% [markdown]
# `timeout` is split by the guard `side_effect_possible`. A read changes nothing in the world, so asking again is
# safe: the machine stays in `EXECUTING` and the executor makes attempt 2 of the *same* logical action `a2`, under
# the same validation token. The retry budget (`max_retries`) bounds how often.
#
# ## 5. `write_timeout_unknown`: the outcome is not known
#
# Now the write times out. In this trace the draft was in fact saved and only the reply was lost — but the run
# cannot know that from the timeout.

# %%
trace = traces["write_timeout_unknown"]
at = trace.first("transitioned", trigger="timeout")
print(render_timeline(trace, at - 4))

# %% [markdown]
# **Predict.** The action in flight is `save_draft`, a write. Where does `timeout` lead from `EXECUTING`?

# %%
print(render_question(trace.step(at)))

# %%
print(render_answer(trace.step(at)))

# %% [markdown]
# **Predict.** The status query (it asks the draft area whether a draft with this key and this text's digest
# exists) answers `present`. What is owed, and where does it lead?

# %%
print(render_question(trace.step(at + 1)))

# %%
print(render_answer(trace.step(at + 1)))

# %%
print(render_answer(trace.step(at + 2)))
print(render_answer(trace.step(at + 3)))

# %% [markdown]
# Why `UNKNOWN`, and not `FAILED` or `SUCCEEDED`?
#
# - **Not `FAILED`:** the draft may exist. Reporting failure would be false, and a caller who retried on that
#   report would save it twice — a repeated side effect, which the third invariant forbids.
# - **Not `SUCCEEDED`:** no typed success was observed. The second invariant says a step is committed only after
#   one was; a timeout is the absence of an answer, not a success.
# - **`UNKNOWN`** is the honest state: it allows exactly one kind of next step, asking the world. `present` leads to
#   `COMMITTING` (the status query's answer is the observation), `absent` back to `EXECUTING` to write again (safe,
#   because the write is known not to have happened and the key makes it idempotent), and `status_unavailable`
#   stays in `UNKNOWN` until the retry budget ends the run as `needs_review` — never as a success.
#
# Both other branches, run live: first the reply and the write are both lost, then the status query itself fails.

# %%
lost = live(TASKS["diff3"], "lost", "write_timeout@1:lost")
print(lost.run().outcome, "| repeated saves in the draft area:", lost.world.drafts.repeated_keys() or "none")
print(render_trace(lost.events[-10:-4]))

# %%
blind = live(TASKS["diff3"], "blind", "write_timeout@1,status_timeout@1,status_timeout@2,status_timeout@3,"
             "status_timeout@4")
result = blind.run()
print(result.status, result.outcome, "-", result.reason)

# %% [markdown]
# ## The failure semantics on one page
#
# The runtime declares each fault next to the table: where it strikes, which event it becomes, and how the
# machine recovers. This is that declaration, printed as it is.

# %%
for spec in FAULTS.values():
    print(f"{spec.name:17} strikes {spec.target:13} in {spec.state:10} as '{spec.event}'\n{'':18}→ {spec.recovery}")

# %% [markdown]
# ## The viewer
#
# The widget below steps through a run with Play and a slider: the event, the state before and after (changed
# fields in bold), the three invariants, and the diagram with the current state marked. It is connected to a
# *live* run of the restricted task that is paused in `WAITING_HUMAN`: the Approve and Deny buttons call the
# runtime's `decide`, the run continues, and the slider grows to show what it did. (Approve, and the read of R08
# goes through with the person's grant bound into a new token.)

# %%
from labkit.viewer_widget import decide_with, view_trace

paused = live(TASKS["diff3-restricted"], "paused")
print(paused.run().outcome, "-", paused.pending_decision())

# %%
# NBVAL_IGNORE_OUTPUT
view_trace(list(paused.events), decide=decide_with(paused), project=run_view,
           describe=lambda e: f"#{e.seq} {describe_event(e)}", start=len(paused.events) - 1)

# %%
# the paused run stays open for the buttons above; its scratch folder goes when the kernel stops
for runtime in (strict, lost, blind):
    runtime.world.drafts.close()

# %% [markdown]
# ## Your turn
#
# - Exercise 02 (`exercises/02_validator/`): write the validator — allowlist, argument schema, policy version,
#   budget — and the executor's check of its tokens. `labkit check 02`.
# - Exercise 03 (`exercises/03_predict_states/`): predict the states of runs you have not seen, and let the checker
#   tell you where your prediction first parts from the replay. `labkit check 03`.
