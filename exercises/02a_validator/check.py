"""Checker for exercise 02a: drive the validator with good and bad proposals, and the executor with
genuine and doctored tokens.

Expected verdicts are written here, and signatures are recomputed here with the checker's own
copy of the signing rule, so a file cannot pass by changing the given helpers. The learner's
functions run in a sandboxed child (``probe.py``); the secret, the action ids and some record ids
are drawn afresh at every check, so no answer written for the visible cases passes. Feedback says
what is wrong with a verdict, never which verdict was expected.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from typing import Any

SECRET = b"checker-secret"
OTHER_SECRET = b"somebody-else"
VERSION = "policy-2"
READ = ("read_record", {"id": "R03"})
SAVE = ("save_draft", {"text": "R03 and R05 differ in: city", "key": "diff-R03-R05"})


def _digest(args: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(args, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode("utf-8")).hexdigest()


def _sign(secret: bytes, action_id: str, action: str, digest: str, policy_version: str) -> str:
    return hmac.new(secret, json.dumps([action_id, action, digest, policy_version]).encode("utf-8"),
                    hashlib.sha256).hexdigest()


# (what is proposed, action, args, proposed under, tool calls left, allowlist or None, expected: "token" or kind)
VALIDATE_CASES: list[tuple[str, str, dict[str, Any], str, int, tuple[str, ...] | None, str]] = [
    ("a good read", *READ, VERSION, 5, None, "token"),
    ("a good draft", *SAVE, VERSION, 1, None, "token"),
    ("a tool nobody knows", "send_email", {"to": "x"}, VERSION, 5, None, "not_allowed"),
    ("a known tool outside the allowlist", "delete_drafts", {}, VERSION, 5, None, "not_allowed"),
    ("a draft under a read-only policy", *SAVE, VERSION, 5, ("read_record",), "not_allowed"),
    ("a record id given as a number", "read_record", {"id": 3}, VERSION, 5, None, "bad_args"),
    ("a stray extra argument", "read_record", {"id": "R03", "verbose": True}, VERSION, 5, None, "bad_args"),
    ("a draft without a key", "save_draft", {"text": "hello"}, VERSION, 5, None, "bad_args"),
    ("a draft key that climbs out of the draft area", "save_draft", {"text": "x", "key": "../etc/passwd"}, VERSION,
     5, None, "bad_args"),
    ("a proposal made under the previous policy", *READ, "policy-1", 5, None, "stale_policy"),
    ("a proposal with no tool calls left", *READ, VERSION, 0, None, "over_budget"),
    ("an unknown tool, under an old policy, with no budget (allowlist comes first)", "send_email", {}, "policy-1", 0,
     None, "not_allowed"),
    ("bad arguments under an old policy (schema before policy)", "read_record", {"id": 3}, "policy-1", 0, None,
     "bad_args"),
    ("an old policy with no budget (policy before budget)", *READ, "policy-1", 0, None, "stale_policy"),
]


def _token_fields(secret: bytes, action_id: str, action: str, args: dict[str, Any], version: str = VERSION,
                  ) -> dict[str, str]:
    digest = _digest(args)
    return {"action_id": action_id, "action": action, "args_sha256": digest, "policy_version": version,
            "signature": _sign(secret, action_id, action, digest, version)}


def cases(rng: random.Random) -> dict[str, Any]:
    secret = rng.randbytes(16)
    action_id = f"a{rng.randint(10, 9999)}"
    validate = [{"what": what, "action": action, "args": args, "proposed": version, "left": left,
                 "allowlist": list(allowlist) if allowlist else None, "action_id": action_id, "expected": expected}
                for what, action, args, version, left, allowlist, expected in VALIDATE_CASES]
    record = f"R{rng.randint(10, 9999):02d}"
    hidden = [  # the same rules on inputs no file can have written down
        ("a hidden read", "read_record", {"id": record}, VERSION, rng.randint(1, 9), None, "token"),
        ("a hidden draft", "save_draft", {"text": f"note {rng.random():.6f}", "key": f"k-{rng.randint(1, 999)}"},
         VERSION, 1, None, "token"),
        ("a hidden read with no calls left", "read_record", {"id": record}, VERSION, 0, None, "over_budget"),
        ("a hidden read under an old policy", "read_record", {"id": record}, f"policy-{rng.randint(3, 99)}", 3,
         None, "stale_policy"),
    ]
    validate += [{"what": what, "action": action, "args": args, "proposed": version, "left": left,
                  "allowlist": allowlist, "action_id": f"h{rng.randint(10, 9999)}", "expected": expected}
                 for what, action, args, version, left, allowlist, expected in hidden]
    bad, unknown = ["read_record", {"id": 3}], ["send_email", {}]
    first, second = [READ[0], READ[1]], [SAVE[0], SAVE[1]]
    choose = [
        {"what": "a bad candidate before a good one", "candidates": [bad, first], "expected": first},
        {"what": "two good candidates", "candidates": [first, second], "expected": first},
        {"what": "no candidate passes", "candidates": [unknown, bad], "expected": ["not_allowed", "bad_args"]},
        {"what": "no candidates at all", "candidates": [], "expected": []},
        {"what": "a hidden list", "candidates": [unknown, second, first], "expected": second},
    ]
    for c in choose:
        c["action_id"] = action_id
    action, args = READ
    genuine = _token_fields(secret, action_id, action, args)
    forged = {**genuine, "signature": _sign(OTHER_SECRET, action_id, action, genuine["args_sha256"], VERSION)}
    moved = {**genuine, "action_id": action_id + "x"}  # a token copied onto another logical action
    other = {"id": record}
    executor = [
        ("the genuine token for the same call", genuine, action, args, VERSION, True),
        ("a token for R03 used to read R04", genuine, action, {"id": "R04"}, VERSION, False),
        ("a read token used for a write", genuine, "save_draft", args, VERSION, False),
        ("a token used after the policy changed", genuine, action, args, "policy-3", False),
        ("a token signed with another secret", forged, action, args, VERSION, False),
        ("a token whose action id was changed", moved, action, args, VERSION, False),
        ("a hidden genuine token", _token_fields(secret, "z" + action_id, action, other), action, other, VERSION,
         True),
    ]
    return {"secret": secret.hex(), "version": VERSION, "validate": validate, "choose": choose,
            "executor": [{"what": w, "token": tok, "action": a, "args": ar, "version": v, "expected": e}
                         for w, tok, a, ar, v, e in executor]}


def _token_problem(got: dict[str, Any], secret: bytes, action: str, args: dict[str, Any], action_id: str,
                   ) -> str | None:
    expected = _token_fields(secret, action_id, action, args)
    for name, want in expected.items():
        if got.get(name) != want:
            return f"its {name} ({got.get(name)!r}) is not what a token for this call must carry"
    return None


def _shown(got: dict[str, Any]) -> str:
    if "token" in got:
        return "a Token"
    if "denial" in got:
        return f"Denial('{got['denial']}')"
    if "list" in got:
        return repr([item.get("denial", "?") for item in got["list"]])
    return f"a {got.get('other', '?')} ({got.get('repr', '')})"


def _judge_validate(results: list[dict[str, Any]], cases: dict[str, Any], secret: bytes) -> list[str]:
    feedback = []
    for got, c in zip(results, cases["validate"], strict=True):
        what, expected, action = c["what"], c["expected"], c["action"]
        if "raised" in got:
            feedback.append(f"validate, {what}: raised {got['raised']}")
        elif expected == "token":
            if "token" not in got:
                feedback.append(f"validate, {what}: returned {_shown(got)}, but this proposal breaks no rule")
            elif problem := _token_problem(got["token"], secret, action, c["args"], c["action_id"]):
                feedback.append(f"validate, {what}: the token is wrong: {problem}")
        elif "denial" not in got:
            feedback.append(f"validate, {what}: returned {_shown(got)}, but this proposal must be denied")
        elif got["denial"] != expected:
            feedback.append(f"validate, {what}: denied as '{got['denial']}', which is not the first rule it breaks "
                            "(the order: allowlist, schema, policy, budget)")
        elif not got["reason"].strip():
            feedback.append(f"validate, {what}: the denial has no reason; say what was wrong")
        elif expected in ("not_allowed", "bad_args") and action not in got["reason"]:
            feedback.append(f"validate, {what}: the reason {got['reason']!r} should name the action '{action}'")
        elif expected == "stale_policy" and not (c["proposed"] in got["reason"] and VERSION in got["reason"]):
            feedback.append(f"validate, {what}: the reason {got['reason']!r} should name both policy versions")
    return feedback


def _judge_choose(results: list[dict[str, Any]], cases: dict[str, Any], secret: bytes) -> list[str]:
    feedback = []
    for got, c in zip(results, cases["choose"], strict=True):
        what, expected = c["what"], c["expected"]
        if "raised" in got:
            feedback.append(f"choose, {what}: raised {got['raised']}")
        elif (expected and isinstance(expected[0], str) and expected[0] in ("not_allowed", "bad_args")) \
                or expected == []:
            kinds = [item.get("denial") for item in got.get("list", [])] if "list" in got else None
            if kinds != expected:
                feedback.append(f"choose, {what}: returned {_shown(got)}; when no candidate passes, return every "
                                "candidate's denial, in order")
        elif "token" not in got:
            feedback.append(f"choose, {what}: returned {_shown(got)}, but a candidate here passes")
        elif _token_problem(got["token"], secret, expected[0], expected[1], c["action_id"]):
            feedback.append(f"choose, {what}: the token is not the first good candidate's")
    return feedback


def _judge_executor(results: list[dict[str, Any]], cases: dict[str, Any]) -> list[str]:
    feedback = []
    for got, c in zip(results, cases["executor"], strict=True):
        if "raised" in got:
            feedback.append(f"executor_accepts, {c['what']}: raised {got['raised']}")
        elif got["ok"] is not c["expected"]:
            feedback.append(f"executor_accepts, {c['what']}: returned {got['ok']!r}, "
                            + ("but this token must be refused" if got["ok"] is True else
                               "but this is the genuine token for this call"))
    return feedback


def judge(results: dict[str, Any], cases: dict[str, Any], source: str) -> list[str]:
    if "missing" in results:
        return [f"the file must define {', '.join(results['missing'])}"]
    secret = bytes.fromhex(cases["secret"])
    return (_judge_validate(results["validate"], cases, secret) + _judge_choose(results["choose"], cases, secret)
            + _judge_executor(results["executor"], cases))
