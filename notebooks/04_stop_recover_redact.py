# %% [markdown]
# # 04 — When to stop, how to undo, what to leave out of the log
#
# Notebooks 02 and 03 followed the planner–executor machine through its failures and its log. Four questions
# were left open, and they are the ones a real deployment meets first:
#
# 1. **when does a run stop?** — on a verified goal, or on a budget of steps, cost or risk; never on the
#    planner's word;
# 2. **how is a mistake undone?** — by a safe retry, a query, a person, or a *compensating* action, which is not
#    a rollback;
# 3. **what must the log not hold?** — sensitive data and hidden reasoning;
# 4. **what does the machine buy over a free loop?** — drawn as two diagrams and compared by what each can
#    observe, not by lines of code.
#
# Everything here runs the real runtime with a scripted planner (no model) in a scratch folder. Where the
# runtime does not have a feature, the notebook says so and shows the nearest thing it has.
#
# **After this notebook you can**
# - name the four [stop conditions](../docs/glossary.md) and show a run ending on its step and
#   [cost budget](../docs/glossary.md) as `incomplete`, and one ending as `needs_review`, never as a success;
# - choose a recovery for a failed action — safe retry, [status query](../docs/glossary.md),
#   [escalation](../docs/glossary.md) or [compensation](../docs/glossary.md) — and say why compensation is not a
#   rollback;
# - check that a log holds no [sensitive data](../docs/glossary.md) ([redaction](../docs/glossary.md)) and no
#   [hidden reasoning](../docs/glossary.md);
# - draw the [free loop](../docs/glossary.md) and the machine as two tables and compare where each can observe
#   and recover.
#
# **Prerequisites:** notebooks 01–03 ([transition table](../docs/glossary.md), [guard](../docs/glossary.md),
# [owed transition](../docs/glossary.md), [UNKNOWN outcome](../docs/glossary.md),
# [idempotency key](../docs/glossary.md), [goal predicate](../docs/glossary.md), [replay](../docs/glossary.md)).
# **Time:** about 60 minutes, the quiz included. The **Predict** boxes hide their answer until you choose and
# press *check*.

# %%
import json
import tempfile
from pathlib import Path

from IPython.display import Markdown

from labkit import EventLog, Row, TransitionTable, mermaid_markdown, predict, write_jsonl
from labkit.runtime import (
    FAULTS,
    TASKS,
    DiffPlanner,
    DraftStore,
    FaultPlan,
    Runtime,
    TickClock,
    Usage,
    World,
    parse_proposal,
    planner_executor_table,
)
from labkit.runtime.free_loop import run_free
from labkit.runtime.planner import PlannerError

workspace = tempfile.TemporaryDirectory(prefix="labkit-nb09-")  # removed when the kernel stops
scratch = Path(workspace.name)
task = TASKS["diff3"]


def live(task, run_id, planner=None, faults=None):
    """A fresh run of ``task`` in its own scratch draft area, with a tick clock so its output reproduces."""
    world = World(DraftStore(scratch / f"{run_id}.sqlite", area=run_id))
    return Runtime(task, planner, world, log=EventLog(run_id), clock=TickClock(start=1_790_000_000.0),
                   faults=FaultPlan.parse(faults) if faults else None)


def with_budget(task, **limits):
    """The same task with some budget limits changed."""
    return task.model_copy(update={"budget": task.budget.model_copy(update=limits)})


print(task.description)
print("budget:", task.budget.model_dump())

# %% [markdown]
# ## 1. Stop conditions: a verified goal, or a budget
#
# A run may stop for one good reason and several bad ones:
#
# $$\mathrm{stop} = \mathrm{goal\_verified} \lor \mathrm{steps} \ge B_s \lor \mathrm{cost} \ge B_c \lor
# \mathrm{risk} > r_{max}$$
#
# Only the first is a success. The others end the run as `incomplete` (or `needs_review` when a write's outcome
# is still unknown), because running out of budget says nothing about whether the goal holds. The goal is a
# predicate over the replayed state (`goal_met`), so the planner saying "done" is never enough.
#
# With the default budget the task succeeds in four planner calls:

# %%
ok = live(task, "ok")
result = ok.run()
print(result.outcome, "-", result.reason, f"| planner calls {result.planner_calls}, tool calls {result.tool_calls}")

