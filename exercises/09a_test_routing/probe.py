"""Exercise 09a's probes: call the learner's route_after_tests and blame on the judge's cases."""

from __future__ import annotations

from typing import Any

from labkit.course.exercise_child import call


def probe(module: Any, cases: dict[str, Any]) -> dict[str, Any]:
    missing = [n for n in ("route_after_tests", "blame") if not hasattr(module, n)]
    if missing:
        return {"missing": missing}
    routes = []
    for args in cases["routes"]:
        got = call(module.route_after_tests, *args)
        if "ok" in got:
            route = got["ok"]
            got = {"next_state": str(getattr(route, "next_state", route)), "file": getattr(route, "file", None)}
            got["file"] = got["file"] if isinstance(got["file"], str | type(None)) else repr(got["file"])
        routes.append(got)
    blames = []
    for output, planned in cases["blames"]:
        got = call(module.blame, output, list(planned))
        blames.append(got if "raised" in got or isinstance(got["ok"], str | type(None)) else {"ok": repr(got["ok"])})
    return {"routes": routes, "blames": blames}
