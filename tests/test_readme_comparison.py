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
