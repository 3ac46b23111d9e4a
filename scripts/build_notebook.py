"""Execute a lesson's py:percent source into its paired, executed ``.ipynb``.

A lesson is written as ``notebooks/NN_name.py`` and paired with ``notebooks/NN_name.ipynb`` by jupytext (the
pairing is declared in ``pyproject.toml`` under ``[tool.jupytext]``): jupytext reads the source exactly as
JupyterLab's jupytext does when a learner opens either file. This script adds only what jupytext does not do:

- run the notebook top to bottom in a fresh kernel, from the notebook's own folder (lessons read ``../data``),
  so the committed outputs are exactly what nbval compares against;
- give the cells stable ids and leave out jupytext's own bookkeeping (the text file's format, blank lines
  between cells), so a rebuild changes the ``.ipynb`` only where an output changed.

    .venv/bin/python scripts/build_notebook.py notebooks/01_transition_tables.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

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


def build(source: Path) -> Path:
    """Execute ``source`` in a fresh kernel and write its paired ``.ipynb``; return the path written."""
    nb = read_source(source)
    NotebookClient(nb, timeout=1200, kernel_name=KERNELSPEC["name"],
                   resources={"metadata": {"path": str(source.parent)}}).execute()
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
