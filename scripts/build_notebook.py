"""Execute a lesson's py:percent source into its paired, executed ``.ipynb``.

A lesson is written as ``notebooks/NN_name.py`` and paired with ``notebooks/NN_name.ipynb`` by jupytext (the
pairing is declared in ``pyproject.toml`` under ``[tool.jupytext]``): jupytext reads the source exactly as
JupyterLab's jupytext does when a learner opens either file. This script adds only what jupytext does not do:

- run the notebook top to bottom in a fresh kernel, from the notebook's own folder (lessons read ``../data``),
  so the committed outputs are exactly what nbval compares against;
- give the cells stable ids and leave out jupytext's own bookkeeping (the text file's format, blank lines
  between cells), so a rebuild changes the ``.ipynb`` only where an output changed;
- fold the outputs of every cell tagged ``reveal`` (``# %% tags=["reveal"]``: the cell that shows what a
  prediction asked about, see ``labkit.course.quiz``), and refuse a notebook where a prediction is not followed by
  such a cell, or such a cell follows no prediction. The outputs stay stored, so nbval still compares them.

Folding is JupyterLab's ``collapsed: true`` cell metadata (with nbformat's ``jupyter.outputs_hidden``):
``collapsed`` is the key JupyterLab 4 reads when it opens a notebook, and the one jupytext keeps from the
``.ipynb`` when it pairs it with the ``.py`` (the text file's own metadata wins for every key it stores, and
``notebooks/jupytext.toml`` keeps ``outputs_hidden`` out of it).

    .venv/bin/python scripts/build_notebook.py notebooks/01_transition_tables.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

from labkit.course.quiz import FALLBACK, OUTPUT_KEY, REVEAL_TAG

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
TEXT_ONLY_CELL_METADATA = ("lines_to_next_cell",)  # jupytext keeps the .py's blank lines with it


def read_source(source: Path) -> nbformat.NotebookNode:
    """The notebook a py:percent source stands for, without outputs (what jupytext pairs with the .ipynb)."""
    nb = jupytext.read(source, fmt="py:percent")
    nb.metadata.pop("jupytext", None)
    for cell in nb.cells:
        for key in TEXT_ONLY_CELL_METADATA:
            cell.metadata.pop(key, None)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    return nb


def is_reveal(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and REVEAL_TAG in cell.metadata.get("tags", [])


def fold_reveals(nb: nbformat.NotebookNode) -> None:
    """Mark every ``reveal`` cell's outputs folded, as JupyterLab reads it (see the module's docstring)."""
    for cell in nb.cells:
        if is_reveal(cell):
            cell.metadata["collapsed"] = True
            cell.metadata.setdefault("jupyter", {})["outputs_hidden"] = True


def prediction(cell: nbformat.NotebookNode) -> bool | None:
    """Whether an executed code cell displayed a ``labkit.predict`` box (its plain text ends with the fallback),
    and if so whether its answer is in a reveal cell after it: None (no prediction), True or False.

    The box says so in its output's metadata; a box recorded before it did has a reveal."""
    for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
        if (output.get("output_type") in {"display_data", "execute_result"}
                and f"({FALLBACK})" in "".join(output.get("data", {}).get("text/plain", ""))):
            return bool(output.get("metadata", {}).get(OUTPUT_KEY, {}).get("reveal", True))
    return None


def reveal_problems(nb: nbformat.NotebookNode) -> list[str]:
    """What is wrong with an executed notebook's predictions and reveals; empty when each prediction's next
    code cell is tagged ``reveal`` (unless the prediction says ``reveal=False``) and each ``reveal`` cell comes
    right after a prediction that has one."""
    code = [(index, cell) for index, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    problems = []
    for (index, cell), (_, after) in zip(code, [*code[1:], (None, None)], strict=True):
        if prediction(cell) and (after is None or not is_reveal(after)):
            problems.append(f"cell {index} shows a prediction, but the next code cell is not tagged "
                            f"{REVEAL_TAG!r}: its output would show the answer unfolded")
    for (_, before), (index, cell) in zip([(None, None), *code[:-1]], code, strict=True):
        if is_reveal(cell) and (before is None or not prediction(before)):
            problems.append(f"cell {index} is tagged {REVEAL_TAG!r}, but the code cell before it shows no prediction "
                            "that has a reveal (predict(..., reveal=False) has none)")
    return problems


def build(source: Path) -> Path:
    """Execute ``source`` in a fresh kernel and write its paired ``.ipynb``; return the path written.

    Raises:
        SystemExit: a prediction without its ``reveal`` cell, or the other way round (nothing is written).
    """
    nb = read_source(source)
    NotebookClient(nb, timeout=1200, kernel_name=KERNELSPEC["name"],
                   resources={"metadata": {"path": str(source.parent)}}).execute()
    problems = reveal_problems(nb)
    if problems:
        sys.exit(f"{source}: " + "; ".join(problems) + f'. Tag the code cell that reveals an answer with '
                 f'`# %% tags=["{REVEAL_TAG}"]`, right after the cell that shows the prediction, or pass reveal=False '
                 'to a prediction whose answer is only in its box.')
    fold_reveals(nb)
    for index, cell in enumerate(nb.cells):  # stable ids keep diffs small between rebuilds
        cell["id"] = f"cell-{index:03d}"
    target = source.with_suffix(".ipynb")
    nbformat.write(nb, target)
    return target


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: build_notebook.py notebooks/NN_name.py [...]")
    for arg in sys.argv[1:]:
        print(f"built {build(Path(arg))}")
