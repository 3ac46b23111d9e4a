"""What a learner sees: notebooks run in JupyterLab, in a real (headless) Chromium.

nbval proves what the kernel returns; this proves that JupyterLab shows it. The test starts
``jupyter lab`` from this environment on a free loopback port with a token, opens a copy of
notebook 02 whose outputs and saved widget state are stripped (so everything on the page must come
from this run), runs all cells through the Run menu, and checks that

- the table's Mermaid block is drawn as an SVG naming every state of the table,
- the trace viewer widget (``labkit.course.viewer_widget``) is drawn with its live kernel behind it,
- clicking the step slider's track shows another step (the kernel redraws the step it is sent);

and, for the first prediction of notebooks 04 and 08 opened as committed (beside their ``.py``, as jupytext
pairs them), that the answer in its reveal cell's output is not on the page when the notebook is opened, nor
after *Run All*, and is once a choice was checked in the box (see ``labkit.course.quiz``).

The browser is the system's Chromium (Debian package ``chromium``; ``LABKIT_CHROMIUM`` names another
executable) driven by Playwright; nothing is downloaded. Without either the test is skipped, with
the reason. Screenshots go to the test's ``tmp_path`` and are copied to ``build/browser/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree

import nbformat
import pytest
from conftest import JupyterLab

from labkit.course.quiz import REVEAL_HEADING, REVEAL_TAG
from labkit.runtime import planner_executor_table

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "02_failure_traces.ipynb"
SHOTS = ROOT / "build" / "browser"
WIDGETS_EXTENSION = "@jupyter-widgets/jupyterlab-manager"

PAGE_LOAD_S = 45
RUN_ALL_S = 90
STEP_S = 15

# User settings for this server only: every cell in the DOM (no virtual scrolling), no news or
# update checks popping up over the notebook.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}

pytestmark = pytest.mark.slow



def failure_screenshot(page: Page, path: Path) -> None:
    """What the page showed when a check failed; a page that is gone (its renderer crashed) has no picture,
    and the check's own error is the one reported."""
    try:
        page.screenshot(path=path)
    except Exception as gone:
        print(f"no failure screenshot ({type(gone).__name__}: {gone})", file=sys.stderr)

def chromium_executable() -> str | None:
    """The system Chromium: ``$LABKIT_CHROMIUM`` if set, else ``chromium`` or ``chromium-browser`` on PATH."""
    named = os.environ.get("LABKIT_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def chromium() -> str:
    found = chromium_executable()
    if found is None and os.environ.get("LABKIT_CHROMIUM"):
        pytest.skip(f"LABKIT_CHROMIUM={os.environ['LABKIT_CHROMIUM']} is not a file")
    if found is None:
        pytest.skip("no Chromium: install Debian's package (apt-get install -y chromium; .ci/run does this as root) "
                    "or set LABKIT_CHROMIUM to a Chromium executable")
    return found


@pytest.fixture(scope="module")
def sync_playwright():
    module = pytest.importorskip("playwright.sync_api",
                                 reason="Playwright for Python is missing: pip install -e '.[dev]'")
    return module.sync_playwright


def stripped_copy(source: Path, target: Path) -> int:
    """Copy a notebook without outputs, execution counts or saved widget state; return its code cell count."""
    notebook = nbformat.read(source, as_version=4)
    code_cells = 0
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            code_cells += 1
    notebook.metadata.pop("widgets", None)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return code_cells


@pytest.fixture
def lab(tmp_path: Path, start_jupyter_lab) -> Iterator[tuple[JupyterLab, int]]:
    """JupyterLab serving a scratch folder laid out like the repository (notebooks/ beside data/traces/)."""
    root = tmp_path / "lab"
    code_cells = stripped_copy(ROOT / "notebooks" / NOTEBOOK, root / "notebooks" / NOTEBOOK)
    shutil.copytree(ROOT / "data" / "traces", root / "data" / "traces")  # the notebook reads ../data/traces
    home = tmp_path / "jupyter"  # start_jupyter_lab's home: the settings below are the server's
    for name, values in LAB_SETTINGS.items():
        path = home / "lab-settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           # the kernel spec may name plain `python`: this environment's comes first
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           "IPYTHONDIR": str(home / "ipython")}
    with start_jupyter_lab(root, env=env) as server:
        yield server, code_cells