# %% [markdown]
# **Steps.** Allow only two planner calls: the third read is never proposed.

# %%
short = live(with_budget(task, max_steps=2), "steps").run()
print(short.status, short.outcome, "-", short.reason)

# %% [markdown]
# **Cost.** A scripted planner costs nothing, so this one reports a price per call, as a hosted model's bill
# would (`Usage.cost`). The machine adds it up in the state and checks the budget *before* anything that costs:
# before asking the planner, before validating an action.


# %%
class MeteredPlanner:
    """The scripted diff planner, charging a fixed price (and some tokens) for every proposal."""

    name = "metered-diff"

    def __init__(self, price: float) -> None:
        self.inner, self.price = DiffPlanner(task.goal.reads, task.goal.draft_key), price

    def propose(self, context):
        proposal = self.inner.propose(context)
        return proposal.model_copy(update={"usage": Usage(prompt_tokens=300, completion_tokens=40, cost=self.price)})


priced = live(with_budget(task, max_cost=0.10), "cost", planner=MeteredPlanner(0.03))

# %% jupyter={"source_hidden": true}
_trial = live(with_budget(task, max_cost=0.10), "cost-trial", planner=MeteredPlanner(0.03)).run()
predict("The cost budget is 0.10; every planner call costs 0.03, and the task needs four calls (three reads, "
        "one save). How does the run end?",
        ["incomplete: stopped on cost before the save", "succeeded: the last call overshoots to 0.12",
         "failed: the budget is broken mid-call"],
        "succeeded: the last call overshoots to 0.12" if _trial.outcome == "succeeded"
        else "incomplete: stopped on cost before the save",
        f"The run ended {_trial.outcome} with cost {_trial.state.cost:g} ({_trial.reason}). "
        "The budget is checked before each call, with what has been spent so far: after three calls 0.09 < 0.10, "
        "so the fourth is allowed, and it takes the total to 0.12. A budget checked before spending can be "
        "overshot by one call; keep a call's price of headroom if the limit is hard.")

# %% tags=["reveal"]
priced_result = priced.run()
print(priced_result.outcome, f"cost {priced_result.state.cost:g}", "-", priced_result.reason)
dear = live(with_budget(task, max_cost=0.10), "dear", planner=MeteredPlanner(0.04)).run()
print(dear.outcome, f"cost {dear.state.cost:g}", "-", dear.reason)

# %% [markdown]
# At 0.04 a call, three calls already cost 0.12 and the save is never proposed: `incomplete`, with the reason in
# the log. A budget can also run out while a write's outcome is unknown. Then the run must not say `incomplete`
# (something may have been written) nor `succeeded` (nothing confirms it): it ends as `needs_review`. Here the
# save times out and the [status query](../docs/glossary.md) never answers:

# %%
unsettled = live(task, "unsettled", faults="write_timeout@1:lost," + ",".join(f"status_timeout@{n}"
                                                                               for n in range(1, 5)))
review = unsettled.run()
print(review.status, review.outcome, "-", review.reason)

# %% [markdown]
# **Risk.** labkit has no numeric risk score, so there is no $r_{max}$ to exceed. It handles risk by
# category instead, before anything runs: a tool not on the policy's [allowlist](../docs/glossary.md) is never
# executed, a restricted record is denied, and a denial either fails the run or
# [escalates](../docs/glossary.md) to a person (`WAITING_HUMAN`). A risk score would plug in at the same place,
# as one more check of the validator that denies and escalates. Here is the escalation, in the restricted task:

# %%
guarded = live(TASKS["diff3-restricted"], "restricted")
paused = guarded.run()
decision = guarded.pending_decision()
print(paused.status, paused.outcome, "-", paused.reason)
print(f"waiting for a person: may {decision.tool} run with {decision.args}? ({decision.reason})")

# %% [markdown]
# ## 2. Recovery: retry, query, a person — or compensation
#
# Recovery is not "try again". Which recovery is right depends on what the failed action may already have done
# to the world. Each injected fault of the runtime declares its recovery; read them from the declaration:

# %%
for name, spec in FAULTS.items():
    if not spec.kills_runner:
        print(f"{name:17} in {spec.state:10} -> {spec.recovery}")

