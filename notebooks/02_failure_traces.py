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
# **After this notebook you can**
# - follow a planner–executor run event by event, telling a [fact](../docs/glossary.md) from the
#   [transition](../docs/glossary.md) it calls for;
# - say, for each way a tool call can end (ok, rejected, denied, timeout on a read, timeout on a write), which row
#   of the table handles it and why;
# - explain why a write that timed out goes to `UNKNOWN`, and how a [status query](../docs/glossary.md) and an
#   [idempotency key](../docs/glossary.md) settle it without writing twice;
# - run a task live with a [fault schedule](../docs/glossary.md) and read its trace.
#
# **Prerequisites:** notebook 01 (transition table, guard, invariant, event log, replay).
# **Time:** about 65 minutes, the quiz included.
#
# **How to use it.** At the interesting steps you see the state *before* an event and the event itself. A
# **Predict** box below it asks what comes next: choose, press *check*, and only then read on. The answer is hidden
# until you do (the box's code cell is collapsed, because it holds the answer; it computes the answer from the
# recorded trace). Predicting first is the point: the rules only stick once you have been surprised by one.
#
# The traces are files in `data/traces/`, recorded by the runtime with a scripted planner, a fixed fault
# schedule and an injected clock (`scripts/make_traces.py` records them again, byte for byte). Everything below is
# rebuilt from those files: the states come from replaying the events, never from anything stored beside them.

# %%
from pathlib import Path

from IPython.display import Markdown

from labkit import load_events, mermaid_markdown, predict
from labkit.course.viewer import Trace, render_answer, render_question, render_timeline, run_view
from labkit.runtime import FAULTS, describe_event, planner_executor_table

TRACES = Path("..") / "data" / "traces"
NAMES = ["normal_success", "argument_error", "permission_denied", "read_timeout", "write_timeout_unknown"]


def open_trace(name):
    """A recorded run, viewed through the fields that decide the next move (see labkit.course.viewer.run_view)."""
    events = load_events(TRACES / f"{name}.jsonl")
    return Trace.from_catalog(events, project=run_view, describe=lambda e: f"#{e.seq} {describe_event(e)}")


def predict_step(view, question, field, choices, why, reveal=True):
    """A predict-then-see box for one step; the answer is ``field`` after the step, read from the replay.

    ``reveal=False`` where no cell after it shows the answer (then only the box does)."""
    return predict(question, choices, str(run_view(view.after)[field]), f"{render_answer(view)}\n\n{why}",
                   reveal=reveal)


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
# ## Words used below
#
# Each step of a run writes one or more **facts** (what the planner proposed, what the validator decided, what a
# tool answered) and then one **transition**. The fact does not move the machine by itself: reducing it into the
# state records which transition it calls for, the **owed transition** (the field `owed`), and the next event
# fires exactly that one. Writing the fact first means a crash between the two loses nothing: a resumed run fires
# what is owed instead of asking the planner or the tool again.
#
# - **Validation token.** When the validator allows a call, it signs exactly that call: a keyed hash (an HMAC)
#   over the action's id, the tool, the digest of its arguments and the policy version. The executor recomputes
#   the token for the call in front of it and refuses a mismatch, so a token issued for reading `R03` cannot be
#   used to read `R04`. In the timelines it shows as `token 5368983a37…`.
# - **Idempotent, idempotency key.** An operation is *idempotent* when doing it twice has the same effect as doing
#   it once. `save_draft` is made idempotent by a key that names the one logical draft: saving again under the
#   same key changes nothing, so a retry cannot write twice.
# - **UNKNOWN outcome.** A write that timed out may or may not have happened; the run cannot tell from the
#   timeout. It neither assumes success nor retries blindly: it asks the world with a **status query**.
#
# All of these are in the [glossary](../docs/glossary.md). The view below shows, for each state, the fields that
# decide what happens next:
#
# - `status` — the machine state; `owed` — the transition the latest fact calls for;
# - `action` — the logical action in flight: its id, tool (`(write)` if it has a side effect), attempts, whether a
#   call is open, and how the last call ended;
# - `reads`, `drafts` — what has been *committed*; `tool_calls` — budget used; `outcome` — how the run ended.
#
# ## 1. `normal_success`: the cycle
#
# Each line of a timeline is one event, with the status after it. The run starts, and the planner looks at what
# it has read so far:

# %%
trace = traces["normal_success"]
at = trace.first("proposed")
print(render_timeline(trace, 0, at))

# %% [markdown]
# Next the planner proposes a read. Here is the state before, and the event:

# %%
print(render_question(trace.step(at)))

# %% jupyter={"source_hidden": true}
predict_step(trace.step(at), "What is the status after the proposal is recorded?", "status",
             ["PLANNING", "VALIDATING", "EXECUTING"],
             "Nothing moved: a fact does not move the machine. The proposal only made `proposed` owed. The planner "
             "has no way to act; it can only add a proposal to the log.")

# %% [markdown]
# Now the transition it called for:

# %% tags=["reveal"]
print(render_question(trace.step(at + 1)))

# %%
print(render_answer(trace.step(at + 1)))

# %% [markdown]
# One read takes eleven events. The first thirteen lines of the trace show the whole cycle: proposal, verdict,
# call, answer, observation, commit, and back to planning.

# %%
print(render_timeline(trace, 0, 13))

# %% [markdown]
# The last event commits the saved draft:

# %%
print(render_question(trace.step(-1)))

# %% jupyter={"source_hidden": true}
predict_step(trace.step(-1), "Where does `committed` lead from COMMITTING here?", "status",
             ["SUCCEEDED", "PLANNING", "COMMITTING", "FAILED"],
             "`committed` has two rows: to SUCCEEDED when the goal predicate holds over the state (all three "
             "records committed and a draft that names every differing field), and back to PLANNING otherwise. "
             "Here the goal holds.", reveal=False)

# %% [markdown]
# The planner never says "done" in a way that counts: the stop condition is a check on the state, the
# **goal predicate**.
#
# ## 2. `argument_error`: rejected before anything runs
#
# On its second call the planner proposes `read_record` with a number as the id and a stray field — the kind of
# schema-valid-looking nonsense small models produce.

# %%
trace = traces["argument_error"]
at = trace.first("validation", verdict="rejected")
print(render_timeline(trace, at - 4, at))

# %% [markdown]
# The validator's verdict arrives:

# %%
print(render_question(trace.step(at)))

# %% jupyter={"source_hidden": true}
predict_step(trace.step(at), "Which transition becomes owed?", "owed", ["allowed", "rejected", "proposed", "error"],
             "The verdict is a fact: it makes `rejected` owed. `tool_calls` does not move, because nothing was "
             "executed.")

# %% [markdown]
# And the transition it called for:

# %% tags=["reveal"]
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
print(render_timeline(trace, at - 3, at))

# %% [markdown]
# The run's policy escalates denials (sends them to a person).

# %%
print(render_question(trace.step(at)))

# %% jupyter={"source_hidden": true}
predict_step(trace.step(at), "Where does `denied` lead from EXECUTING?", "status",
             ["FAILED", "PLANNING", "WAITING_HUMAN", "EXECUTING"],
             "`denied` has two rows, split by the guard `escalate` (a policy setting): WAITING_HUMAN when denials go "
             "to a person, FAILED when they do not. This run's policy escalates.")

# %% [markdown]
# What did the person decide? The last step:

# %% tags=["reveal"]
print(render_question(trace.step(-1)))

# %%
print(render_answer(trace.step(-1)))

# %% [markdown]
# The person refused, so the run failed with the reason recorded.
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
print(render_timeline(trace, at - 4, at))

# %% [markdown]
# The action in flight is a read:

# %%
print(render_question(trace.step(at)))

# %% jupyter={"source_hidden": true}
predict_step(trace.step(at), "Where does `timeout` lead from EXECUTING for a read?", "status",
             ["EXECUTING", "UNKNOWN", "FAILED", "PLANNING"],
             "`timeout` is split by the guard `side_effect_possible`. A read changes nothing in the world, so asking "
             "again is safe: the machine stays in EXECUTING.")

