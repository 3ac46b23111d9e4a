# %% [markdown]
# # 01 — From a status string to a checked transition table
#
# Agents built around a language model usually keep their progress in a variable like `status = "editing"` and
# let any line of code change it. That works until the model, a retry or a timeout sets a status nobody planned
# for. This notebook replaces the free string with an explicit **transition table** and shows, step by step,
# what that buys:
#
# 1. illegal moves are rejected, with a message saying what *is* allowed;
# 2. mistakes in the table itself are found before anything runs;
# 3. the table draws itself as a diagram;
# 4. an **invariant** catches a bad state that the table alone allowed, and the catch is recorded in the log;
# 5. the state can be rebuilt from the log alone.
#
# The example is a support ticket, so that the machinery is the only new thing. Later notebooks put a language
# model inside the same machinery.
#
# **After this notebook you can**
# - write a process as a [transition table](../docs/glossary.md) of rows, with a [guard](../docs/glossary.md)
#   where one event must go two ways;
# - read what a rejected move tells you, and say what is (and is not) written to the
#   [event log](../docs/glossary.md) when a move is refused;
# - find the mistakes in a table before it runs, from the build checks and the list of unhandled pairs;
# - tell a table rule from an [invariant](../docs/glossary.md), and find in the log the event that broke one;
# - rebuild a machine's state from its log by [replay](../docs/glossary.md), and say what the log's first event
#   records so that a replay can be trusted.
#
# **Prerequisites:** Python (functions, dictionaries, exceptions); no language model and no earlier notebook.
# **Time:** about 45 minutes, the quiz included. Every term in bold or linked is defined in the
# [glossary](../docs/glossary.md). At the **Predict** boxes, choose an answer and press *check* before you run on;
# the answer is hidden until you do (the box's code cell is collapsed, because it holds the answer).

# %% [markdown]
# ## 1. A naked status string
#
# Here is the usual starting point: a dictionary and functions that set `status`. Nothing stops a typo or a jump.

# %%
ticket = {"id": 17, "status": "NEW"}


def set_status(ticket, status):
    ticket["status"] = status  # no check: any string is accepted


set_status(ticket, "TRIAGED")
set_status(ticket, "CLOSED")  # skipped IN_PROGRESS and RESOLVED: was it ever fixed?
set_status(ticket, "RESOLVD")  # a typo: the ticket is now in a state that does not exist
ticket

# %% [markdown]
# Both mistakes went through silently. Nothing recorded how the ticket got there either.
#
# ## 2. The same life as a table
#
# A **transition table** lists every allowed move as a row `(source, event -> dest [guard])`: in state `source`,
# the **event** (a named thing that happened) moves the machine to `dest`. A pair the table has no row for is
# not allowed. labkit ships the ticket's table in `labkit.core.examples`; here it is, row by row.

# %%
from labkit import IllegalTransition, LabMachine, TableError, TransitionTable, describe, mermaid_markdown
from labkit.core.examples import TICKET_ROWS, TICKET_STATES, ticket_guards, ticket_invariants, ticket_table

table = ticket_table()
for row in table.rows:
    print(row)

# %% [markdown]
# Two rows share `(IN_PROGRESS, resolve)`. They are told apart by a **guard**: `has_fix_note` and its negation
# `not has_fix_note`. A guard is a named predicate over the state and the event's payload; the machine is given
# the function behind the name.
#
# Building a `LabMachine` wraps the table in a machine from the `transitions` library. Every step is written to an
# append-only **event log**. The log's first event, `run_started`, records the table and the versions the run was
# made with (here the table's digest and labkit's version): a log is only evidence if one can tell which rules
# it was written under. The clock is injected so that this notebook prints the same thing on every run.

# %%
import hashlib
import itertools
import json

import labkit


def versions_of(rules):
    """What a run records about the rules it follows: the table's digest and labkit's version."""
    digest = hashlib.sha256(json.dumps(rules.to_dict(), sort_keys=True).encode()).hexdigest()
    return {"table": digest[:12], "labkit": labkit.__version__}


ticks = itertools.count()
machine = LabMachine(table, guards=ticket_guards(), invariants=ticket_invariants(), clock=lambda: float(next(ticks)),
                     versions=versions_of(table))
machine.fire("triage")
machine.fire("start")
print("now in", machine.status, "- allowed here:", machine.allowed())

# %% [markdown]
# ## 3. Illegal moves are rejected
#
# The ticket is `IN_PROGRESS` and someone fires `confirm`, the jump the string version let through.

# %% jupyter={"source_hidden": true}
from labkit import predict

predict("The ticket is IN_PROGRESS. What happens when `confirm` is fired?",
        ["it moves to CLOSED", "it is refused, and the refusal is written to the log",
         "it is refused, and nothing is written to the log", "it moves to RESOLVED"],
        "it is refused, and nothing is written to the log",
        "No row handles (IN_PROGRESS, confirm), so the machine raises IllegalTransition naming the state, the event "
        "and the events allowed there. The log holds what happened, and nothing happened.")

