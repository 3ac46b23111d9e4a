"""Where a recorded number comes from: the labkit commit and the machine.

Every recording the kit writes (the comparison, the dialog measurement, the layered demo, the
benchmark scripts) names the code and the machine that produced it; this is the one place that
reads them, so a dirty working tree is flagged the same way everywhere.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def git_commit(*, own_output: Path | None = None, repo: Path = REPO) -> str:
    """The labkit commit, with ``+dirty`` when tracked files differ from it ("unknown" outside git).

    ``own_output``: the folder the recording itself writes. A recording extended in batches (``--add``)
    changes its own files between batches; those are the run's results, not a change to the code that
    produced them, so they do not count as dirt. Any other changed tracked file still does.
    """
    status = ["git", "status", "--porcelain", "--untracked-files=no"]
    if own_output is not None and Path(own_output).resolve().is_relative_to(repo.resolve()):
        status += ["--", ".", f":(exclude){Path(own_output).resolve().relative_to(repo.resolve()).as_posix()}"]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(status, cwd=repo, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty else "")


def machine() -> dict[str, Any]:
    """The machine in a few fields, with its load average when the run started (a busy machine is slower)."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "load_average_at_start": [round(x, 2) for x in load] if load else None}
