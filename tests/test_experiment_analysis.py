"""Reading a recorded experiment back: prompt sizes from cassettes, typical failures, per-task counts."""

from __future__ import annotations

from pathlib import Path

from labkit.experiment.analysis import per_task_successes, prompt_size_table, prompt_sizes, typical_failure
from labkit.experiment.arms import ARMS, run_one
from labkit.experiment.tasks import load_tasks
from labkit.llm import RecordingBackend, ScriptedBackend
from labkit.runtime.tools import DraftStore


def test_prompt_sizes_read_steps_back_from_the_call_seeds(tmp_path: Path) -> None:
    task = {t.id: t for t in load_tasks()}["diff2"]
    cassette = tmp_path / "cassettes" / "prompt-only" / "diff2.jsonl"
    backend = RecordingBackend(ScriptedBackend(lambda r: "not json"), cassette)
    store = DraftStore(tmp_path / "d.sqlite", "a")
    record = run_one(ARMS["prompt-only"], task, 3, backend=backend, drafts=store)
    store.close()
    rows = prompt_sizes(tmp_path)
    assert [(r["seed"], r["step"]) for r in rows] == [(3, s) for s in range(record.llm_calls)]
    assert [r["prompt_tokens"] for r in rows] == sorted(r["prompt_tokens"] for r in rows)  # the prompt grows
    table = prompt_size_table(rows, max_step=2)
    assert table[0][:2] == ["prompt-only", record.llm_calls] and len(table[0]) == 6


def test_typical_failure_and_per_task_counts(tmp_path: Path) -> None:
    tasks = {t.id: t for t in load_tasks()}
    records = []
    for i, seed in enumerate(range(4)):
        store = DraftStore(tmp_path / "d.sqlite", f"s{i}")
        records.append(run_one(ARMS["machine-random"], tasks["diff3"], seed, backend=None, drafts=store))
        store.close()
    bad = typical_failure(records, "machine-random")
    failed = [r for r in records if not r.passed]
    assert (bad is None) == (not failed)
    if bad is not None:
        assert bad in failed
    assert per_task_successes(records, ["machine-random"]) == [["diff3", f"{len(records) - len(failed)}/4"]]


def test_free_loop_breakdown_reads_the_models_own_lines(tmp_path: Path) -> None:
    import json

    from labkit.experiment.analysis import free_loop_breakdown

    task = {t.id: t for t in load_tasks()}["restricted3"]
    lines = [json.dumps({"action": "read_record", "args": {"id": i}}) for i in ("R38", "R17", "R19", "R21")]
    lines += [json.dumps({"action": "save_draft", "args": {"key": "wrong", "text": "x"}}), "oops"]
    store = DraftStore(tmp_path / "d.sqlite", "a")
    record = run_one(ARMS["prompt-only"], task, 0, backend=ScriptedBackend(lines), drafts=store)
    store.close()
    counts = free_loop_breakdown([record], [task], "prompt-only")
    assert counts == {"runs": 1, "only parsable actions": 0, "read every needed record": 1,
                      "asked to read a forbidden record": 1, "saved a draft": 1, "saved under the task's key": 0,
                      "saved more than once": 0, "said done": 0}
    assert record.llm_calls == task.budget.max_steps == 6


def test_menu_decisions_compare_the_model_with_the_text_order_rule(tmp_path: Path) -> None:
    import json

    from labkit.experiment.analysis import decision_table, menu_decisions

    task = {t.id: t for t in load_tasks()}["distractor3"]  # names R22, R25, R27, then the left-out R23
    answers = iter(['"R25"', '"R22"', '"R23"', '"R27"'])
    cassette = tmp_path / "cassettes" / "machine-model" / "distractor3.jsonl"
    backend = RecordingBackend(ScriptedBackend(lambda r: next(answers)), cassette)
    store = DraftStore(tmp_path / "d.sqlite", "a")
    run_one(ARMS["machine-model"], task, 1, backend=backend, drafts=store)
    store.close()
    rows = menu_decisions(tmp_path)
    assert [(r["model"], r["text_order_rule"]) for r in rows] == [("R25", "R22"), ("R22", "R22"), ("R23", "R27"),
                                                                  ("R27", "R27")]
    assert all(r["seed"] == 1 for r in rows) and [r["step"] for r in rows] == [0, 1, 2, 3]
    assert decision_table(rows, [task]) == [["distractor3", 4, 2, 1, 0]]
    assert json.loads(json.dumps(rows))  # plain data