# %% [markdown]
# Run it and compare:

# %% tags=["reveal"]
events_before = len(machine.events)
try:
    machine.fire("confirm")
except IllegalTransition as err:
    print(err)
print("events in the log before and after:", events_before, len(machine.events))

# %% [markdown]
# A guard decides between rows.

# %% jupyter={"source_hidden": true}
predict("`resolve` is fired twice: first with an empty fix note, then with 'replaced the toner'. "
        "Where is the ticket after each?",
        ["IN_PROGRESS, then RESOLVED", "RESOLVED, then an error", "an error, then RESOLVED",
         "RESOLVED, then RESOLVED"],
        "IN_PROGRESS, then RESOLVED",
        "Both rows for (IN_PROGRESS, resolve) are tried; only one guard can hold. With an empty note "
        "`not has_fix_note` holds and the row loops back to IN_PROGRESS; with a note `has_fix_note` holds.")

# %% tags=["reveal"]
machine.fire("resolve", fix_note="")
print(machine.status)
machine.fire("resolve", fix_note="replaced the toner")
print(machine.status)

# %% [markdown]
# ## 4. Bugs in the table are found before anything runs
#
# Tables are written by people, so they have bugs. Here is a version with four planted ones: a typo in a
# destination, a row leaving a **terminal state** (one that ends the run, so nothing may leave it), a second
# `resolve` row without a guard, and a state `ARCHIVED` that no row mentions. `TransitionTable.build` refuses it
# and lists every problem at once, each with its row. It is built here without printing anything yet.

# %%
planted = [
    *TICKET_ROWS,
    ("RESOLVED", "reopen_later", "RESOLVD"),  # typo
    ("CLOSED", "reopen", "IN_PROGRESS"),  # leaves a terminal state
    ("IN_PROGRESS", "resolve", "CLOSED"),  # can fire together with the guarded resolve rows
]
try:
    TransitionTable.build("ticket", [*TICKET_STATES, "ARCHIVED"], planted, initial="NEW",
                          terminal=["CLOSED", "CANCELLED"])
except TableError as err:
    findings = err.problems

# %% jupyter={"source_hidden": true}
predict("Four mistakes were planted. How many findings does the build report?", ["3", "4", "5", "6"],
        str(len(findings)),
        "One planted mistake breaks two rules. ARCHIVED cannot be reached from NEW (nothing leads there), and it "
        "has no outgoing rows although it is not terminal (a run that got there could never end). The checks "
        "are separate rules, so one state can fail both: count findings, not mistakes.")

# %% tags=["reveal"]
for problem in findings:
    print("-", problem)

# %% [markdown]
# The checks also answer a quieter question: which situations has nobody thought about? `unhandled()` lists
# every (state, event) pair of a non-terminal state that no row handles. Each line is a decision still to make:
# handle it, or declare it impossible with `impossible=[...]` when the table is built.

# %%
unhandled = table.unhandled()
print(len(unhandled), "unhandled pairs, for example:")
for state, event in unhandled[:6]:
    print(f"  {state} + {event}")

# %% [markdown]
# ## 5. The diagram
#
# The table turns into a Mermaid state diagram, which JupyterLab renders inside Markdown. The current state is
# highlighted. (`labkit diagram ticket` prints the same text in a terminal.)

# %%
from IPython.display import Markdown

Markdown(mermaid_markdown(table, current=machine.status))

# %% [markdown]
# ## 6. An invariant catches what the table allowed
#
# A table only says which single steps are legal. Some rules are about the whole history, for instance "a ticket
# is closed only straight after it was resolved". That is an **invariant**: a named check run after every step.
#
# Suppose someone adds a shortcut row `TRIAGED + close -> CLOSED`. Structurally it is a fine row, so the build
# checks accept it.

# %% jupyter={"source_hidden": true}
predict("With the shortcut row, a new ticket is triaged (event #1) and then closed (event #2). "
        "What happens at the close?",
        ["the table refuses it", "it moves to CLOSED and nothing else happens",
         "it moves to CLOSED, the invariant records a violation and the run halts"],
        "it moves to CLOSED, the invariant records a violation and the run halts",
        "The table allows the row, so the transition happens and is logged as event #2. Then every invariant is "
        "checked; 'closed only straight after resolved' fails, so an invariant_violated event is appended "
        "(event #3, pointing back at #2) and the machine stops taking events.")

# %% tags=["reveal"]
from labkit import InvariantViolation, Row

shortcut = TransitionTable.build("ticket", TICKET_STATES, [*TICKET_ROWS, Row("TRIAGED", "close", "CLOSED")],
                                 initial="NEW", terminal=["CLOSED", "CANCELLED"])
ticks2 = itertools.count()
risky = LabMachine(shortcut, guards=ticket_guards(), invariants=ticket_invariants(),
                   clock=lambda: float(next(ticks2)), versions=versions_of(shortcut))
risky.fire("triage")
try:
    risky.fire("close")
except InvariantViolation as err:
    print(err)

