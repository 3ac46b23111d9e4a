# %% [markdown]
# # 08 — Editing code under a state machine
#
# **After this notebook you can**
#
# 1. name the states of a code-editing machine and say which work is the code's and which the model's;
# 2. read a run's trace: the index, the plan, each edit with its diff, each pytest run, the final state;
# 3. explain why an edit to a test file is refused, and which other guards stand between a proposal and the tests;
# 4. show that a failed run leaves the project exactly as it was (a rollback checked by file hashes);
# 5. replay a recorded run without the model, the project or pytest.
#
# **Prerequisites:** notebook 01 (transition tables), notebook 03 (the log, replay, invariants).
# **Time:** about 30 minutes. The runs below use real git copies and real pytest subprocesses (a second or
# two each); the planner is the known fix or a short script, so no model is loaded.
#
# The task is the one exercise 01 only drew as a table: a small model is asked to change a code base. Asked in
# one big prompt, a small model forgets the requirement, edits the wrong file, or declares victory. Here the
# machine owns the order of the work, the permissions, the retries and the way back; the model proposes one
# small, checked thing at a time. (The measured comparison of the model with and without the machine on these
# tasks is not recorded yet; this notebook shows the machine.)

# %%
import json
from pathlib import Path

from labkit import load_events
from labkit.catalog import lookup
from labkit.diagram import to_mermaid
from labkit.reducer import replay
from labkit.repoedit.events import EditApplied, ProposalRefused, RolledBack, TestsRan
from labkit.repoedit.index import index_project
from labkit.repoedit.machine import Limits, RepoEditRun, repoedit_table
from labkit.repoedit.planners import OraclePlanner, ScriptedPlanner
from labkit.repoedit.tasks import load_tasks, project_dir, split_ids
from labkit.repoedit.trace import render_trace
from labkit.repoedit.workspace import tree_hashes

DATA = Path("..") / "data"
TASKS = load_tasks(DATA / "repos" / "tasks.yaml")


def fixed_clock() -> float:
    """Every event at time 0, so the traces below are the same on every machine."""
    return 0.0


# %% [markdown]
# ## 1. The machine, as a table
#
# Six working states and two ends. Code does DISCOVER_PROJECT (it lists files, definitions and test files, and
# runs the tests once to see what fails), RUN_TESTS (real `pytest` in a subprocess, killed at a time limit) and
# ROLLBACK_OR_FIX (`git reset` to where the run began). The planner — a model, or here the known fix — is asked
# only in PLAN_CHANGE (which files, and why) and in EDIT_FILE (one file at a time). HUMAN_APPROVAL holds an edit
# that is larger than the limit.

# %%
table = repoedit_table()
print(to_mermaid(table))

# %% [markdown]
# The guards in brackets are budgets read from the run's state (`plan_retries_left`, `edit_retries_left`) and
# the edit queue (`files_left`). Because they are guards of the table, `labkit replay` checks them again on a
# recorded log: a run that retried beyond its budget would not replay.

# %% [markdown]
# ## 2. The projects and their tasks
#
# `data/repos/` holds small, real Python projects with pytest tests; `tasks.yaml` says what each task asks, which
# tests show it, and the known fix. Tasks are data: a teacher adds a folder and an entry.

# %%
for task in TASKS.values():
    print(f"{task.id:27} {task.split:5} {task.kind:13} {task.requirement[:60]}")
print(f"\n{len(split_ids(TASKS, 'dev'))} dev tasks (prompts are designed on these), "
      f"{len(split_ids(TASKS, 'test'))} test tasks (held out)")

# %% [markdown]
# What the planner is shown of a project is the index — names, not code:

# %%
greeter = TASKS["greeter-rename"]
print(greeter.requirement)
print(index_project(project_dir(greeter)).summary())

# %% jupyter={"source_hidden": true}
from labkit import predict

predict("The task renames greet.hello to greeting. The plan names greet.py only. Where does the run end, "
        "with a planner that makes that one edit correctly?",
        ["DONE: the test for the new name passes", "FAILED, with the tree rolled back",
         "DONE, but cli.py is broken", "it waits in HUMAN_APPROVAL"],
        "FAILED, with the tree rolled back",
        "cli.py still imports hello, so pytest cannot even import the tests. The failure points at cli.py, which "
        "is not in the plan, so no targeted fix may touch it: the run rolls back. DONE needs every test green, "
        "so a broken caller can never end as DONE.")

# %%
only_greet = ScriptedPlanner(
    [json.dumps({"steps": [{"file": "greet.py", "why": "rename the function"}]})],
    [json.dumps({"status": "ok", "edits": [{"search": "def hello(", "replace": "def greeting("}]})])
half = RepoEditRun(project_dir(greeter), greeter.requirement, only_greet, clock=fixed_clock)
print(half.run().status, "-", half.state.reason)
print(render_trace(half.events[-5:]))

# %% [markdown]
# ## 3. A whole run, step by step
#
# The same task with the known fix planned over both files. Every line below is an event of the run's
# hash-chained log; the diffs are the real changes in the temporary copy.

# %%
run = RepoEditRun(project_dir(greeter), greeter.requirement, OraclePlanner(greeter), clock=fixed_clock,
                  task_id=greeter.id)
state = run.run()
print(render_trace(run.events))

