"""Checker for exercise 05b: answers that must be refused (with the right code) and answers that must pass,
then the re-ask message.

The learner's functions run in the sandboxed child (``probe.py``); the judge is here. Hidden cases,
drawn afresh at every check, use other signals and other `needs` than the visible ones, so a
validator that ignores its `needs` or `signals` argument fails. Feedback never names the verdict
that was expected.
"""

from __future__ import annotations

import json
import random
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


def _hidden(rng: random.Random) -> list[dict[str, Any]]:
    field = rng.choice(["budget", "city", "deadline", "colour"])
    signal = rng.choice(["confirm", "proceed", "advance"])
    signals = [signal, "stay", "back"]
    needs = {signal: [field]}
    value = f"v{rng.randint(1, 999)}"

    def answer(sig: str, results: dict[str, Any]) -> str:
        return json.dumps({"message": "ok?", "signal": sig, "results": results, "summary": "s"})
    return [
        {"what": f"a hidden '{signal}' that gives its {field}", "raw": answer(signal, {field: value}),
         "signals": signals, "needs": needs, "known": {}, "expected": None},
        {"what": f"a hidden '{signal}' without its {field}", "raw": answer(signal, {"goal": "x"}),
         "signals": signals, "needs": needs, "known": {}, "expected": "missing_results"},
        {"what": f"a hidden '{signal}' whose {field} is known from before", "raw": answer(signal, {}),
         "signals": signals, "needs": needs, "known": {field: value}, "expected": None},
        {"what": "a hidden 'next', not a signal of this step", "raw": answer("next", {"goal": "x"}),
         "signals": signals, "needs": needs, "known": {}, "expected": "unknown_signal"},
        {"what": "a hidden 'next' with no needs at all", "raw": answer("next", {}), "signals": ["next"],
         "needs": {}, "known": {}, "expected": None},
    ]


def cases(rng: random.Random) -> dict[str, Any]:
    answers = [{"what": w, "raw": raw, "signals": SIGNALS, "needs": NEEDS, "known": known, "expected": e}
               for w, raw, known, e in CASES]
    signals = [rng.choice(["next", "go"]), f"s{rng.randint(10, 99)}", "back"]
    reask = [{"code": "missing_results", "detail": "signal 'next' needs goal", "signals": SIGNALS},
             {"code": "unknown_signal", "detail": f"signal 'x{rng.randint(1, 999)}' is not allowed",
              "signals": signals}]
    return {"answers": answers + _hidden(rng), "reask": reask}


def judge(results: dict[str, Any], cases: dict[str, Any], source: str) -> list[str]:
    if "missing" in results:
        return [f"the file must define {', '.join(results['missing'])}"]
    feedback: list[str] = []
    for got, c in zip(results["verdicts"], cases["answers"], strict=True):
        what, expected = c["what"], c["expected"]
        if "raised" in got:
            feedback.append(f"check_answer, {what}: raised {got['raised']}; a bad answer is a violation, "
                            "not a crash")
        elif got["code"] != expected:
            feedback.append(f"check_answer, {what}: got {got['code'] or 'a pass'}, which is not the contract's "
                            "verdict" + (" (this answer keeps the contract)" if expected is None else ""))
        elif expected is None and got["answer"] != json.loads(c["raw"]):
            feedback.append(f"check_answer, {what}: a passing verdict must carry the parsed answer")
    for got, c in zip(results["reasks"], cases["reask"], strict=True):
        if "raised" in got:
            feedback.append(f"reask_message raised {got['raised']}")
            continue
        if c["detail"] not in got["ok"]:
            feedback.append("reask_message: quote the violation's detail, so the model knows what was wrong")
        missing = [s for s in c["signals"] if s not in got["ok"]]
        if missing:
            feedback.append(f"reask_message: list the allowed signals (missing: {', '.join(missing)})")
    return list(dict.fromkeys(feedback))
