"""Checker for exercise 02: drive the validator with good and bad proposals, and the executor with
genuine and doctored tokens.

Expected verdicts are written here, and signatures are recomputed here with the checker's own
copy of the signing rule, so a file cannot pass by changing the given helpers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from types import ModuleType
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


def _policy(module: ModuleType, allowlist: tuple[str, ...] | None) -> Any:
    return module.Policy(version=VERSION, allowlist=allowlist or ("read_record", "save_draft"))


def _validate(module: ModuleType, action: str, args: dict[str, Any], version: str, left: int,
              allowlist: tuple[str, ...] | None = None, action_id: str = "a7") -> Any:
    return module.validate(module.Candidate(action=action, args=args), version, policy=_policy(module, allowlist),
                           tool_calls_left=left, action_id=action_id, secret=SECRET)


def _token_problem(token: Any, action: str, args: dict[str, Any], action_id: str) -> str | None:
    digest = _digest(args)
    expected = {"action_id": action_id, "action": action, "args_sha256": digest, "policy_version": VERSION,
                "signature": _sign(SECRET, action_id, action, digest, VERSION)}
    for name, want in expected.items():
        got = getattr(token, name, None)
        if got != want:
            return f"its {name} is {got!r}, expected {want!r}"
    return None


def _check_validate(module: ModuleType) -> list[str]:
    feedback = []
    for what, action, args, version, left, allowlist, expected in VALIDATE_CASES:
        try:
            got = _validate(module, action, args, version, left, allowlist)
        except Exception as exc:
            feedback.append(f"validate, {what}: raised {type(exc).__name__}: {exc}")
            continue
        if expected == "token":
            if not isinstance(got, module.Token):
                feedback.append(f"validate, {what}: returned {got!r}, expected a Token")
                continue
            problem = _token_problem(got, action, args, "a7")
            if problem:
                feedback.append(f"validate, {what}: the token is wrong: {problem}")
            continue
        if not isinstance(got, module.Denial):
            kind = type(got).__name__
            feedback.append(f"validate, {what}: returned a {kind}, expected Denial('{expected}', ...)")
        elif got.kind != expected:
            feedback.append(f"validate, {what}: denied as '{got.kind}', expected '{expected}'")
        elif not str(got.reason).strip():
            feedback.append(f"validate, {what}: the denial has no reason; say what was wrong")
        elif expected in ("not_allowed", "bad_args") and action not in got.reason:
            feedback.append(f"validate, {what}: the reason {got.reason!r} should name the action '{action}'")
        elif expected == "stale_policy" and not (version in got.reason and VERSION in got.reason):
            feedback.append(f"validate, {what}: the reason {got.reason!r} should name both policy versions")
    return feedback


def _check_choose(module: ModuleType) -> list[str]:
    cand = module.Candidate
    bad, unknown = cand(action="read_record", args={"id": 3}), cand(action="send_email", args={})
    first, second = cand(action=READ[0], args=READ[1]), cand(action=SAVE[0], args=SAVE[1])
    cases: list[tuple[str, list[Any], Any]] = [
        ("a bad candidate before a good one", [bad, first], ("token", READ)),
        ("two good candidates", [first, second], ("token", READ)),
        ("no candidate passes", [unknown, bad], ["not_allowed", "bad_args"]),
        ("no candidates at all", [], []),
    ]
    feedback = []
    for what, candidates, expected in cases:
        try:
            got = module.choose(candidates, VERSION, policy=_policy(module, None), tool_calls_left=5,
                                action_id="a7", secret=SECRET)
        except Exception as exc:
            feedback.append(f"choose, {what}: raised {type(exc).__name__}: {exc}")
            continue
        if isinstance(expected, tuple):
            problem = (_token_problem(got, expected[1][0], expected[1][1], "a7") if isinstance(got, module.Token)
                       else f"returned {got!r}, expected the token of the first good candidate")
            if problem:
                feedback.append(f"choose, {what}: {problem}")
        elif not isinstance(got, list) or [getattr(d, "kind", d) for d in got] != expected:
            shown = [getattr(d, "kind", d) for d in got] if isinstance(got, list) else got
            feedback.append(f"choose, {what}: returned {shown!r}, expected the denials {expected!r}")
    return feedback


def _check_executor(module: ModuleType) -> list[str]:
    action, args = READ
    digest = _digest(args)
    genuine = module.Token("a7", action, digest, VERSION, _sign(SECRET, "a7", action, digest, VERSION))
    forged = dataclasses.replace(genuine, signature=_sign(OTHER_SECRET, "a7", action, digest, VERSION))
    moved = dataclasses.replace(genuine, action_id="a8")  # a token copied onto another logical action
    cases = [
        ("the genuine token for the same call", genuine, action, args, VERSION, True),
        ("a token for R03 used to read R04", genuine, action, {"id": "R04"}, VERSION, False),
        ("a read token used for a write", genuine, "save_draft", args, VERSION, False),
        ("a token used after the policy changed", genuine, action, args, "policy-3", False),
        ("a token signed with another secret", forged, action, args, VERSION, False),
        ("a token whose action id was changed", moved, action, args, VERSION, False),
    ]
    feedback = []
    for what, token, act, arguments, version, expected in cases:
        try:
            got = module.executor_accepts(token, act, arguments, version, SECRET)
        except Exception as exc:
            feedback.append(f"executor_accepts, {what}: raised {type(exc).__name__}: {exc}")
            continue
        if got is not expected:
            feedback.append(f"executor_accepts, {what}: returned {got!r}, expected {expected}")
    return feedback


def check(module: ModuleType) -> list[str]:
    needed = ("Candidate", "Policy", "Token", "Denial", "validate", "choose", "executor_accepts")
    missing = [n for n in needed if not hasattr(module, n)]
    if missing:
        return [f"the file must define {', '.join(missing)}"]
    return _check_validate(module) + _check_choose(module) + _check_executor(module)