# %% [markdown]
# Two test runs: the baseline (one test fails, as the task says) and the check after the edits (all green).
# The planner's word plays no part in reaching DONE: only the second test run does.

# %% [markdown]
# ## 4. The guard that refuses an edit to a test file
#
# A model that may edit the tests can make them pass without fixing anything — delete the assertion, and the
# suite is green. So the tests are the verifier, and nothing the planner proposes may touch them. Here a
# scripted planner first plans to change the test, then (refused) the code:

# %%
words = TASKS["wordcount-whitespace"]
cheat = ScriptedPlanner(
    [json.dumps({"steps": [{"file": "tests/test_words.py", "why": "the test expects too much"}]}),
     json.dumps({"steps": [{"file": "words.py", "why": "split on any whitespace"}]})],
    [json.dumps({"status": "ok", "edits": [{"search": 'text.split(" ")', "replace": "text.split()"}]})])
guarded = RepoEditRun(project_dir(words), words.requirement, cheat, clock=fixed_clock)
guarded.run()
for event in guarded.events:
    if isinstance(event, ProposalRefused):
        print(f"{event.state}: refused [{event.code}] {event.detail}\n  hint to the planner: {event.hint}")
print("ended:", guarded.state.status)

# %% [markdown]
# The other guards, each a typed refusal with its own code: the edit must apply (its search text occurs exactly
# once), touch only planned files, change something, compile (no syntax error reaches the tests), stay under
# the size limit (else HUMAN_APPROVAL), and stay inside the project (`../`, absolute paths and symlinks out are
# refused before anything is read or written). The refused proposal goes back to the planner with the hint, up
# to the retry budget.

# %% [markdown]
# ## 5. A broken edit, and the way back
#
# This planner's edit compiles but is wrong (it counts one word too many). The tests fail; the failure points
# at `words.py`, but this run allows no fix rounds (`fix_budget=0`), so RUN_TESTS routes to ROLLBACK_OR_FIX.

# %%
wrong = ScriptedPlanner(
    [json.dumps({"steps": [{"file": "words.py", "why": "split on any whitespace"}]})],
    [json.dumps({"status": "ok", "edits": [{"search": 'len(text.split(" "))', "replace": "len(text.split()) + 1"}]})])
shipped = tree_hashes(project_dir(words))
broken = RepoEditRun(project_dir(words), words.requirement, wrong, limits=Limits(fix_budget=0), clock=fixed_clock,
                     keep=True)
broken.run()
print(render_trace(broken.events[-6:]))
after = tree_hashes(broken.workspace.root)
after.pop(".gitignore")  # the copy's own file, which makes git ignore caches
print("\nevery file of the copy is byte-identical to the shipped project:", after == shipped)
broken.workspace.keep = False
broken.workspace.close()

# %% [markdown]
# The rollback is `git reset --hard` plus `git clean` to the commit made before the first edit, and the
# `RolledBack` event records the tree digest before and after: the invariant `failed_leaves_tree_as_it_was`
# checks after every event that a FAILED run has no edit left standing.

# %%
rolled = next(e for e in broken.events if isinstance(e, RolledBack))
print("before:", rolled.digest_before[:16], " after:", rolled.digest_after[:16], " baseline:", rolled.baseline[:16])
print("test runs:", [(e.phase, e.outcome) for e in broken.events if isinstance(e, TestsRan)])

# %% [markdown]
# With one fix round allowed instead, the machine sends the failure output back to EDIT_FILE for the blamed file
# (a *targeted fix*). Exercise 09 asks you to write exactly this routing: DONE, a targeted fix, or a rollback.

# %% [markdown]
# ## 6. Replaying a recorded run
#
# `data/repoedit/oracle/` holds one recorded run per task (the known fix through the machine). Replaying a log
# needs none of the parts that made it: the reducer rebuilds the state, the table checks every move and its
# guard, the invariants are checked after every event, and the hash chain shows any edit to the file.

# %%
entry = lookup("repoedit")
summary = json.loads((DATA / "repoedit" / "oracle" / "summary.json").read_text())
for path in sorted((DATA / "repoedit" / "oracle").glob("*.jsonl")):
    events = load_events(path)
    result = replay(events, entry.reduce, entry.empty(), entry.invariants(), entry.table(), entry.guards())
    edits = sum(isinstance(e, EditApplied) for e in events)
    print(f"{path.stem:27} {result.state.status:5} {len(events):3} events, {edits} edit(s), "
          f"{result.state.test_runs} test runs, unrecorded violations: {len(result.violations)}")
print(f"\n{summary['done']}/{len(summary['runs'])} DONE, recorded at commit {summary['versions']['git_commit'][:10]}")

# %% [markdown]
# ## Take-aways
#
# - The machine, not the model, decides the order of the work, what counts as done (every test green), and
#   when to give up; the model proposes one plan and one file's edit at a time, with a small context.
# - Every proposal passes a parser and domain guards before anything is written; each refusal is a typed
#   event with a code and a hint, and test files are never the planner's to change.
# - A failed run costs nothing but time: the temporary copy is rolled back and checked by file hashes, and the
#   shipped project is never written.
# - `labkit repoedit run TASK --planner model` puts a local model in the planner's seat; exercise 09 writes
#   the routing after RUN_TESTS.