def page_config(html: str) -> dict:
    """The ``jupyter-config-data`` JSON that JupyterLab embeds in its page."""
    found = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
    assert found, "JupyterLab's page has no jupyter-config-data"
    return json.loads(found.group(1))


# Every code cell shows a number in its prompt: run, and not running ("[*]") or never run ("[ ]"). A collapsed
# input (a cell holding a quiz's answers) shows a placeholder whose own prompt stays empty: it is not a prompt.
ALL_CELLS_RAN = """() => {
    const prompts = [...document.querySelectorAll(
        '.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt:not(.jp-Placeholder-prompt)')];
    return prompts.length > 0 && prompts.every(p => /^\\[\\d+\\]:$/.test(p.textContent.trim()));
}"""


def test_notebook_02_in_jupyterlab(chromium: str, sync_playwright, lab: tuple[JupyterLab, int], tmp_path: Path) -> None:
    server, code_cells = lab
    extensions = [e["name"] for e in page_config(server.get("/lab").decode()).get("federated_extensions", [])]
    assert WIDGETS_EXTENSION in extensions, (
        f"JupyterLab does not load the widgets extension {WIDGETS_EXTENSION} (found {extensions}); "
        "it ships with ipywidgets 8 as jupyterlab_widgets: pip install -e '.[dev]'")
    states = planner_executor_table().states
    with sync_playwright() as playwright:
        # --no-sandbox: as root (CI, containers) Chromium refuses to start with its sandbox
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(PAGE_LOAD_S * 1000)
        try:
            page.goto(f"{server.url}/lab/tree/notebooks/{NOTEBOOK}?token={server.token}&reset")

            notebook = page.locator(".jp-NotebookPanel").first
            kernel_idle = page.locator("#jp-main-statusbar .jp-StatusBar-TextItem", has_text=re.compile(r"\| Idle$"))
            # cells are attached in batches after the page loads; wait for all of them
            page.wait_for_function("n => document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell').length === n",
                                   arg=code_cells)
            assert notebook.locator(".jp-OutputArea-output").count() == 0, "the stripped copy shows outputs"
            # the status bar says "Idle" only once the kernel is connected (cells run before that are dropped)
            kernel_idle.wait_for()

            # Run > Run All Cells, as a learner would
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            page.wait_for_function(ALL_CELLS_RAN, timeout=RUN_ALL_S * 1000)
            kernel_idle.wait_for()
            outputs = notebook.locator(".jp-OutputArea-output")
            shown = "\n".join(outputs.all_inner_texts())
            assert "Traceback" not in shown, f"a cell raised in the browser run:\n{shown[-3000:]}"

            # the table's diagram: Markdown output whose ```mermaid block JupyterLab draws as SVG
            table_cell = notebook.locator(".jp-CodeCell", has_text="Markdown(mermaid_markdown(table").first
            diagram = table_cell.locator(".jp-OutputArea-output .jp-RenderedMermaid").first
            table_svg = drawn_svg(diagram)
            assert current_states(table_svg) == ["UNKNOWN"]  # the cell marks UNKNOWN as current
            labels = " ".join(table_svg.itertext())
            missing = [s for s in states if s not in labels]
            assert not missing, f"the drawn diagram lacks states {missing}"
            diagram.screenshot(path=tmp_path / "notebook02-diagram.png")

            # the trace viewer: slider, Approve/Deny (the run is paused for a person), step output
            widget = notebook.locator(".jp-OutputArea-output .widget-vbox").filter(
                has=page.locator(".widget-slider")).first
            widget.wait_for(timeout=STEP_S * 1000)
            readout = widget.locator(".widget-readout").first
            step_text = widget.locator(".widget-output .jp-RenderedMarkdown").first
            last = int(readout.inner_text())
            header = re.compile(rf"Step {last} of {last}\b")
            assert header.search(step_text.inner_text()), step_text.inner_text()[:300]
            assert "WAITING_HUMAN" in status_line(step_text.inner_text())
            approve = widget.get_by_role("button", name="Approve")
            assert approve.is_visible(), "the paused run's last step offers no Approve button"
            step_diagram = widget.locator(".widget-output .jp-RenderedMermaid").first
            assert current_states(drawn_svg(step_diagram)) == ["WAITING_HUMAN"]
            widget.evaluate("element => element.scrollIntoView({block: 'start'})")
            page.screenshot(path=tmp_path / "notebook02-viewer-last.png")

            # click the left end of the slider's track: the kernel redraws the step it is sent
            track = widget.locator(".widget-slider .noUi-base").first
            box = track.bounding_box()
            assert box is not None
            track.click(position={"x": 2, "y": box["height"] / 2})  # scrolls it into view, checks nothing covers it
            page.wait_for_function("([el, last]) => el.textContent.trim() !== String(last)",
                                   arg=[readout.element_handle(), last], timeout=STEP_S * 1000)
            chosen = int(readout.inner_text())
            assert 0 <= chosen < last
            step_text.filter(has_text=re.compile(rf"Step {chosen} of {last}\b")).wait_for(timeout=STEP_S * 1000)
            assert "WAITING_HUMAN" not in status_line(step_text.inner_text())
            assert not approve.is_visible(), "Approve is offered on a step where the run does not wait"
            status_after = status_line(step_text.inner_text()).split("→")[-1].strip(" `")
            assert current_states(drawn_svg(step_diagram)) == [status_after]
            widget.evaluate("element => element.scrollIntoView({block: 'start'})")
            page.screenshot(path=tmp_path / "notebook02-viewer-stepped.png")
        except Exception:
            failure_screenshot(page, tmp_path / "notebook02-failure.png")
            raise
        finally:
            browser.close()
            SHOTS.mkdir(parents=True, exist_ok=True)
            for shot in tmp_path.glob("notebook02-*.png"):
                shutil.copy2(shot, SHOTS / shot.name)