# %% [markdown]
# The next event is the second attempt:

# %% tags=["reveal"]
print(render_answer(trace.step(at + 1)))

# %% [markdown]
# It is attempt 2 of the *same* logical action `a2`, under the same validation token: the validator allowed this
# call once, and the retry is the same call. The retry budget (`max_retries`) bounds how often.
#
# ## 5. `write_timeout_unknown`: the outcome is not known
#
# Now the write times out. In this trace the draft was in fact saved and only the reply was lost — but the run
# cannot know that from the timeout.

# %%
trace = traces["write_timeout_unknown"]
at = trace.first("transitioned", trigger="timeout")
print(render_timeline(trace, at - 4, at))

# %% [markdown]
# The action in flight is `save_draft`, a write:

# %%
print(render_question(trace.step(at)))

# %% jupyter={"source_hidden": true}
predict_step(trace.step(at), "Where does `timeout` lead from EXECUTING for a write?", "status",
             ["EXECUTING", "UNKNOWN", "FAILED", "SUCCEEDED"],
             "The guard `side_effect_possible` holds for a write: it may have happened, so the run goes to UNKNOWN "
             "and may do only one thing there, ask the world.")

# %% [markdown]
# The status query asks the draft area whether a draft with this key and this text's digest exists. It answers
# `present`:

# %% tags=["reveal"]
print(render_question(trace.step(at + 1)))

# %% jupyter={"source_hidden": true}
predict_step(trace.step(at + 1), "Which transition does the answer `present` make owed?", "owed",
             ["confirmed_present", "confirmed_absent", "committed", "timeout"],
             "`present` makes `confirmed_present` owed; the row UNKNOWN --confirmed_present--> COMMITTING follows, "
             "and the draft is committed with the status query's answer as its observation.")

# %% [markdown]
# The two events that follow:

# %% tags=["reveal"]
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
#   because the write is known not to have happened and the idempotency key means a second save cannot write
#   twice), and `status_unavailable`
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
from labkit.course.viewer_widget import decide_with, view_trace

paused = live(TASKS["diff3-restricted"], "paused")
print("the run is", paused.run().outcome)
pending = paused.pending_decision()
print(f"waiting for a person on action {pending.action_id}: {pending.tool}({pending.args})\n  because {pending.reason}")

# %%
# NBVAL_IGNORE_OUTPUT
view_trace(list(paused.events), decide=decide_with(paused), project=run_view,
           describe=lambda e: f"#{e.seq} {describe_event(e)}", start=len(paused.events) - 1)

# %%
# the paused run stays open for the buttons above; its scratch folder goes when the kernel stops
for runtime in (strict, lost, blind):
    runtime.world.drafts.close()

# %% [markdown]
# ## What the seed claimed, and what the kit measured
#
# The planner–executor seed (004) is a lesson plan, marked as prepared and not yet worked through: it ran no
# model and reports no figure. What it claims is the shape of the machine: a transition function written down
# row by row, and five traces to inject by hand (a normal success, bad arguments, a permission denial, a read that
# times out, a write that times out with its outcome unknown), each checked for the state it leads to. Its
# setting is a toy: a few synthetic records, the tools `read_record` and `save_draft`, nothing online and no real
# business write. The kit's traces are those five, recorded by its runtime with a scripted planner and a fault
# schedule, so what can be set beside the seed is where each run goes — not a success rate, which the seed does
# not give and a scripted planner could not measure.

# %%
from labkit.runtime.table import seed_rows_in
from labkit.runtime.traces import first_off_cycle

seed_rows = seed_rows_in(table)
lines = [f"- the seed's `{r['seed']}`: the table goes to {', '.join(r['table']) or 'no state'} — "
         + ("as the seed says" if r["same"] else "**not as the seed says**") for r in seed_rows]
lines.append(f"\n{sum(r['same'] for r in seed_rows)} of the seed's {len(seed_rows)} rows are in the table as it "
             "writes them. Where each recorded trace's fault first sent the run, and how the run ended:\n")
