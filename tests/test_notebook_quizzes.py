"""Each notebook's wrap-up quiz can be passed, and only by right answers.

The notebook's source is run as a plain script (its quiz is built against the notebook's own
names), then its quiz is checked with an answer key and with plausible wrong answers. A quiz whose
checker rejects the right line, or accepts a wrong one, fails here.
"""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

KEYS = {
    "01_transition_tables.py": (
        ["nothing", "an invariant", "guards g and not g on the two rows", "table.allowed_events('RESOLVED')",
         "Row('WAITING_CUSTOMER', 'resolve', 'RESOLVED', 'has_fix_note')",
         "lambda s, p: bool(str(p.get('fix_note', '')).strip())", "replay(risky.events).state"],
        ["an illegal_transition event", "a guard", "putting them in a fixed order", "['confirm', 'reopen', 'close']",
         "Row('WAITING_CUSTOMER', 'resolve', 'RESOLVED')", "lambda s, p: bool(p.get('fix_note'))",
         "replay(machine.events).state"],
    ),
    "02_failure_traces.py": (
        ["only what is owed (and the facts it records)", "EXECUTING", "needs_review",
         "the write is known not to have happened, and the idempotency key makes a second save harmless",
         "len(traces['read_timeout'])", "traces['permission_denied'].states[-1].status", "table.terminal"],
        ["the status", "UNKNOWN", "failed", "the retry budget allows it", "len(traces['read_timeout']) - 1",
         "'SUCCEEDED'", "{'SUCCEEDED'}"],
    ),
    "03_invariants_and_replay.py": (
        ["the edited event's seq: its hash no longer matches", "replay with the invariants",
         "as an unknown outcome, like a timeout",
         "lambda evs: all(b.prev_hash == a.hash for a, b in zip(evs, evs[1:]))",
         "replay(forged, reduce_run, empty_run_state(), runtime_invariants()).violations",
         "outcome_view(replay(events, reduce_run, empty_run_state()).state)"],
        ["the next event's seq: its link is broken", "load_events", "as a success",
         "lambda evs: all(b.seq == a.seq + 1 for a, b in zip(evs, evs[1:]))", "[]",
         "outcome_view(empty_run_state())"],
    ),
    "05_dialog_machines.py": (
        ["refuses the answer, re-asks once, and keeps the step if the second answer breaks the contract too",
         "the shape, and that the signal is one of the step's own",
         "it carries one step's instructions, the variables, short summaries of past steps and the last turns",
         "its first answer kept the contract almost every time; nothing about following the script",
         "the asks part: while the step still needs a value, the reply must ask for it",
         "test_report['summaries'][('qwen2.5-coder-1.5b', 'machine_plus')]['adhered']['count']",
         "[s.name for s in analyst.step('goal').signals]", "analyst.step('deadline').signal('next').needs"],
        ["moves on: the model decided", "nothing: a grammar is only a hint", "the model forgets old turns by itself",
         "it followed the script in 97% of the conversations", "a higher number of users",
         "test_report['summaries'][('qwen2.5-coder-1.5b', 'prompt_only_checked')]['adhered']['count']", "['next']",
         "analyst.step('deadline').signal('stay').needs"],
    ),
    "06_small_model_comparison.py": (
        ["runs of one task share its difficulty, so they are not independent trials",
         "arm 4 − arm 5 on the content families",
         "on those tasks code did the work: any choice in the menu succeeded", "its test score",
         "wilson_interval(7, 10)",
         "next(r['tasks_solved'] for r in summaries['gemma3-270m']['rows'] if r['split'] == 'test' and "
         "r['arm'] == 'machine-rule')", "test.headline"],
        ["tasks take longer than runs", "arm 4 − arm 1", "the random choice reads the task", "its dev score",
         "wilson_interval(7, 100)",
         "next(r['tasks_solved'] for r in summaries['gemma3-270m']['rows'] if r['split'] == 'dev' and "
         "r['arm'] == 'machine-rule')", "test.tasks[:10]"],
    ),
    "07_local_inference.py": (
        ["the same prompt then gets the same answer, so a run can be replayed and two paths compared",
         "the weights (usually quantized), the tokenizer and the model's metadata, in one file",
         "it can change them, so labkit uses it only for greedy calls",
         "so the cache changes only the time: two batches can round differently from one",
         "gpu['gen_tokens_per_s'] / cpu16['gen_tokens_per_s']", "1000 / lazy['gen_tokens_per_s']",
         "estimate_memory(arch, 8192, n_gpu_layers=-1).gpu_kv / 2**20"],
        ["it makes the answer correct", "a llama.cpp build compiled for one CPU", "nothing: it is always identical",
         "to save memory", "gpu['gen_grammar_tokens_per_s'] / cpu16['gen_grammar_tokens_per_s']",
         "lazy['gen_tokens_per_s'] / 1000", "estimate_memory(arch, 2048, n_gpu_layers=-1).gpu_kv / 2**20"],
    ),
    "08_machines_in_layers.py": (
        ["a route_refused event is recorded, the run pauses, and what it wrote is kept",
         "the graph (what runs next)", "it is computed from the persisted layers, so it cannot disagree with them",
         "it finishes and is recorded; nothing new begins", "flow.row_to('POLISHING', 'REVIEWING')",
         "calls_after_abort(aborted_run(abort_checkpoints=False).events)"],
        ["a KeyError ends the process", "the flow", "because it never changes", "it is cut off mid-call",
         "flow.row_to('POLISHING', 'WRITING')", "calls_after_abort(aborted_run().events)"],
    ),
    "09_editing_code.py": (
        ["in PLAN_CHANGE and EDIT_FILE",
         "the tests are the verifier: a planner allowed to edit them can make them pass without fixing anything",
         "the run goes to HUMAN_APPROVAL, where a person approves or rejects it",
         "the copy's files are again exactly those of the commit made before the first edit",
         "on these tasks X changed no outcome; other tasks, or other models, may still need it",
         "the function now gives the docstring's examples right, not the problem as its own tests specify it",
         "[r for r in table.rows if r.dest == 'DONE']",
         "check_edit(edit_case('tests/test_words.py', 'a', 'b'))"],
        ["in every working state", "pytest locks its files while it runs", "it is applied, then tested",
         "the tests pass again",
         "X is useless and can be deleted", "the hidden grader is wrong",
         "[r for r in table.rows if r.source == 'RUN_TESTS']",
         "check_edit(edit_case('words.py', 'text.split(\" \")', 'text.split()'))"],
    ),
    "04_stop_recover_redact.py": (
        ["because a proposal grants nothing: only the validator's token lets the executor act, and the log must "
         "show which one decided", "UNKNOWN: it may have happened",
         "executed => validated; committed => observed; at most one side effect per logical action",
         "the log is immutable (hash chain) and records the schema, tool and policy versions it was made under",
         "a wrong but allowed action, such as a draft that lists the wrong differences",
         "live(with_budget(task, max_steps=3), 'q6').run()",
         "lambda text: not any(s in text for s in secrets)"],
        ["so that the log is longer and easier to read", "FAILED: it did not answer",
         "every step is fast; every prompt is short; every model is large", "the same model weights are loaded",
         "repeated writes after a lost reply", "live(task, 'q6-wrong').run()",
         "lambda text: 'NI-' not in text"],
    ),
}


# Notebook 07 loads the model in its last section, so running it as a script is a slow test.
LOADS_THE_MODEL = {"07_local_inference.py"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in LOADS_THE_MODEL else n
                                  for n in sorted(KEYS)])
def test_the_quiz_accepts_the_key_and_refuses_wrong_answers(name, monkeypatch):
    monkeypatch.chdir(NOTEBOOKS)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    with contextlib.redirect_stdout(io.StringIO()):
        quiz = runpy.run_path(str(NOTEBOOKS / name), run_name="notebook")["quiz"]
    right, wrong = KEYS[name]
    assert 5 <= len(quiz.questions) <= 8
    assert [f.right for f in quiz.check(right)] == [True] * len(right), [str(f) for f in quiz.check(right)]
    assert [f.right for f in quiz.check(wrong)] == [False] * len(wrong), [str(f) for f in quiz.check(wrong)]
