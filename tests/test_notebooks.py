"""Notebooks are committed as a clean top-to-bottom run of their py:percent source.

nbval (run by `make test`) compares saved outputs with a fresh run, but only if outputs were saved:
a stripped or half-run notebook would be merely error-checked. These tests make sure that cannot
slip through, and that the .ipynb and its .py source say the same thing: jupytext pairs the two (JupyterLab
shows either as one notebook), and refuses to open a pair whose inputs disagree.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jupytext
import pytest
from jupytext.config import find_jupytext_configuration_file, load_jupytext_config

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))

sys.path.insert(0, str(ROOT / "scripts"))
from build_notebook import read_source  # noqa: E402


def code_cells(path: Path) -> list[dict]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_was_executed_in_order(path):
    counts = [c["execution_count"] for c in code_cells(path)]
    assert None not in counts, f"{path.name} has code cells that were never executed"
    assert counts == list(range(1, len(counts) + 1)), f"{path.name} was not run top to bottom in one go"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_cell_saved_an_error(path):
    for cell in code_cells(path):
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", f"{path.name} saved an error: {output.get('ename')}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_the_notebook_matches_its_source(source):
    built = source.with_suffix(".ipynb")
    assert built.exists(), f"{source.name} was never built: run scripts/build_notebook.py {source.name}"
    expected = [c.source for c in read_source(source).cells]
    actual = ["".join(c["source"]) for c in json.loads(built.read_text(encoding="utf-8"))["cells"]]
    assert actual == expected, f"{built.name} differs from {source.name}: rebuild it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_cells_that_hold_answers_are_collapsed(path):
    """A predict-then-see box or a quiz carries its answers in its source; JupyterLab must show it collapsed."""
    for cell in code_cells(path):
        source = "".join(cell["source"])
        if re.search(r"^(\w+ = )?(predict\w*|Quiz)\(", source, re.M):  # a box or quiz is made here
            hidden = cell.get("metadata", {}).get("jupyter", {}).get("source_hidden")
            assert hidden, f"{path.name}: a cell with answers is not collapsed:\n{source[:200]}"


def test_jupytext_pairs_each_source_with_its_notebook():
    """The pairing is declared once, where jupytext (CLI and JupyterLab) looks for it from notebooks/."""
    config_file = find_jupytext_configuration_file(str(ROOT / "notebooks"))
    assert config_file == str(ROOT / "notebooks" / "jupytext.toml")
    config = load_jupytext_config(str(ROOT / "notebooks"))
    assert config.default_formats(str(SOURCES[0].with_suffix(".ipynb"))) == "ipynb,py:percent"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_the_source_is_in_jupytext_form(source):
    """Saving the notebook in JupyterLab rewrites the .py with jupytext: it must give back the same text,
    so that opening and saving a lesson changes nothing (no header, no moved blank lines)."""
    config = load_jupytext_config(str(ROOT / "notebooks"))
    nb = jupytext.read(source, fmt="py:percent")
    nb.metadata.setdefault("jupytext", {})["notebook_metadata_filter"] = config.notebook_metadata_filter
    text = source.read_text(encoding="utf-8")
    assert jupytext.writes(nb, fmt="py:percent") == text, f"{source.name}: jupytext would rewrite it"


def test_test_plumbing_is_not_in_the_folder_learners_open():
    assert sorted(p.name for p in (ROOT / "notebooks").iterdir() if not p.name.startswith(".")
                  and p.suffix not in {".py", ".ipynb"} and p.name != "__pycache__") == ["README.md", "jupytext.toml"]
    assert not (ROOT / "notebooks" / "conftest.py").exists()
    assert (ROOT / "tests" / "nbval" / "sanitize.cfg").is_file()
