"""Exercise 01a's probes: they run in the sandboxed child, beside the learner's file, and return plain data.

Nothing here knows the answer: the probes build the learner's table, read its rows, and drive the
learner's machine through the runs the checker sends. ``check.py`` judges what comes back.
"""

from __future__ import annotations

from typing import Any

from labkit import IllegalTransition, LabkitError, LabMachine, TableError


def _run(module: Any, table: Any, steps: list[list[Any]]) -> dict[str, Any]:
    machine = LabMachine(table, guards={"retries_left": module.retries_left}, reduce=module.reduce,
                         empty=module.JobState(), clock=lambda: 0.0)
    try:
        for event, payload in steps:
            machine.fire(event, **payload)
    except IllegalTransition as exc:
        return {"refused": [exc.event, exc.state]}
    except LabkitError as exc:
        return {"error": exc.message}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"status": machine.status, "reduced": str(getattr(machine.state, "status", ""))}


def probe(module: Any, cases: dict[str, Any]) -> dict[str, Any]:
    missing = [name for name in ("build_table", "reduce", "retries_left", "JobState") if not hasattr(module, name)]
    if missing:
        return {"missing": missing}
    max_retries = getattr(module, "MAX_RETRIES", None)
    try:
        table = module.build_table()
    except TableError as exc:
        return {"table_problems": [str(p) for p in exc.problems], "max_retries": max_retries}
    except LabkitError as exc:
        return {"build_error": exc.message, "max_retries": max_retries}
    return {
        "max_retries": max_retries if isinstance(max_retries, int) else repr(max_retries),
        "initial": table.initial,
        "terminal": sorted(table.terminal),
        "guards": sorted(table.guard_names()),
        "rows": [[r.source, r.event, r.dest, r.guard] for r in table.rows],
        "runs": [_run(module, table, steps) for steps in cases["runs"]],
    }
