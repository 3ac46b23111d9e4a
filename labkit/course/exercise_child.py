"""The child side of an exercise check, in its own sandboxed process: import the learner's file, run
``probe(module, cases)`` from ``job.json``, print one JSON line after a marker (data only reach the judge)."""

from __future__ import annotations

import importlib.util
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

MARKER = "@@labkit-probe-result@@"


def call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """``{"ok": value}`` or ``{"raised": "Type: message"}``: one probe call that may fail on its own."""
    try:
        return {"ok": function(*args, **kwargs)}
    except Exception as exc:  # the learner's code may raise anything; it is a finding, not a crash
        return {"raised": f"{type(exc).__name__}: {exc}"}


def _import(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _line_in(target: Path, exc: BaseException) -> int | str:
    if isinstance(exc, SyntaxError) and exc.lineno:
        return exc.lineno
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == target.resolve()]
    return frames[-1].lineno if frames and frames[-1].lineno else "?"


def _emit(data: dict[str, Any]) -> None:
    sys.stdout.flush()
    sys.stdout.write("\n" + MARKER + json.dumps(data, default=repr) + "\n")
    sys.stdout.flush()


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    probes = _import(Path(job["probe"]), "labkit_probe")
    learner = Path(job["learner"])
    try:
        module = _import(learner, job["module"])
    except BaseException as exc:  # SystemExit too: a file that exits while importing did not import
        _emit({"import_error": f"importing {learner.name} failed at line {_line_in(learner, exc)}: "
                               f"{type(exc).__name__}: {exc}"})
        return 0
    try:
        results = probes.probe(module, job["cases"])
    except BaseException as exc:
        _emit({"probe_error": f"{type(exc).__name__}: {exc}"})
        return 0
    _emit({"results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