# %% [markdown]
# Four kinds appear: a **safe retry** (a read changes nothing), a **query to confirm** (a write that may have
# happened is asked about, never repeated blindly), a **person** (a denial by policy), and **asking the planner
# again** (a rejected proposal executed nothing). The fifth kind the seed names is missing on purpose:
#
# **Compensation** is a *new* action that counteracts an effect that already happened — a correcting draft, a
# refund, a follow-up message. It is not a rollback: between the write and its compensation the world held the
# first version, and whoever read it has read it. labkit's runtime has no compensating action and no row out of
# `SUCCEEDED` (a terminal state is absorbing), so a compensation here must be a new, logged run. What happens
# when someone "fixes" the world outside the machine instead? The successful run above saved its draft; a
# reviewer finds it wanting and overwrites it in the draft area by hand:

# %%
store = ok.world.drafts
key = task.goal.draft_key
logged_sha = next(e for e in reversed(ok.events) if e.type == "tool_result" and e.tool == "save_draft").data["sha256"]
store.save(key, store.drafts()[key] + "\n(corrected by a reviewer)", request="by hand")

# %% jupyter={"source_hidden": true}
predict("After the hand edit, what does the draft area's call table hold, and does the run's log still "
        "describe the world?",
        ["one save; the log still matches", "two saves; the log names a draft that is no longer there",
         "one save; the first version is gone without trace"],
        "two saves; the log names a draft that is no longer there"
        if len(store.calls()) == 2 and store.status(key) != logged_sha else "one save; the log still matches",
        f"The call table keeps both saves: {[(k, s[:8], r or 'the run') for k, s, _, r in store.calls()]}. "
        f"The log says the run saved sha {logged_sha[:8]}…, the area now holds {store.status(key)[:8]}…: the "
        "first version existed, was readable, and is recorded. A compensation is an action of its own; done "
        "outside the machine, it leaves the log describing a world that no longer exists.")

# %% tags=["reveal"]
print("saves in the call table:", len(store.calls()))
print("the log's draft is the one in the area:", store.status(key) == logged_sha)

# %% [markdown]
# The lesson for a design: give every compensation its own tool (allowlisted, validated, logged like any
# write), its own [idempotency key](../docs/glossary.md), and its own row, so that the log tells the whole
# story — the effect, and the effect that counteracts it.
#
# ## 3. What the log must not hold
#
# The log is kept, copied, and shown to the planner (its context is built from the state, which is built from the
# log). Anything in it spreads. Two things must stay out.
#
# **Sensitive data.** The synthetic records carry a national id and a phone number. The executor
# [redacts](../docs/glossary.md) every tool answer before it becomes an event (`labkit.runtime.redact`), so the
# planner and the log see a marker instead:

# %%
record = ok.world.records["R03"]
read = next(e for e in ok.events if e.type == "tool_result" and e.tool == "read_record")
print("in the world:", {k: record[k] for k in ("id", "national_id", "phone")})
print("in the log:  ", {k: read.data[k] for k in ("id", "national_id", "phone")})
write_jsonl(scratch / "ok.jsonl", ok.events)
saved_log = (scratch / "ok.jsonl").read_text(encoding="utf-8")
secrets = [r[f] for r in ok.world.records.values() for f in ("national_id", "phone")]
print("sensitive values found in the whole saved log:", sum(s in saved_log for s in secrets))

# %% [markdown]
# Redaction covers what it was told to cover: the two declared fields, and anything shaped like them in free
# text. The customer's name is still there. For synthetic records that is fine; for real ones, the list of
# sensitive fields is a decision to make with whoever owns the data, and the check above is the test to keep.
#
# The free loop of notebook 06 calls the same tools directly, without an executor. Give both the same planner,
# one that keeps every context it is shown, and look for the raw values in what it saw:


# %%
class WatchedPlanner(DiffPlanner):
    """The scripted diff planner, keeping every context it was shown."""

    def __init__(self) -> None:
        super().__init__(task.goal.reads, task.goal.draft_key)
        self.seen = []

    def propose(self, context):
        self.seen.append(context.model_dump(mode="json"))
        return super().propose(context)


def leaks(text):
    """How many of the records' sensitive values occur in ``text``."""
    return sum(secret in text for secret in secrets)


