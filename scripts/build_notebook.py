"""Build an executed notebook from its py:percent source.

Notebooks are written as ``notebooks/NN_name.py`` (cells separated by ``# %%`` and
``# %% [markdown]``), which diff and review like code. This script turns one into
``notebooks/NN_name.ipynb`` and executes it top to bottom in a fresh kernel, so the committed
outputs are exactly what nbval will compare against.

    .venv/bin/python scripts/build_notebook.py notebooks/01_transition_tables.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def parse_percent(text: str) -> nbformat.NotebookNode:
    cells: list[nbformat.NotebookNode] = []
    kind, lines, hidden = None, [], False

    def flush() -> None:
        source = "\n".join(lines).strip("\n")
        if kind == "markdown":
            source = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in
                               source.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(source))
        elif kind == "code" and source.strip():
            cell = nbformat.v4.new_code_cell(source)
            if hidden:  # the cell holds answers: JupyterLab shows it collapsed until the learner opens it
                cell.metadata["jupyter"] = {"source_hidden": True}
            cells.append(cell)

    for line in text.splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
            hidden = 'jupyter={"source_hidden": true}' in line  # jupytext's spelling of a collapsed input
        elif kind is not None:
            lines.append(line)
    flush()
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def build(source: Path) -> Path:
    nb = parse_percent(source.read_text(encoding="utf-8"))
    NotebookClient(nb, timeout=1200, kernel_name="python3",
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
