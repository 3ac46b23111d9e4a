"""Every prediction's answer stays folded in the notebook a learner opens, and in the one a learner runs.

The answer of a ``predict`` box is the stored output of the code cell after it (its *reveal*). These tests read
the committed notebooks, so a lesson that forgets to tag a reveal fails here, without a browser: each reveal is
tagged in the lesson's ``.py`` (the declaration), folded in the ``.ipynb`` the way JupyterLab reads it, and the
line JupyterLab's fold bar shows is the kit's heading, not the answer. ``tests/test_browser.py`` shows the same in
Chromium; the kernel-side heading is checked here in a real kernel.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from labkit.course.quiz import OUTPUT_KEY, REVEAL_HEADING, REVEAL_TAG

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

sys.path.insert(0, str(ROOT / "scripts"))
from build_notebook import prediction, read_source, reveal_problems  # noqa: E402

# Notebooks whose rebuild with tagged reveals is still owed (they are being rewritten elsewhere). Strict: once one
# is rebuilt with its reveals, its entry must go.
OWED: dict[str, str] = {}

# JupyterLab 4.6's CodeCell.getOutputPlaceholderText: the first output's first non-empty line, from the first of
# these kinds it holds (a stream's text is the data of its own kind)
PLACEHOLDER_KINDS = ["text/html", "image/svg+xml", "application/pdf", "text/markdown", "text/plain",
                     "application/vnd.jupyter.stderr", "application/vnd.jupyter.stdout", "text"]


def fold_bar_text(cell: nbformat.NotebookNode) -> str | None:
    """The line JupyterLab shows on a folded cell's bar, or None when it shows none."""
    if not cell.outputs:
        return None
    first = cell.outputs[0]
    data = ({f"application/vnd.jupyter.{first.name}": first.text} if first.output_type == "stream"
            else first.get("data", {}))
    kind = next((k for k in PLACEHOLDER_KINDS if isinstance(data.get(k), str | list)), None)
    if kind is None:
        return None
    text = "".join(data[kind])
    return next((line for line in text.split("\n") if line), None)


def param(path: Path):
    if path.name in OWED:
        return pytest.param(path, id=path.name, marks=pytest.mark.xfail(strict=True, reason=OWED[path.name]))
    return pytest.param(path, id=path.name)


def test_the_owed_list_names_notebooks_that_exist():
    assert set(OWED) <= {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", [param(p) for p in NOTEBOOKS])
def test_every_prediction_is_followed_by_a_folded_reveal(path: Path):
    notebook = nbformat.read(path, as_version=4)
    assert reveal_problems(notebook) == [], f"{path.name}: run scripts/build_notebook.py on its .py"
    sources = read_source(path.with_suffix(".py")).cells
    predictions = [i for i, cell in enumerate(notebook.cells) if prediction(cell)]
    reveals = [i for i, cell in enumerate(notebook.cells)
               if cell.cell_type == "code" and REVEAL_TAG in cell.metadata.get("tags", [])]
    assert len(reveals) == len(predictions)
    for index in reveals:
        cell = notebook.cells[index]
        assert REVEAL_TAG in sources[index].metadata.get("tags", []), (
            f"{path.name} cell {index}: the tag must be declared in the lesson's .py, which jupytext reads first")
        assert cell.metadata.get("collapsed") is True and cell.metadata["jupyter"]["outputs_hidden"] is True, (
            f"{path.name} cell {index}: a reveal's outputs are not folded")
        assert fold_bar_text(cell) == REVEAL_HEADING, (
            f"{path.name} cell {index}: JupyterLab's fold bar would show {fold_bar_text(cell)!r}")
        assert len(cell.outputs) > 1, f"{path.name} cell {index}: the reveal stores no answer for nbval to compare"


def test_the_fold_bar_line_is_read_as_jupyterlab_reads_it():
    stream = nbformat.v4.new_output("stream", name="stdout", text="\nfirst\nsecond\n")
    html = nbformat.v4.new_output("display_data", data={"text/plain": "plain", "text/html": "<b>bold</b>"})
    cell = nbformat.v4.new_code_cell("x", outputs=[stream, html])
    assert fold_bar_text(cell) == "first"
    cell.outputs = [html, stream]
    assert fold_bar_text(cell) == "<b>bold</b>"  # the HTML's source text, as JupyterLab shows it
    cell.outputs = []
    assert fold_bar_text(cell) is None


def executed(cell: nbformat.NotebookNode, reveal: bool | None = None) -> nbformat.NotebookNode:
    """A cell with the output of a shown prediction; ``reveal`` None: recorded before the box said whether."""
    metadata = {} if reveal is None else {OUTPUT_KEY: {"reveal": reveal}}
    cell.outputs = [nbformat.v4.new_output("execute_result", metadata=metadata,
                                           data={"text/plain": "Predict: q\n  a\n  b\n(choose, then press check)"})]
    return cell


def test_the_build_refuses_a_prediction_without_its_reveal_and_a_stray_reveal():
    shown = executed(nbformat.v4.new_code_cell("predict(...)"))
    plain = nbformat.v4.new_code_cell("print(1)")
    reveal = nbformat.v4.new_code_cell("print(2)", metadata={"tags": [REVEAL_TAG]})
    text = nbformat.v4.new_markdown_cell("Run it and compare:")
    notebook = nbformat.v4.new_notebook(cells=[shown, text, reveal])
    assert reveal_problems(notebook) == []  # a Markdown cell between them is fine
    notebook.cells = [shown, plain]
    assert reveal_problems(notebook) == [f"cell 0 shows a prediction, but the next code cell is not tagged "
                                         f"{REVEAL_TAG!r}: its output would show the answer unfolded"]
    notebook.cells = [shown]  # the last cell
    assert len(reveal_problems(notebook)) == 1
    notebook.cells = [plain, reveal]
    assert reveal_problems(notebook) == [f"cell 1 is tagged {REVEAL_TAG!r}, but the code cell before it shows no "
                                         "prediction that has a reveal (predict(..., reveal=False) has none)"]
    alone = executed(nbformat.v4.new_code_cell("predict(..., reveal=False)"), reveal=False)
    notebook.cells = [alone, plain]
    assert reveal_problems(notebook) == []  # its answer is only in its box
    notebook.cells = [alone, reveal]
    assert len(reveal_problems(notebook)) == 1


def test_the_kernel_writes_the_heading_first_in_the_cell_after_a_prediction(tmp_path: Path):
    """In a real kernel: the heading is the reveal's first output; the same prediction run again, and a cell
    that follows no prediction, get none."""
    ask = 'from labkit import predict\npredict("q?", ["a", "b"], "a", "because")'
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(ask),
        nbformat.v4.new_code_cell(ask),  # the same code: the prediction run again
        nbformat.v4.new_code_cell('print("the answer")'),
        nbformat.v4.new_code_cell('print("no prediction before me")'),
    ])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    NotebookClient(notebook, timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    outputs = [[(o.output_type, o.get("name"), o.get("text")) for o in cell.outputs] for cell in notebook.cells]
    assert all(o[0] == "execute_result" for o in outputs[0] + outputs[1]), outputs[:2]
    assert outputs[2] == [("stream", "stderr", REVEAL_HEADING + "\n"), ("stream", "stdout", "the answer\n")]
    assert outputs[3] == [("stream", "stdout", "no prediction before me\n")]