in_machine, in_free_loop = WatchedPlanner(), WatchedPlanner()
watched = live(task, "watched", planner=in_machine)
watched.run()
run_free(task, in_free_loop, World(DraftStore(scratch / "free.sqlite", area="free")))
print("sensitive values the machine's planner was shown:  ", leaks(json.dumps(in_machine.seen)))
print("sensitive values the free loop's planner was shown:", leaks(json.dumps(in_free_loop.seen)))

# %% [markdown]
# **Hidden reasoning.** A planner proposes `{action, args, rationale_summary}`: a one-line public reason, at most
# 200 characters. There is no field for a chain of thought, and a proposal that brings one is refused before it
# is recorded, as is an essay passed off as a summary:

# %%
answers = {
    "a 'thoughts' field": {"candidates": [], "claims_done": True, "thoughts": "First I consider the records..."},
    "a 300-character rationale": {"candidates": [{"action": "read_record", "args": {"id": "R03"},
                                                  "rationale_summary": "because " * 38}]},
    "a proper proposal": {"candidates": [{"action": "read_record", "args": {"id": "R03"},
                                          "rationale_summary": "R03 is needed"}]},
}


def refusal(text):
    """The message with which the runtime refuses a planner's answer, or None when it accepts it."""
    try:
        parse_proposal(text)
    except PlannerError as exc:
        return exc.message
    return None


for what, answer in answers.items():
    print(f"{what:26} {refusal(json.dumps(answer)) or 'accepted'}")

# %% [markdown]
# Why keep it out, when it might help a reviewer? It is not a fact: it is the model's story about a fact. It can
# repeat anything the model was ever shown (a model fed unredacted text, like the free loop's, would write the
# values straight back into the log), it can be long and unbounded, and a log that stores it invites decisions
# based on it. What the machine needs — which action, with which arguments, validated under which policy, with
# which result — is in the typed events.
#
# ## 4. Two diagrams: the free loop and the machine
#
# The free loop (`labkit.runtime.free_loop.run_free`) is "while not done: ask the model, run what it says". Its
# moves, written as a labkit table from that code, fit in four rows:

# %%
free_loop = TransitionTable.build(
    "free_loop", ["ASK_MODEL", "RUN_TOOL", "DONE", "GAVE_UP"],
    [Row("ASK_MODEL", "action_proposed", "RUN_TOOL"),
     Row("ASK_MODEL", "model_says_done", "DONE"),
     Row("ASK_MODEL", "iteration_cap", "GAVE_UP"),
     Row("RUN_TOOL", "any_answer", "ASK_MODEL")],
    initial="ASK_MODEL", terminal=["DONE", "GAVE_UP"])
Markdown(mermaid_markdown(free_loop))

# %% [markdown]
# The machine's table, drawn from the runtime's own declaration:

# %%
machine = planner_executor_table()
Markdown(mermaid_markdown(machine))

# %% [markdown]
# Compare them by what they can *observe* and *recover*, not by size. The numbers below are read from the two
# tables.

# %%
def tool_answers(table, state):
    """The answers of a tool a table tells apart in the state where the tool has been called (a budget running
    out is the machine's own event, not an answer of the tool)."""
    return sorted({r.event for r in table.rows if r.source == state} - {"budget_exhausted"})


def success_rows(table, success):
    """The rows that lead into the success state: the only ways a run can end well."""
    return "; ".join(str(r) for r in table.rows if r.dest == success)


# %% jupyter={"source_hidden": true}
predict("In how many different ways can a tool call end, as far as the free loop's table can tell?",
        ["1", "2", "4"], str(len(tool_answers(free_loop, "RUN_TOOL"))),
        f"The free loop has one row out of RUN_TOOL: {tool_answers(free_loop, 'RUN_TOOL')}. An error, a denial, "
        "a timeout of a read and a timeout of a write all go back to the model as text; whether the write "
        "happened is the model's guess. The machine tells apart "
        f"{len(tool_answers(machine, 'EXECUTING'))}: {', '.join(tool_answers(machine, 'EXECUTING'))}; and its "
        "guard `side_effect_possible` splits a timeout again into a read (retry) and a write (UNKNOWN).")

