"""Where a recorded number comes from: the labkit commit and the machine, written by every recording and
benchmark the kit makes, and read back from any recording's folder by one reader (:func:`read_provenance`).
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def git_commit(*, own_output: Path | None = None, repo: Path = REPO) -> str:
    """The labkit commit, ``+dirty`` when tracked files differ ("unknown" outside git); changes under
    ``own_output`` (the recording's own folder) are results, not dirt."""
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


@dataclass(frozen=True)
class Stretch:
    """One stretch of a recording (a recording resumed twice has three): its code, start, machine and backend."""

    commit: str
    started_utc: str | None  # None: the first dialog recordings kept no start time
    mode: str
    backend: dict[str, Any]
    machine: dict[str, Any]
    facts: dict[str, Any] = field(default_factory=dict)  # the comparison's own: arms, tasks, model, ...

    @property
    def model_sha256(self) -> str | None:
        return self.backend.get("model_sha256")


def read_provenance(folder: Path) -> list[Stretch]:
    """The stretches of any recording the kit wrote: ``provenance.json`` (one, or its ``segments``) or
    ``provenance.jsonl`` (a line per stretch). Older lines name the commit ``git_commit`` and the start ``at``."""
    import json

    from labkit.core.errors import LabkitError

    single, lines = folder / "provenance.json", folder / "provenance.jsonl"
    if single.exists():
        top = json.loads(single.read_text(encoding="utf-8"))
        records = [{**top, **segment} for segment in top.get("segments") or [{}]]
    elif lines.exists():
        records = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        raise LabkitError(f"{folder} holds no provenance.json or provenance.jsonl",
                          "point at a recording's folder (one with runs.jsonl).")
    known = ("labkit_commit", "git_commit", "started_utc", "at", "mode", "backend", "machine", "segments")
    return [Stretch(commit=r.get("labkit_commit") or r.get("git_commit") or "unknown",
                    started_utc=r.get("started_utc") or r.get("at"), mode=r.get("mode", "live"),
                    backend=dict(r.get("backend") or {}), machine=_machine(r.get("machine")),
                    facts={k: v for k, v in r.items() if k not in known}) for r in records]


def _machine(recorded: Any) -> dict[str, Any]:
    """The machine as a mapping; the first dialog recordings named only its processor."""
    return dict(recorded) if isinstance(recorded, dict) else {"processor": recorded} if recorded else {}
