"""What `make lab` serves: each lesson listed once, its source and its executed notebook paired by jupytext.

The test starts the JupyterLab server this environment has, with the options `make lab` passes (read from
`make -n lab`), on a free loopback port, over a scratch copy of two lessons and ``notebooks/jupytext.toml``
(where the pairing is declared), and talks to it through Jupyter's contents API, the one
the file browser and the notebook editor use:

- the listing shows each lesson once, as its notebook, and none of the test plumbing;
- the notebook opened from the ``.ipynb`` has the source's cells and the saved outputs;
- the ``.py`` source opens as the same notebook, outputs included;
- saving the notebook writes the ``.py`` too, in the form the source is committed in.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import JupyterLab

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ("01_transition_tables", "03_invariants_and_replay")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")]


def make_lab_options() -> list[str]:
    """The options `make lab` gives `jupyter lab`, without the folder it serves."""
    recipe = subprocess.run(["make", "--no-print-directory", "-n", "lab"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, check=True).stdout
    words = shlex.split(next(line for line in recipe.splitlines() if "jupyter lab" in line))
    assert words[-1] == "notebooks", words
    return words[words.index("lab") + 1:-1]


@pytest.fixture
def lab(tmp_path: Path, start_jupyter_lab) -> Iterator[tuple[JupyterLab, Path]]:
    root = tmp_path / "kit"
    (root / "notebooks").mkdir(parents=True)
    for name in ("README.md", "jupytext.toml"):
        shutil.copy(ROOT / "notebooks" / name, root / "notebooks" / name)
    for lesson in LESSONS:
        for suffix in (".py", ".ipynb"):
            shutil.copy(ROOT / "notebooks" / f"{lesson}{suffix}", root / "notebooks" / f"{lesson}{suffix}")
    with start_jupyter_lab(root / "notebooks", options=make_lab_options(), cwd=root) as server:
        yield server, root / "notebooks"


def sources(model: dict) -> list[str]:
    return [cell["source"] for cell in model["content"]["cells"]]


def outputs(model: dict) -> int:
    return sum(len(cell.get("outputs", [])) for cell in model["content"]["cells"])


def test_make_lab_lists_each_lesson_once_and_pairs_source_and_notebook(lab: tuple[JupyterLab, Path]) -> None:
    server, folder = lab
    listed = sorted(item["name"] for item in server.contents("")["content"])
    assert listed == sorted(["README.md", *(f"{lesson}.ipynb" for lesson in LESSONS)])

    lesson = LESSONS[0]
    committed = json.loads((folder / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    from_notebook = server.contents(f"{lesson}.ipynb?content=1")
    assert sources(from_notebook) == ["".join(c["source"]) for c in committed["cells"]]
    assert outputs(from_notebook) == sum(len(c.get("outputs", [])) for c in committed["cells"]) > 0

    from_source = server.contents(f"{lesson}.py?type=notebook&content=1")
    assert from_source["type"] == "notebook"
    assert sources(from_source) == sources(from_notebook)
    assert outputs(from_source) == outputs(from_notebook), "the source opened without its executed copy's outputs"

    # Saving the notebook (as JupyterLab does) writes the paired source too, in its committed form.
    model = from_notebook
    first_markdown = next(c for c in model["content"]["cells"] if c["cell_type"] == "markdown")
    first_markdown["source"] += "\n\nA note the learner added."
    server.contents(f"{lesson}.ipynb", method="PUT", body={"type": "notebook", "format": "json",
                                                       "content": model["content"]})
    text = (folder / f"{lesson}.py").read_text(encoding="utf-8")
    original = (ROOT / "notebooks" / f"{lesson}.py").read_text(encoding="utf-8")
    assert "# A note the learner added." in text
    assert text.startswith("# %% [markdown]"), "saving added a header to the source"
    assert text.replace("#\n# A note the learner added.\n", "", 1) == original