def status_line(step: str) -> str:
    """The ``status: A → B`` line of a drawn step."""
    found = re.search(r"^status:.*$", step, re.M)
    assert found, f"no status line in the shown step:\n{step[:300]}"
    return found.group(0)


def drawn_svg(mermaid: Locator) -> ElementTree.Element:
    """The SVG that JupyterLab drew for a Mermaid block (a ``data:image/svg+xml`` image), parsed.

    Waits until the image has loaded with a non-zero size, i.e. the browser could draw it.
    """
    image = mermaid.locator("img").first
    image.wait_for(timeout=STEP_S * 1000)
    image.page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle(),
                                 timeout=STEP_S * 1000)
    source = image.get_attribute("src") or ""
    kind, _, data = source.partition(",")
    assert kind.startswith("data:image/svg+xml"), f"the Mermaid block is drawn as {kind[:40]!r}, not as SVG"
    svg = ElementTree.fromstring(urllib.parse.unquote(data))
    assert svg.tag.endswith("svg"), svg.tag
    return svg


def current_states(svg: ElementTree.Element) -> list[str]:
    """Names of the states drawn with the ``current`` class (labkit's marker for where the run stands)."""
    return sorted(re.sub(r"^.*\bstate-(.+)-\d+$", r"\1", g.get("id", ""))
                  for g in svg.iter() if "current" in (g.get("class") or "").split())


# notebook: the data folders it reads (copied beside it as in the repository)
REVEAL_NOTEBOOKS = {"04_stop_recover_redact.ipynb": [], "08_machines_in_layers.ipynb": ["layers"]}


