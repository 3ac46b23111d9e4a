"""The validator: the only component that can allow an action. Candidates are checked in order (allowlist,
schema, privacy, policy, budget); the first to pass gets an HMAC token the executor recomputes."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from labkit.runtime.events import Finding, FindingCode, Validation
from labkit.runtime.policy import Budget, Policy
from labkit.runtime.redact import looks_sensitive, redact
from labkit.runtime.state import ActionState, RunState
from labkit.runtime.tools import TOOLS, ToolSpec

# The teaching key is public (it is in this file): anyone can forge tokens with it. It stays the
# default only so that the lesson's traces and notebooks reproduce byte for byte; a real deployment
# sets LABKIT_TOKEN_SECRET (see secret_from_env) or passes its own ``secret=``.
DEFAULT_SECRET = b"labkit-teaching-key: replace with secrets.token_bytes(32) outside the lesson"
SECRET_ENV = "LABKIT_TOKEN_SECRET"


def secret_from_env(environ: Mapping[str, str] | None = None) -> bytes:
    """The token key from ``LABKIT_TOKEN_SECRET`` when it is set and not empty, else the public
    teaching key. ``labkit run`` and ``labkit decide`` use this, so a person can keep the key out of
    the source without changing the lesson's reproducible default."""
    value = (os.environ if environ is None else environ).get(SECRET_ENV, "")
    return value.encode("utf-8") if value else DEFAULT_SECRET


def args_sha256(args: Mapping[str, Any]) -> str:
    """Digest of arguments in canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(dict(args), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Signer:
    """Makes and checks validation tokens. The secret stays in memory; only tokens are logged."""

    def __init__(self, secret: bytes = DEFAULT_SECRET) -> None:
        self._secret = secret

    def token(self, run_id: str, action_id: str, tool: str, digest: str, policy_version: str,
              human_grant: bool) -> str:
        message = json.dumps([run_id, action_id, tool, digest, policy_version, human_grant]).encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def verify(self, run_id: str, action: ActionState) -> bool:
        if not action.token:
            return False
        expected = self.token(run_id, action.action_id, action.tool, args_sha256(action.args),
                              action.policy_version, action.human_grant)
        return hmac.compare_digest(expected, action.token) and args_sha256(action.args) == action.args_sha256


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(arguments)"
    return f"{where}: {first['msg']}"


class Validator:
    """Checks candidates against the policy, the tool schemas and the budget."""

    def __init__(self, policy: Policy, budget: Budget, signer: Signer,
                 tools: Mapping[str, ToolSpec] = TOOLS) -> None:
        self.policy = policy
        self.budget = budget
        self.signer = signer
        self.tools = dict(tools)

    def _check(self, index: int, cand: Mapping[str, Any], state: RunState, now: float,
               grant: bool) -> tuple[Finding, dict[str, Any]]:
        action = str(cand.get("action", ""))
        args = cand.get("args", {})

        def finding(verdict: str, reason: str = "", code: FindingCode | None = None) -> tuple[Finding, dict[str, Any]]:
            return Finding(index=index, action=action, verdict=verdict, reason=reason, code=code), dict(args or {})

        spec = self.tools.get(action)
        if spec is None or not spec.planner_visible or action not in self.policy.allowlist:
            allowed = ", ".join(a for a in self.policy.allowlist if a in self.tools)
            code: FindingCode = "unknown_tool" if spec is None or not spec.planner_visible else "not_allowlisted"
            return finding("rejected", f"'{action}' is not an allowed tool (allowed: {allowed})", code)
        if not isinstance(args, dict):
            return finding("rejected", f"arguments of {action} must be an object, got {type(args).__name__}",
                           "bad_args")
        try:
            spec.args.model_validate(args)
        except ValidationError as exc:
            return finding("rejected", f"arguments of {action} do not fit its schema: {_first_error(exc)}",
                           "bad_args")
        if looks_sensitive(args):
            return finding("rejected", f"arguments of {action} contain personal data (an id or phone number)",
                           "personal_data")
        query = spec.status_query  # a write names its effect (a key) and the effect's digest
        saved = state.drafts.get(query.key(args)) if query is not None else None
        if query is not None and saved is not None and saved.get("sha256") == query.digest(args):
            return finding("rejected", f"draft {query.key(args)!r} is already saved with this text in this run",
                           "already_saved")
        if not spec.side_effect and args.get("id") in self.policy.forbidden_records and not grant:
            return finding("denied", f"record {args['id']} is forbidden by policy {self.policy.version}",
                           "forbidden")
        if state.tool_calls + 1 > self.budget.max_tool_calls:
            return finding("over_budget", f"tool calls: {state.tool_calls} used of {self.budget.max_tool_calls}",
                           "budget")
        late = self.budget.out_of_time(state, now)
        if late:
            return finding("over_budget", late, "budget")
        return finding("allowed")

    def validate(self, state: RunState, candidates: Sequence[Mapping[str, Any]], *, now: float,
                 action_id: str | None = None, grant: bool = False, proposed_under: str | None = None) -> Validation:
        """The verdict on a proposal. ``action_id``/``grant`` re-validate an action a human approved;
        ``proposed_under`` is the policy version the planner was shown (a proposal made under another
        policy is stale and rejected as a whole)."""
        if proposed_under is not None and proposed_under != self.policy.version:
            reason = (f"the proposal was made under policy {proposed_under!r}, but policy "
                      f"{self.policy.version!r} is in force; plan again")
            return Validation(verdict="rejected", reason=reason, code="policy_version", findings=[
                Finding(index=i, action=str(c.get("action", "")), verdict="rejected", reason=reason,
                        code="policy_version")
                for i, c in enumerate(candidates)])
        findings: list[Finding] = []
        chosen: tuple[Finding, dict[str, Any]] | None = None
        for index, cand in enumerate(candidates):
            found = self._check(index, cand, state, now, grant)
            findings.append(found[0])
            if found[0].verdict == "allowed":
                chosen = found
                break
        stored = [Finding(index=f.index, action=f.action, verdict=f.verdict, reason=redact(f.reason), code=f.code)
                  for f in findings]
        aid = action_id or f"a{state.actions + 1}"
        if chosen is not None:
            finding, args = chosen
            spec = self.tools[finding.action]
            digest = args_sha256(args)
            token = self.signer.token(state.run_id, aid, spec.name, digest, self.policy.version, grant)
            return Validation(verdict="allowed", findings=stored, action_id=aid, tool=spec.name, args=args,
                              args_sha256=digest, side_effect=spec.side_effect,
                              policy_version=self.policy.version, token=token, human_grant=grant)
        verdicts = [f.verdict for f in findings]
        for verdict in ("over_budget", "denied", "rejected"):
            if verdict in verdicts:
                first = findings[verdicts.index(verdict)]
                break
        else:
            return Validation(verdict="rejected", findings=stored, reason="the proposal held no candidate",
                              code="no_candidate")
        if first.verdict == "denied":
            cand = candidates[first.index]
            args = dict(cand.get("args", {}))
            spec = self.tools[first.action]
            return Validation(verdict="denied", findings=stored, action_id=aid, tool=spec.name, args=args,
                              args_sha256=args_sha256(args), side_effect=spec.side_effect,
                              policy_version=self.policy.version, reason=first.reason, code=first.code)
        return Validation(verdict=first.verdict, findings=stored, reason=redact(first.reason), code=first.code)
