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
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ("01_transition_tables", "03_invariants_and_replay")
SERVER_START_S = 90

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")]


def make_lab_options() -> list[str]:
    """The options `make lab` gives `jupyter lab`, without the folder it serves."""
    recipe = subprocess.run(["make", "--no-print-directory", "-n", "lab"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, check=True).stdout
    words = shlex.split(next(line for line in recipe.splitlines() if "jupyter lab" in line))
    assert words[-1] == "notebooks", words
    return words[words.index("lab") + 1:-1]


class Server:
    def __init__(self, url: str, token: str, log: Path) -> None:
        self.url, self.token, self.log = url, token, log

    def call(self, path: str, method: str = "GET", body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}/api/contents/{path}", data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            return json.loads(reply.read())


@pytest.fixture
def lab(tmp_path: Path, unused_port: int) -> Iterator[tuple[Server, Path]]:
    root = tmp_path / "kit"
    (root / "notebooks").mkdir(parents=True)
    for name in ("README.md", "jupytext.toml"):
        shutil.copy(ROOT / "notebooks" / name, root / "notebooks" / name)
    for lesson in LESSONS:
        for suffix in (".py", ".ipynb"):
            shutil.copy(ROOT / "notebooks" / f"{lesson}{suffix}", root / "notebooks" / f"{lesson}{suffix}")
    home = tmp_path / "jupyter"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
    token = secrets.token_hex(16)
    command = [sys.executable, "-m", "jupyterlab", *make_lab_options(), "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={unused_port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root / 'notebooks'}", "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = tmp_path / "jupyter-lab.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    server = Server(f"http://127.0.0.1:{unused_port}", token, log)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
            try:
                server.call("")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab not ready after {SERVER_START_S} s:\n"
                                f"{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.25)
        yield server, root / "notebooks"
    finally:
        for stop in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, stop)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue


def sources(model: dict) -> list[str]:
    return [cell["source"] for cell in model["content"]["cells"]]


def outputs(model: dict) -> int:
    return sum(len(cell.get("outputs", [])) for cell in model["content"]["cells"])


def test_make_lab_lists_each_lesson_once_and_pairs_source_and_notebook(lab: tuple[Server, Path]) -> None:
    server, folder = lab
    listed = sorted(item["name"] for item in server.call("")["content"])
    assert listed == sorted(["README.md", *(f"{lesson}.ipynb" for lesson in LESSONS)])

    lesson = LESSONS[0]
    committed = json.loads((folder / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    from_notebook = server.call(f"{lesson}.ipynb?content=1")
    assert sources(from_notebook) == ["".join(c["source"]) for c in committed["cells"]]
    assert outputs(from_notebook) == sum(len(c.get("outputs", [])) for c in committed["cells"]) > 0

    from_source = server.call(f"{lesson}.py?type=notebook&content=1")
    assert from_source["type"] == "notebook"
    assert sources(from_source) == sources(from_notebook)
    assert outputs(from_source) == outputs(from_notebook), "the source opened without its executed copy's outputs"

    # Saving the notebook (as JupyterLab does) writes the paired source too, in its committed form.
    model = from_notebook
    first_markdown = next(c for c in model["content"]["cells"] if c["cell_type"] == "markdown")
    first_markdown["source"] += "\n\nA note the learner added."
    server.call(f"{lesson}.ipynb", method="PUT", body={"type": "notebook", "format": "json",
                                                       "content": model["content"]})
    text = (folder / f"{lesson}.py").read_text(encoding="utf-8")
    original = (ROOT / "notebooks" / f"{lesson}.py").read_text(encoding="utf-8")
    assert "# A note the learner added." in text
    assert text.startswith("# %% [markdown]"), "saving added a header to the source"
    assert text.replace("#\n# A note the learner added.\n", "", 1) == original
