"""Exercise 02a's probes: they run in the sandboxed child and return what the learner's functions answered.

Tokens and denials come back as plain data (their fields); the checker recomputes digests and
signatures in its own process, with its own copy of the signing rule.
"""

from __future__ import annotations

from typing import Any

from labkit.course.exercise_child import call

NEEDED = ("Candidate", "Policy", "Token", "Denial", "validate", "choose", "executor_accepts")
TOKEN_FIELDS = ("action_id", "action", "args_sha256", "policy_version", "signature")


def _data(module: Any, got: Any) -> Any:
    if isinstance(got, module.Token):
        return {"token": {name: getattr(got, name, None) for name in TOKEN_FIELDS}}
    if isinstance(got, module.Denial):
        return {"denial": str(getattr(got, "kind", "")), "reason": str(getattr(got, "reason", ""))}
    if isinstance(got, list):
        return {"list": [_data(module, item) for item in got]}
    return {"other": type(got).__name__, "repr": repr(got)[:200]}


def _answer(module: Any, function: Any, *args: Any, **kwargs: Any) -> Any:
    outcome = call(function, *args, **kwargs)
    return {"raised": outcome["raised"]} if "raised" in outcome else _data(module, outcome["ok"])


def probe(module: Any, cases: dict[str, Any]) -> dict[str, Any]:
    missing = [n for n in NEEDED if not hasattr(module, n)]
    if missing:
        return {"missing": missing}
    secret = bytes.fromhex(cases["secret"])

    def policy(allowlist: list[str] | None) -> Any:
        return module.Policy(version=cases["version"], allowlist=tuple(allowlist or ("read_record", "save_draft")))

    validate = []
    for c in cases["validate"]:
        candidate = module.Candidate(action=c["action"], args=c["args"])
        validate.append(_answer(module, module.validate, candidate, c["proposed"], policy=policy(c["allowlist"]),
                                tool_calls_left=c["left"], action_id=c["action_id"], secret=secret))
    choose = []
    for c in cases["choose"]:
        candidates = [module.Candidate(action=a, args=args) for a, args in c["candidates"]]
        choose.append(_answer(module, module.choose, candidates, cases["version"], policy=policy(None),
                              tool_calls_left=5, action_id=c["action_id"], secret=secret))
    executor = []
    for c in cases["executor"]:
        token = module.Token(*[c["token"][name] for name in TOKEN_FIELDS])
        outcome = call(module.executor_accepts, token, c["action"], c["args"], c["version"], secret)
        executor.append(outcome if "raised" in outcome else {"ok": outcome["ok"] if isinstance(outcome["ok"], bool)
                                                                   else repr(outcome["ok"])})
    return {"validate": validate, "choose": choose, "executor": executor}
