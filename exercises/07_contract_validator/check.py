"""Checker for exercise 07: answers that must be refused (with the right code) and answers that must pass,
then the re-ask message."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

SIGNALS = ["next", "stay", "back"]
NEEDS = {"next": ["goal"]}


def _answer(**change: Any) -> str:
    data: dict[str, Any] = {"message": "Who will use it?", "signal": "next", "results": {"goal": "a tracker"},
                            "summary": "goal known"}
    data.update(change)
    return json.dumps({k: v for k, v in data.items() if v is not _DROP})


_DROP = object()

# (what, raw text, variables known before, expected code or None for "must pass")
CASES: list[tuple[str, str, dict[str, Any], str | None]] = [
    ("a good answer", _answer(), {}, None),
    ("a stay without results", _answer(signal="stay", results={}), {}, None),
    ("a next whose goal was given earlier", _answer(results={}), {"goal": "a tracker"}, None),
    ("a back with an empty summary", _answer(signal="back", results={}, summary=""), {}, None),
    ("text cut off mid-answer", _answer()[:30], {}, "not_json"),
    ("prose instead of JSON", "Sure! The goal is a tracker.", {}, "not_json"),
    ("a JSON list", json.dumps(["next"]), {}, "wrong_shape"),
    ("no summary field", _answer(summary=_DROP), {}, "wrong_shape"),
    ("an extra field", json.dumps({**json.loads(_answer()), "mood": "happy"}), {}, "wrong_shape"),
    ("results as a string", _answer(results="a tracker"), {}, "wrong_shape"),
    ("an empty message", _answer(message=""), {}, "wrong_shape"),
    ("a signal the step does not have", _answer(signal="finish"), {}, "unknown_signal"),
    ("next without the goal", _answer(results={}), {}, "missing_results"),
    ("next with an empty goal", _answer(results={"goal": ""}), {}, "missing_results"),
    ("a wrong signal and no goal (signal first)", _answer(signal="jump", results={}), {}, "unknown_signal"),
]


def check(module: ModuleType) -> list[str]:
    feedback: list[str] = []
    for what, raw, known, expected in CASES:
        try:
            verdict = module.check_answer(raw, SIGNALS, NEEDS, known)
        except Exception as exc:
            feedback.append(f"check_answer, {what}: raised {type(exc).__name__}: {exc}; expected "
                            + ("a pass" if expected is None else f"a '{expected}' violation"))
            continue
        got = verdict.violation.code if verdict.violation is not None else None
        if got != expected:
            want = "to pass" if expected is None else f"'{expected}'"
            feedback.append(f"check_answer, {what}: got {got or 'a pass'}, expected {want}")
        elif expected is None and verdict.answer != json.loads(raw):
            feedback.append(f"check_answer, {what}: a passing verdict must carry the parsed answer")
    violation = module.Violation("missing_results", "signal 'next' needs goal")
    try:
        text = module.reask_message(violation, SIGNALS)
    except Exception as exc:
        return [*feedback, f"reask_message raised {type(exc).__name__}: {exc}"]
    if violation.detail not in text:
        feedback.append("reask_message: quote the violation's detail, so the model knows what was wrong")
    missing = [s for s in SIGNALS if s not in text]
    if missing:
        feedback.append(f"reask_message: list the allowed signals (missing: {', '.join(missing)})")
    return feedback
