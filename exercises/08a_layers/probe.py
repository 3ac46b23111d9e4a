"""Exercise 08a's probes: read the whitelist out as data, drive the learner's BookStatus through the calls sent."""

from __future__ import annotations

from typing import Any


def _lifecycle(cls: Any, calls: list[list[Any]]) -> dict[str, Any]:
    try:
        status = cls()
        for name, *args in calls:
            getattr(status, name)(*args)
        return {"ok": str(status.lifecycle)}
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {exc}"}


def probe(module: Any, cases: dict[str, Any]) -> dict[str, Any]:
    whitelist = getattr(module, "FLOW_WHITELIST", None)
    data: dict[str, Any] = {"whitelist": {str(k): sorted(map(str, v)) for k, v in whitelist.items()}
                            if isinstance(whitelist, dict) else type(whitelist).__name__}
    cls = getattr(module, "BookStatus", None)
    if cls is None:
        return {**data, "no_class": True}
    try:
        status = cls()
        status.lifecycle = "completed"
        data["assignable"] = True
    except AttributeError:
        data["assignable"] = False
    except Exception as exc:
        data["assignable"] = f"{type(exc).__name__}: {exc}"
    data["scenarios"] = [_lifecycle(cls, calls) for calls in cases["scenarios"]]
    restores = []
    for phase, flow in cases["restores"]:
        try:
            restores.append({"ok": str(cls.restore(phase, flow).lifecycle)})
        except Exception as exc:
            restores.append({"raised": f"{type(exc).__name__}: {exc}"})
    data["restores"] = restores
    return data