@pytest.fixture
def reveal_lab(tmp_path: Path, start_jupyter_lab) -> Iterator[JupyterLab]:
    """JupyterLab serving the committed notebooks of REVEAL_NOTEBOOKS, each beside its .py and jupytext.toml."""
    root = tmp_path / "lab"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / "jupytext.toml", root / "notebooks")
    for name, folders in REVEAL_NOTEBOOKS.items():
        for suffix in (".ipynb", ".py"):  # the text file last: jupytext refuses a text file older than its pair
            shutil.copy(ROOT / "notebooks" / Path(name).with_suffix(suffix).name, root / "notebooks")
        for folder in folders:
            shutil.copytree(ROOT / "data" / folder, root / "data" / folder, dirs_exist_ok=True)
    home = tmp_path / "jupyter"
    for settings, values in LAB_SETTINGS.items():
        path = home / "lab-settings" / settings
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           "IPYTHONDIR": str(home / "ipython")}
    with start_jupyter_lab(root, env=env) as server:
        yield server


def first_reveal(name: str) -> tuple[int, int, str]:
    """The committed notebook's first prediction: its cell index, its reveal cell's index, and the reveal's first
    line of printed answer (what must not be on the page before a choice is checked)."""
    notebook = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    reveal = next(i for i, c in enumerate(notebook.cells) if REVEAL_TAG in c.metadata.get("tags", []))
    asked = max(i for i, c in enumerate(notebook.cells[:reveal]) if c.cell_type == "code")
    printed = "".join(o.text for o in notebook.cells[reveal].outputs if o.get("name") == "stdout")
    return asked, reveal, next(line for line in printed.splitlines() if line.strip())


def test_a_predictions_answer_shows_only_after_a_checked_choice(chromium: str, sync_playwright,
                                                               reveal_lab: JupyterLab, tmp_path: Path) -> None:
    server = reveal_lab
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(PAGE_LOAD_S * 1000)
        shot = "reveal"
        try:
            for name in REVEAL_NOTEBOOKS:
                shot = f"reveal-{name[:2]}"
                asked, reveal, answer = first_reveal(name)
                page.goto(f"{server.url}/lab/tree/notebooks/{name}?token={server.token}&reset")
                notebook = page.locator(".jp-NotebookPanel").first
                cells = notebook.locator(".jp-Cell")
                count = len(nbformat.read(ROOT / "notebooks" / name, as_version=4).cells)
                page.wait_for_function("n => document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length === n",
                                       arg=count)
                page.locator("#jp-main-statusbar .jp-StatusBar-TextItem", has_text=re.compile(r"\| Idle$")).wait_for()
                answer_cell = cells.nth(reveal)
                bar = answer_cell.locator(".jp-OutputPlaceholder")

                # opened as committed: folded, the bar shows the heading, the answer is nowhere in the cell
                assert bar.is_visible(), f"{name}: the reveal cell is not folded when the notebook is opened"
                assert bar.inner_text().strip() == REVEAL_HEADING
                assert answer not in answer_cell.inner_text()
                page.screenshot(path=tmp_path / f"{shot}-opened.png")

                # Run All: JupyterLab unfolds every cell it runs; the box folds its reveal again
                page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
                page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
                page.wait_for_function(ALL_CELLS_RAN, timeout=RUN_ALL_S * 1000)
                box = cells.nth(asked).locator(".labkit-predict")
                box.wait_for()
                assert "Traceback" not in "\n".join(notebook.locator(".jp-OutputArea-output").all_inner_texts())
                assert bar.is_visible(), f"{name}: after Run All the reveal cell is unfolded before any choice"
                assert answer not in answer_cell.inner_text()
                page.screenshot(path=tmp_path / f"{shot}-ran.png")

                # a checked choice: the box explains, and the reveal cell unfolds with the kernel's answer
                box.locator(".widget-radio-box label").first.click()
                box.get_by_role("button", name="check").click()
                box.get_by_text("The answer is").wait_for(timeout=STEP_S * 1000)
                answer_cell.get_by_text(answer).first.wait_for(timeout=STEP_S * 1000)
                assert not bar.is_visible()
                answer_cell.evaluate("element => element.scrollIntoView({block: 'center'})")
                page.screenshot(path=tmp_path / f"{shot}-checked.png")
        except Exception:
            failure_screenshot(page, tmp_path / f"{shot}-failure.png")
            raise
        finally:
            browser.close()
            SHOTS.mkdir(parents=True, exist_ok=True)
            for picture in tmp_path.glob("reveal-*.png"):
                shutil.copy2(picture, SHOTS / picture.name)
