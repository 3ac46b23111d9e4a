"""README's comparison table is generated from the committed recordings, not typed: a stale table fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("update_readme_comparison",
                                               ROOT / "scripts" / "update_readme_comparison.py")
script = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(script)  # type: ignore[union-attr]


def test_the_readme_table_is_the_recordings_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script.BEGIN in readme and script.END in readme, "README.md lost its comparison-table markers"
    shown = readme.split(script.BEGIN, 1)[1].split(script.END, 1)[0].strip()
    assert set(script.recorded_summaries()) == set(script.MODELS)
    assert shown == script.table_block(), "stale: run python scripts/update_readme_comparison.py"


def test_the_readme_code_table_is_the_recordings_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script.CODE_BEGIN in readme and script.CODE_END in readme, "README.md lost its code-comparison markers"
    shown = readme.split(script.CODE_BEGIN, 1)[1].split(script.CODE_END, 1)[0].strip()
    assert [f.name for f in script.code_folders()] == list(script.MODELS)
    assert shown == script.code_table_block(), "stale: run python scripts/update_readme_comparison.py"


def test_the_readme_plus_table_is_the_recordings_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script.PLUS_BEGIN in readme and script.PLUS_END in readme, "README.md lost its code-plus markers"
    shown = readme.split(script.PLUS_BEGIN, 1)[1].split(script.PLUS_END, 1)[0].strip()
    assert script.plus_folders(), "no recording under data/repoedit/compare-plus"
    assert shown == script.plus_table_block(), "stale: run python scripts/update_readme_comparison.py"


def test_the_readme_humaneval_block_is_the_recordings_block() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script.BENCH_BEGIN in readme and script.BENCH_END in readme, "README.md lost its humaneval markers"
    shown = readme.split(script.BENCH_BEGIN, 1)[1].split(script.BENCH_END, 1)[0].strip()
    assert script.bench_folders(), "no recording under data/repoedit/humaneval-*"
    assert shown == script.bench_table_block(), "stale: run python scripts/update_readme_comparison.py"


def test_the_models_table_has_a_column_per_model_and_split_and_a_dash_where_an_arm_did_not_run() -> None:
    from labkit.experiment.v2.report import models_table

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
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script.DIALOG_BEGIN in readme and script.DIALOG_END in readme, "README.md lost its dialog-table markers"
    shown = readme.split(script.DIALOG_BEGIN, 1)[1].split(script.DIALOG_END, 1)[0].strip()
    assert any(label.startswith("test users") for label in script.dialog_folders()), "no dialog test recording"
    assert shown == script.dialog_table_block(), "stale: run python scripts/update_readme_comparison.py"