# %% tags=["reveal"]
comparison = [
    ("states", len(free_loop.states), len(machine.states)),
    ("rows", len(free_loop.rows), len(machine.rows)),
    ("tool outcomes told apart", len(tool_answers(free_loop, "RUN_TOOL")), len(tool_answers(machine, "EXECUTING"))),
    ("a state for 'outcome unknown'", "UNKNOWN" in free_loop.states, "UNKNOWN" in machine.states),
    ("a state for 'a person decides'", "WAITING_HUMAN" in free_loop.states, "WAITING_HUMAN" in machine.states),
    ("ways into success", success_rows(free_loop, "DONE"), success_rows(machine, "SUCCEEDED")),
]
Markdown("| | free loop | machine |\n|---|---|---|\n"
         + "\n".join(f"| {what} | {a} | {b} |" for what, a, b in comparison))

# %% [markdown]
# Read the last row first. The free loop reaches `DONE` when the model says so; the machine reaches `SUCCEEDED`
# only by rows guarded with the [goal predicate](../docs/glossary.md). Every state of the machine is also a
# point where the log shows what is known, and every extra row is a recovery somebody decided on in advance.
#
# What the machine still cannot do: it cannot make the model's proposals *right*. A draft that lists the wrong
# differences, a plan that reads the wrong records within the policy, a summary that misleads — the machine
# bounds what such a mistake can do (validated, once, logged, within budget) and makes it visible; it does not
# prevent it. That is what the [verifier](../docs/glossary.md) and people are for.

# %%
for runtime in (ok, priced, unsettled, guarded, watched):
    runtime.world.drafts.close()

# %% [markdown]
# ## What the seed claimed, and what the kit measured
#
# The planner–executor seed (004) is a lesson plan that ran nothing and gives no figure. Its claims for this
# notebook: a run stops on a verified goal or on a budget of steps, cost or risk, and a spent budget ends it as
# incomplete or in need of review, never as a success; recovery is chosen by what a failed action may have done
# (a safe retry, a query, a person, a compensating action — and compensation is not a strict rollback); the log
# keeps no full sensitive payload and no hidden reasoning; the free loop and the machine are to be compared by
# where they can observe and recover, not by lines of code; and the machine does not remove semantic mistakes.
# Its setting: synthetic records, a read tool and a draft tool, no model, nothing online. The kit ran each claim
# above on its runtime with a scripted planner; the figures, from those runs:

# %%
endings = {"step budget": short, "cost budget, a call too dear": dear, "write unknown, status never answers": review}
lines = [f"- {what}: ended `{r.outcome}`" for what, r in endings.items()]
lines += [
    f"- budget endings that claimed success: {sum(r.outcome == 'succeeded' for r in endings.values())} "
    f"of {len(endings)}",
    f"- cost checked before each call: ended `{priced_result.outcome}` at cost {priced_result.state.cost:g}, "
    f"over the limit of {priced.task.budget.max_cost:g} by the last call",
    f"- risk: no numeric score; the restricted task stood in `{paused.status}` waiting for a person",
    f"- sensitive values in the saved log: {leaks(saved_log)} of {len(secrets)}; shown to the machine's planner: "
    f"{leaks(json.dumps(in_machine.seen))}; to the free loop's: {leaks(json.dumps(in_free_loop.seen))}",
    f"- planner answers refused before the log: {sum(refusal(json.dumps(a)) is not None for a in answers.values())} "
    f"of {len(answers)} (the proper proposal accepted: "
    f"{refusal(json.dumps(answers['a proper proposal'])) is None})",
    *(f"- {what}: free loop {a}, machine {b}" for what, a, b in comparison[:5]),
]
Markdown("\n".join(lines))

# %% [markdown]
# Two places where the kit does less than the seed describes, said plainly: there is no numeric risk limit (risk
# is handled by category, before anything runs), and there is no compensating action (a compensation would be a
# new, logged run). And one where the seed's formula meets practice: a cost budget checked before each call lets
# the last call pass the limit, which the seed's `cost ≥ B_c` does not mention.

# %% [markdown]
# ## Wrap-up quiz: the seed's five self-check questions
#
# The first five questions are the planner–executor lesson's own self-check, in this course's words; the last two
# need a line of code. `task`, `with_budget`, `live`, `secrets` and `saved_log` are there to use.