# %% [markdown]
# The step that broke the rule is event #2, the close. The violation is not just an exception: it is recorded as
# the next event, #3, with `after_seq=2` pointing back at the step that broke the rule, and the run is halted.
# Anyone reading the log later sees exactly where the rule broke. (The table digest in `run_started` differs from
# the first machine's: this is another table.)

# %%
for event in risky.events:
    print(describe(event))

# %% [markdown]
# ## 7. The log is the state
#
# Every state the machine was in can be rebuilt from the log alone. A **reducer** is a pure function
# `reduce(state, event) -> state`; **replay** folds it over the events from the empty state. The live machine and
# the replay agree, state for state. What the replay cannot know by itself is which table and code wrote the log:
# that is what `run_started` records in `versions`, so a reader can replay a log against the same table, or
# see at once that the table has changed since.

# %%
from labkit import replay

print(describe(machine.events[0]))
rebuilt = replay(machine.events)
print(rebuilt.state)
print("same as live:", rebuilt.state == machine.state, "| same at every step:", list(rebuilt.states) == machine.states)

# %% [markdown]
# ## Wrap-up quiz
#
# Answer in the boxes and press *check answers*; wrong answers get a hint, not the answer. The code questions
# take one line of Python, evaluated in this notebook (so `table`, `machine`, `risky`, `Row` and `replay` are
# there to use).

# %% jupyter={"source_hidden": true}
from labkit import Choice, CodeLine, Quiz

quiz = Quiz([
    Choice("A machine is in a state whose rows do not handle the event it is sent. What is added to the log?",
           ["nothing", "an illegal_transition event", "a transitioned event back to the same state"], "nothing",
           "A refused move did not happen; the caller gets IllegalTransition and the log is unchanged."),
    Choice("Which part caught 'closed straight from TRIAGED' once the shortcut row existed?",
           ["the table's build checks", "a guard", "an invariant"], "an invariant",
           "The row was structurally fine; only a check over the history, run after every step, could see it."),
    Choice("Two rows leave the same state on the same event. What makes that table acceptable?",
           ["nothing: it is always an error", "guards g and not g on the two rows", "putting them in a fixed order"],
           "guards g and not g on the two rows",
           "With g and not g exactly one row can fire, so the machine stays deterministic."),
    CodeLine("Write the line that lists the events allowed in RESOLVED (use `table`).",
             lambda v: sorted(v) == ["confirm", "reopen"],
             hint="a TransitionTable answers this for any state; look at the methods used in section 2",
             explain="table.allowed_events('RESOLVED') reads it from the rows, so it can never disagree with them."),
    CodeLine("Write a `Row` that lets a WAITING_CUSTOMER ticket be resolved directly, only with a fix note.",
             lambda r: isinstance(r, Row) and (r.source, r.event, r.dest, r.guard)
             == ("WAITING_CUSTOMER", "resolve", "RESOLVED", "has_fix_note"),
             hint="Row(source, event, dest, guard); the guard is named as in the ticket's table",
             explain="The same guard name can serve several rows; the machine is given its function once."),
    CodeLine("Write a guard (a lambda of state and payload) that accepts a fix note only if it has more than "
             "blank space in it.",
             lambda g: (g(None, {"fix_note": "new toner"}) and not g(None, {"fix_note": "   "})
                        and not g(None, {"fix_note": ""}) and not g(None, {})),
             hint="a missing note and a note of spaces must both be refused; strings have .strip()",
             explain="Guards read the payload (and the state); a missing key is a case to handle, not a crash."),
    CodeLine("Rebuild the state of the halted `risky` machine from its log alone, in one line.",
             lambda s: s == risky.state,
             hint="the function of section 7 takes a list of events",
             explain="replay(risky.events).state: the violation is an event too, so the replay knows the run broke."),
], namespace=globals())
quiz

# %% [markdown]
# ## Take-aways
#
# - A transition table makes every allowed move a row; anything else is refused, with the allowed events named,
#   and a refused move leaves the log untouched.
# - Guards split one (state, event) pair into rows that cannot both fire; the machine stays deterministic.
# - Build checks find broken tables before they run, and count findings, not mistakes (one state can fail two
#   rules); `unhandled()` lists the decisions nobody has made yet.
# - An invariant is a rule about the history, checked after every step; its violation is an event that points
#   back at the step that broke it, and it halts the run.
# - The log is the state: replaying it gives back every state, and `run_started` records the table and versions
#   a replay must use.
#
# ## Your turn
#
# Exercise 01a (`exercises/01a_transition_table/`) gives a written specification of a code-change job: discover,
# plan, edit, test, fix. Write its table, and let the machine count its own retries: a reducer folds each event
# into a small job state, and the guard `retries_left` decides from that state, never from the event's payload
# (the checker sends payloads that claim `retries_left=99`). The checker compares your rows with the
# specification's as a whole set, so a missing row and an extra one (a second way into `DONE`, say) are both
# named. Run `labkit check 01a` until it passes.
