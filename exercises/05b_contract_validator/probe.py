"""Exercise 05b's probes: call the learner's check_answer and reask_message on the judge's cases."""

from __future__ import annotations

from typing import Any

from labkit.course.exercise_child import call


def probe(module: Any, cases: dict[str, Any]) -> dict[str, Any]:
    missing = [n for n in ("check_answer", "reask_message", "Violation") if not hasattr(module, n)]
    if missing:
        return {"missing": missing}
    verdicts = []
    for c in cases["answers"]:
        got = call(module.check_answer, c["raw"], c["signals"], c["needs"], c["known"])
        if "raised" in got:
            verdicts.append(got)
            continue
        violation = getattr(got["ok"], "violation", None)
        answer = getattr(got["ok"], "answer", None)
        verdicts.append({"code": None if violation is None else str(getattr(violation, "code", violation)),
                         "answer": answer if isinstance(answer, dict | type(None)) else repr(answer)})
    reasks = []
    for c in cases["reask"]:
        got = call(module.reask_message, module.Violation(c["code"], c["detail"]), c["signals"])
        reasks.append(got if "raised" in got else {"ok": str(got["ok"])})
    return {"verdicts": verdicts, "reasks": reasks}