# %% jupyter={"source_hidden": true}
from labkit import Choice, CodeLine, Quiz

quiz = Quiz([
    Choice("Why are 'the planner proposed an action' and 'the action is allowed' two different events?",
           ["so that the log is longer and easier to read",
            "because a proposal grants nothing: only the validator's token lets the executor act, and the log must "
            "show which one decided",
            "because the planner and the validator run on different machines"],
           "because a proposal grants nothing: only the validator's token lets the executor act, and the log must "
           "show which one decided",
           "Proposal is a fact about the model; authorization is a decision of the machine under a policy version."),
    Choice("A write timed out. Which state should the run enter?",
           ["FAILED: it did not answer", "UNKNOWN: it may have happened", "SUCCEEDED: it usually works"],
           "UNKNOWN: it may have happened",
           "FAILED would invite a second write of something already written; UNKNOWN is settled by a status query."),
    Choice("Which three invariants keep a wrong state from being recorded as success?",
           ["executed => validated; committed => observed; at most one side effect per logical action",
            "every step is fast; every prompt is short; every model is large",
            "the planner is right; the tools never time out; the log is never read"],
           "executed => validated; committed => observed; at most one side effect per logical action",
           "No unvalidated action, no success without a typed observation, no repeated side effect."),
    Choice("What must hold for a replay to rebuild the run's states?",
           ["the log is immutable (hash chain) and records the schema, tool and policy versions it was made under",
            "the same model weights are loaded", "the run finished with SUCCEEDED"],
           "the log is immutable (hash chain) and records the schema, tool and policy versions it was made under",
           "A replay folds the same reducer over the same events; silent edits or changed versions break that."),
    Choice("What does the machine NOT fix compared with a free loop?",
           ["repeated writes after a lost reply", "success declared on the model's word",
            "a wrong but allowed action, such as a draft that lists the wrong differences"],
           "a wrong but allowed action, such as a draft that lists the wrong differences",
           "It bounds and records semantic mistakes; the verifier and people find them."),
    CodeLine("Write the line that runs `task` with a budget of 3 planner calls and gives its result "
             "(use `live(...)` and `with_budget(...)`, with a new run id, and `.run()`).",
             lambda result: result.outcome == "incomplete" and result.planner_calls == 3,
             hint="live(with_budget(task, max_steps=...), 'some-id') makes a runtime; .run() runs it",
             explain="live(with_budget(task, max_steps=3), 'q6').run() ends incomplete: a budget never ends in "
                     "success."),
    CodeLine("Write a function (a lambda) that takes the text of a saved log and is True only when it holds none "
             "of the records' sensitive values (they are in `secrets`).",
             lambda check: (check(saved_log) is True and check(json.dumps(in_free_loop.seen)) is False
                            and check(secrets[-1]) is False),
             hint="look for each value of `secrets` in the text; the answer is True only if none is found",
             explain="lambda text: not any(s in text for s in secrets) is the test to keep beside redaction."),
], namespace=globals())
quiz

# %% [markdown]
# ## Take-aways
#
# - A run stops on a verified goal, or on a budget; a budget ends it as `incomplete` or `needs_review`, never as a
#   success. A budget checked before spending can be overshot by one call.
# - Risk is handled here by category (allowlist, restricted records, escalation to a person); a numeric risk limit
#   would be one more validator check that denies or escalates.
# - Choose the recovery by what the failed action may have done: retry a read, query a write, ask a person about
#   a denial, and compensate an effect that already happened with a new, logged action. Compensation is not a
#   rollback.
# - The log and the planner's context hold no sensitive values and no hidden reasoning: redaction at the
#   executor, a one-line public rationale, and a test that looks for the raw values.
# - Drawn as tables, the free loop has one way for a tool call to end and one way into success (the model's
#   word); the machine tells the outcomes apart and guards success with a predicate. It still cannot make a wrong
#   but allowed action right.
#
# ## Your turn
#
# Exercise 04a (`exercises/04a_free_loop_vs_machine/`) counts, from their logs, what the free loop and the machine
# each did; `labkit check 04a`. Then add a fifth row to the free loop's table above that would keep a timed-out
# write from being taken as saved, and see how many states that forces you to add.
