"""Exercise 02a: write the validator and the executor's token check.

Fill in the TODOs, then run `labkit check 02a`.
"""

import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError  # noqa: F401 - your answer needs it

# ----------------------------------------------------------------------------- given


class Candidate(BaseModel):
    """One action the planner proposes."""

    action: str
    args: dict[str, Any] = Field(default_factory=dict)
    rationale_summary: str = ""


class Policy(BaseModel):
    """What the run may do; ``version`` is bound into every token."""

    version: str = "policy-1"
    allowlist: tuple[str, ...] = ("read_record", "save_draft")


class ReadRecordArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(pattern=r"^R\d{2,4}$")


class SaveDraftArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    text: str = Field(min_length=1, max_length=4000)
    key: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class DeleteDraftsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


SCHEMAS: dict[str, type[BaseModel]] = {
    "read_record": ReadRecordArgs,
    "save_draft": SaveDraftArgs,
    "delete_drafts": DeleteDraftsArgs,  # the kit knows it; no lesson policy allows it
}


@dataclass(frozen=True)
class Token:
    action_id: str
    action: str
    args_sha256: str
    policy_version: str
    signature: str


@dataclass(frozen=True)
class Denial:
    kind: Literal["not_allowed", "bad_args", "stale_policy", "over_budget"]
    reason: str


def args_digest(args: dict[str, Any]) -> str:
    """SHA-256 of the arguments as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sign(secret: bytes, action_id: str, action: str, digest: str, policy_version: str) -> str:
    """The HMAC that binds a token to its action, arguments and policy version."""
    message = json.dumps([action_id, action, digest, policy_version]).encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


# ----------------------------------------------------------------------------- yours


def validate(candidate: Candidate, policy_version: str, *, policy: Policy, tool_calls_left: int,
             action_id: str, secret: bytes) -> Token | Denial:
    """A token for the candidate, or the first denial that applies (allowlist, schema, policy, budget)."""
    # TODO: check the allowlist, the argument schema (catch ValidationError), the policy version and the budget,
    #       in that order; if all hold, return a Token signed with sign(...)
    digest = args_digest(candidate.args)
    return Token(action_id, candidate.action, digest, policy.version, "")


def choose(candidates: Sequence[Candidate], policy_version: str, *, policy: Policy, tool_calls_left: int,
           action_id: str, secret: bytes) -> Token | list[Denial]:
    """The token of the first candidate that passes, or every candidate's denial."""
    # TODO: validate each candidate in order
    return []


def executor_accepts(token: Token, action: str, args: dict[str, Any], policy_version: str, secret: bytes) -> bool:
    """True only for a genuine token made for exactly this action, these arguments and this policy."""
    # TODO: compare action, argument digest and policy version, then recompute the signature
    return True
