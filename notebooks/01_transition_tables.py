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
# A transition table lists every allowed move as a row `(source, event -> dest [guard])`. labkit ships the
# ticket's table in `labkit.examples`; here it is, row by row.

# %%
from labkit import IllegalTransition, LabMachine, TableError, TransitionTable, describe, mermaid_markdown
from labkit.examples import TICKET_ROWS, TICKET_STATES, ticket_guards, ticket_invariants, ticket_table

table = ticket_table()
for row in table.rows:
    print(row)

# %% [markdown]
# Two rows share `(IN_PROGRESS, resolve)`. They are told apart by a **guard**: `has_fix_note` and its negation
# `not has_fix_note`. A guard is a named predicate; the machine is given the function behind the name.
#
# Building a `LabMachine` wraps the table in a machine from the `transitions` library. Every step is written to an
# append-only event log. The clock is injected so that this notebook prints the same thing on every run.

# %%
import itertools

ticks = itertools.count()
machine = LabMachine(table, guards=ticket_guards(), invariants=ticket_invariants(), clock=lambda: float(next(ticks)))
machine.fire("triage")
machine.fire("start")
print("now in", machine.status, "- allowed here:", machine.allowed())

# %% [markdown]
# ## 3. Illegal moves are rejected
#
# The jump that the string version let through is refused. The error names the state, the event, and the events
# that are allowed there, and nothing is written to the log.

# %%
events_before = len(machine.events)
try:
    machine.fire("confirm")
except IllegalTransition as err:
    print(err)
print("events in the log before and after:", events_before, len(machine.events))

# %% [markdown]
# A guard decides between rows. Resolving without a note keeps the ticket in progress; with a note it is resolved.

# %%
machine.fire("resolve", fix_note="")
print(machine.status)
machine.fire("resolve", fix_note="replaced the toner")
print(machine.status)

# %% [markdown]
# ## 4. Bugs in the table are found before anything runs
#
# Tables are written by people, so they have bugs. Here is a version with four planted ones: a typo in a
# destination, a row leaving a terminal state, a second `resolve` row without a guard, and a state nobody can
# reach. `TransitionTable.build` refuses it and lists every problem at once, each with its row.

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
    for problem in err.problems:
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
# checks accept it. The invariant does not.

# %%
from labkit import InvariantViolation, Row

shortcut = TransitionTable.build("ticket", TICKET_STATES, [*TICKET_ROWS, Row("TRIAGED", "close", "CLOSED")],
                                 initial="NEW", terminal=["CLOSED", "CANCELLED"])
ticks2 = itertools.count()
risky = LabMachine(shortcut, guards=ticket_guards(), invariants=ticket_invariants(),
                   clock=lambda: float(next(ticks2)))
risky.fire("triage")
try:
    risky.fire("close")
except InvariantViolation as err:
    print(err)

# %% [markdown]
# The violation is not just an exception: it is an event in the log, and the run is halted. Anyone reading the log
# later sees exactly where the rule broke.

# %%
for event in risky.events:
    print(describe(event))

# %% [markdown]
# ## 7. The log is the state
#
# Every state the machine was in can be rebuilt by folding a pure reducer over the log from the empty state.
# The live machine and the replay agree, state for state.

# %%
from labkit import replay

rebuilt = replay(machine.events)
print(rebuilt.state)
print("same as live:", rebuilt.state == machine.state, "| same at every step:", list(rebuilt.states) == machine.states)

# %% [markdown]
# ## Your turn
#
# Exercise 01 (`exercises/01_transition_table/`) gives a written specification of a code-change job: discover,
# plan, edit, test, fix. Write its table and run `labkit check 01` until it passes.
