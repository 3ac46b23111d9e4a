"""The Makefile's nbval options work from tests/nbval/: stderr is left out of the comparison, rates are masked.

A scratch notebook whose saved stderr and tokens/s rate differ from what a fresh run prints passes with the
Makefile's ``NBVAL`` options, and fails without the stderr plugin, so the plugin is really loaded.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def makefile_nbval() -> list[str]:
    found = re.search(r"^NBVAL\s*:=\s*(.+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert found, "the Makefile defines no NBVAL"
    return shlex.split(found.group(1))


def scratch_notebook(path: Path) -> Path:
    cell = nbformat.v4.new_code_cell('import sys\nprint("noise", file=sys.stderr)\nprint("41.7 tokens/s")')
    cell.execution_count = 1
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text="other noise, saved earlier\n"),
                    nbformat.v4.new_output("stream", name="stdout", text="93.5 tokens/s\n")]
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def nbval(notebook: Path, options: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(notebook), *options],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_makefile_nbval_options_mask_rates_and_ignore_stderr(tmp_path: Path) -> None:
    notebook = scratch_notebook(tmp_path / "scratch.ipynb")
    options = makefile_nbval()
    assert "tests/nbval/sanitize.cfg" in options and "tests.nbval.ignore_stderr" in options
    passed = nbval(notebook, options)
    assert passed.returncode == 0, passed.stdout[-2000:]
    plugin_at = options.index("tests.nbval.ignore_stderr")
    without_plugin = nbval(notebook, options[:plugin_at - 1] + options[plugin_at + 1:])
    assert without_plugin.returncode != 0, "the stderr difference went unnoticed without the plugin"
