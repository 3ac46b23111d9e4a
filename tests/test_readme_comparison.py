"""The comparison tables are generated from the committed recordings, not typed: a stale table fails here.

Each table lives in the file `scripts/update_readme_comparison.py` declares for its markers (``TABLES``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("update_readme_comparison",
                                               ROOT / "scripts" / "update_readme_comparison.py")
script = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(script)  # type: ignore[union-attr]
STALE = "stale: run python scripts/update_readme_comparison.py"


def shown(begin: str, end: str) -> str:
    block = script.shown(begin, end)
    assert block is not None, f"{script.target(begin).relative_to(ROOT)} lost its {begin} … {end} markers"
    return block


def test_every_table_is_declared_once_with_a_file_of_the_repository() -> None:
    begins = [begin for begin, _, _, _ in script.TABLES]
    assert len(begins) == len(set(begins)) == 10
    for begin, end, name, _ in script.TABLES:
        assert (ROOT / name).is_file(), f"{begin} is declared in {name}, which does not exist"
        text = (ROOT / name).read_text(encoding="utf-8")
        assert text.count(begin) == text.count(end) == 1, f"{name} must hold {begin} … {end} once"


def test_the_readme_table_is_the_recordings_table() -> None:
    block = shown(script.BEGIN, script.END)
    assert set(script.recorded_summaries()) == set(script.MODELS)
    assert block == script.table_block(), STALE


def test_the_readme_code_table_is_the_recordings_table() -> None:
    block = shown(script.CODE_BEGIN, script.CODE_END)
    assert [f.name for f in script.code_folders()] == list(script.MODELS)
    assert block == script.code_table_block(), STALE


def test_the_readme_plus_table_is_the_recordings_table() -> None:
    block = shown(script.PLUS_BEGIN, script.PLUS_END)
    assert script.plus_folders(), "no recording under data/repoedit/compare-plus"
    assert block == script.plus_table_block(), STALE


def test_the_readme_humaneval_block_is_the_recordings_block() -> None:
    block = shown(script.BENCH_BEGIN, script.BENCH_END)
    assert script.bench_folders(), "no recording under data/repoedit/humaneval-*"
    assert block == script.bench_table_block(), STALE


def test_the_code_rounds_block_is_every_code_recording_arm_by_arm() -> None:
    block = shown(script.CODE_ROUNDS_BEGIN, script.CODE_ROUNDS_END)
    assert block == script.code_rounds_block(), STALE
    assert "| data/repoedit/compare/qwen2.5-coder-1.5b | dc0322a | test | `machine_model` | `machine_bare` |" in block
    assert "`machine_plus_no_definition_edit` | `machine_without_definition_edit`" in block


def test_the_models_table_has_a_column_per_model_and_split_and_a_dash_where_an_arm_did_not_run() -> None:
    from labkit.reading.report import models_table

    def row(split: str, arm: str, k: int, n: int) -> dict:
        return {"split": split, "arm": arm, "label": arm.upper(), "tasks_solved": k, "tasks": n, "ci95": [0.1, 0.9]}

    table = models_table({"a": {"rows": [row("dev", "x", 1, 2), row("test", "x", 3, 4), row("test", "y", 0, 4)],
                                "headline": "prompt-only 1/10 → machine 2/10"},
                          "b": {"rows": [row("test", "x", 4, 4)], "headline": None}})
    lines = table.splitlines()
    assert lines[0] == "| arm | a, dev | a, test | b, test |"
    assert lines[2] == "| X | 1/2 (0.10–0.90) | 3/4 (0.10–0.90) | 4/4 (0.10–0.90) |"
    assert lines[3] == "| Y | — | 0/4 (0.10–0.90) | — |"
    assert lines[-1] == "- headline (test, 10 tasks), a: prompt-only 1/10 → machine 2/10"


def test_the_readme_dialog_table_is_the_recordings_table() -> None:
    block = shown(script.DIALOG_BEGIN, script.DIALOG_END)
    assert any(label.startswith("test users") for label in script.dialog_folders()), "no dialog test recording"
    assert block == script.dialog_table_block(), STALE


def test_the_dialog_ablation_block_is_the_recordings_table() -> None:
    block = shown(script.ABLATION_BEGIN, script.ABLATION_END)
    from labkit.dialog.arms import ABLATIONS

    assert "| `step_example` |" in block and f"Of {len(ABLATIONS)} features and rules" in block
    assert block == script.dialog_ablation_block(), STALE


def test_the_front_pages_dialog_line_is_computed_from_the_test_recordings() -> None:
    block = shown(script.HEADLINE_BEGIN, script.HEADLINE_END)
    assert block == script.dialog_headline_block(), STALE
    assert "qwen2.5-coder-1.5b: machine_plus adhered in " in block and "paired exact sign test p = " in block


def test_a_headline_of_a_recording_without_the_arms_says_which_are_missing(tmp_path) -> None:
    import pytest

    from labkit.core.errors import LabkitError
    from labkit.dialog.rescore import headline
    from labkit.dialog.simulate import load_scenarios
    from labkit.dialog.users import load_user_scripts

    data = ROOT / "data" / "dialog"
    with pytest.raises(LabkitError, match=r"no conversations of \['machine_plus', 'prompt_only_checked'\]"):
        headline(data / "runs" / "qwen2.5-coder-1.5b", load_scenarios(data), load_user_scripts(data / "users"))


def test_the_front_pages_code_lines_are_the_recordings() -> None:
    block = shown(script.CODE_HEADLINE_BEGIN, script.CODE_HEADLINE_END)
    assert block == script.code_headline_block().strip(), STALE  # the file's block is read without its indent
    assert block.count("- ") == 4 and "(free loop)" in block
    assert "humaneval:fix" in block and "pypi:seeded:test" in block


def test_the_equal_compute_line_counts_what_each_arm_fixed_and_spent_on_the_tasks_both_ran() -> None:
    import json

    from labkit.repoedit.compare_report import equal_compute_text

    fix = ROOT / "data" / "repoedit" / "humaneval-fix" / "qwen2.5-coder-1.5b"
    folders = script.with_later_arms(fix)
    rows = [json.loads(line) for f in folders for line in (f / "runs.jsonl").read_text().splitlines() if line]
    machine = {r["task"]: r for r in rows if r["arm"] == "machine_plus"}  # the name it was recorded under
    retried = {r["task"]: r for r in rows if r["arm"] == "prompt_whole_best_of_3"}
    assert machine and retried.keys() == machine.keys()
    text = equal_compute_text(folders)
    assert text is not None
    n = len(machine)
    assert f"{sum(r['fixed'] for r in retried.values())}/{n} against the machine's " \
           f"{sum(r['fixed'] for r in machine.values())}/{n}" in text
    assert f"({sum(r['llm_calls'] for r in retried.values())} calls, " \
           f"{sum(r['test_runs'] for r in retried.values())} test runs)" in text
    assert equal_compute_text([ROOT / "data" / "repoedit" / "humaneval-implement" / "qwen2.5-coder-1.5b"]) is None