for name, trace in traces.items():
    step = first_off_cycle(trace.events)
    where = "no fault: only the cycle" if step is None else f"{step[0]} --{step[1]}--> {step[2]}"
    lines.append(f"- `{name}`: {where}; ended {trace.states[-1].status} ({trace.states[-1].outcome})")
Markdown("\n".join(lines))

# %% [markdown]
# One difference the rows cannot show: in the seed a denial comes from the validator (`VALIDATING + denied`); in
# the kit's `permission_denied` trace the validator allows the read and the record's owner refuses it at the tool
# (`EXECUTING + denied`, §3). The table has both rows, and both lead to the same two places. What the seed leaves
# open and the kit decides: a read that times out stays in `EXECUTING` and is tried again under the same token,
# and a denial goes to a person only when the task's policy says so.

# %% [markdown]
# ## Wrap-up quiz
#
# Answer in the boxes and press *check answers*; a wrong answer gets a hint, not the answer. Code answers are one
# line of Python, evaluated in this notebook: `traces`, `table`, `FAULTS` and `run_view` are there to use.

# %% jupyter={"source_hidden": true}
from labkit import Choice, CodeLine, Quiz

quiz = Quiz([
    Choice("A fact (say, the validator's verdict) is recorded. What does it change?",
           ["the status", "only what is owed (and the facts it records)", "nothing at all"],
           "only what is owed (and the facts it records)",
           "A fact records what happened and the transition it calls for; the next event fires that transition."),
    Choice("A read times out. Where does the run go?", ["EXECUTING", "UNKNOWN", "FAILED"], "EXECUTING",
           "A read has no side effect, so it is simply tried again, within the retry budget."),
    Choice("A write times out and the status query never answers. How does the run end?",
           ["succeeded", "failed", "needs_review"], "needs_review",
           "Nobody knows whether the draft exists, so neither success nor failure may be claimed."),
    Choice("Why may the run write again after the status query answered `absent`?",
           ["the retry budget allows it", "the write is known not to have happened, and the idempotency key makes a "
            "second save harmless", "the validation token has expired"],
           "the write is known not to have happened, and the idempotency key makes a second save harmless",
           "Asking first turns 'maybe' into 'no'; the key guards against the rare case where it still lands twice."),
    CodeLine("How many events does the `read_timeout` trace have? (one expression, from `traces`)",
             lambda v: v == len(traces["read_timeout"]),
             hint="each trace is a Trace object in the dict `traces`; len() works on it",
             explain="len(traces['read_timeout']): every number here is read from the recorded file."),
    CodeLine("Which state does the run `permission_denied` end in? (one expression)",
             lambda v: v == traces["permission_denied"].states[-1].status,
             hint="a Trace keeps the replayed states in `.states`; the last one has a `.status`",
             explain="traces['permission_denied'].states[-1].status: the state comes from replaying the events."),
    CodeLine("Write the set of the table's states a run can end in.",
             lambda v: set(v) == set(table.terminal),
             hint="the table declares them; look at the attributes of `table` (the terminal ones)",
             explain="table.terminal: the states nothing leaves."),
], namespace=globals())
quiz

# %% [markdown]
# ## Take-aways
#
# - A fact records what happened and makes one transition owed; the next event fires it. The planner can only
#   add proposals to the log, never move the machine.
# - Each way a tool call ends has its own typed result and its own row: `rejected` replans, `denied` goes to a
#   person or fails, a read `timeout` retries the same action, a write `timeout` goes to `UNKNOWN`.
# - `UNKNOWN` allows one thing: asking the world. `present` commits, `absent` writes again under the same
#   idempotency key, no answer ends as `needs_review`, never as a success.
# - A validation token binds one exact call; a retry is the same call, a changed call needs a new verdict.
# - Success is a check on the state (the goal predicate), not the planner's word.
#
# ## Your turn
#
# - Exercise 02a (`exercises/02a_validator/`): write the validator — allowlist, argument schema, policy version,
#   budget — and the executor's check of its tokens. `labkit check 02a`.
# - Exercise 02b (`exercises/02b_predict_states/`): predict the states of runs you have not seen, and let the checker
#   tell you where your prediction first parts from the replay. `labkit check 02b`.
