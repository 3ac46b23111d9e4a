"""`make lab` passes --allow-root exactly when run as root (JupyterLab refuses root otherwise).

`make -n` prints the recipe without running it, so these tests start no server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def dry_run_lab(*prefix: str) -> str:
    """The commands `make lab` would run, as the current user or under ``prefix`` (e.g. setpriv)."""
    done = subprocess.run([*prefix, "make", "--no-print-directory", "-n", "lab"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout


def jupyter_line(recipe: str) -> str:
    lines = [line for line in recipe.splitlines() if "jupyter lab" in line]
    assert len(lines) == 1, recipe
    return lines[0]


def test_lab_allows_root_exactly_when_root() -> None:
    recipe = dry_run_lab()
    as_root = os.geteuid() == 0
    assert ("--allow-root" in jupyter_line(recipe)) is as_root
    assert ("running as root" in recipe) is as_root


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run make as an ordinary user")
def test_lab_as_ordinary_user_does_not_allow_root() -> None:
    as_nobody = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")
    readable = subprocess.run([*as_nobody, "test", "-r", "Makefile"], cwd=ROOT, timeout=30).returncode == 0
    if not readable:
        pytest.skip(f"an ordinary user (uid {NOBODY}) cannot read {ROOT} (a clone under a private home)")
    recipe = dry_run_lab(*as_nobody)
    assert "--allow-root" not in jupyter_line(recipe)
    assert "running as root" not in recipe
