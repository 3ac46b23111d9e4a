"""The executor: runs a validated action, and nothing else.

It recomputes the validation token from the action it is handed and refuses the action if the
token is missing or does not match (other arguments, another tool, another policy version,
another run). Faults are applied here, between the executor and the tool, because that is where
real timeouts, denials and duplicate deliveries happen.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from labkit.errors import LabkitError
from labkit.runtime.faults import Fault
from labkit.runtime.state import ActionState
from labkit.runtime.tools import TOOLS, CallContext, ToolAnswer, ToolSpec, World
from labkit.runtime.validator import Signer, args_sha256


def kill_runner(reason: str) -> None:
    """End this process the way a power cut or an OOM kill would: SIGKILL, no clean-up, no flush.

    The ``crash`` fault calls it; whatever the log and the draft area hold at that moment is what a
    resumed run finds. Tests and the fuzzer pass their own ``die`` that raises instead."""
    os.kill(os.getpid(), signal.SIGKILL)


class UnauthorizedAction(LabkitError):
    """The executor was handed an action without a valid validation token."""


@dataclass(frozen=True)
class Delivery:
    """What came back from one execution: the answers (two for a duplicate delivery) and the
    digest of the arguments the tool actually ran with."""

    answers: tuple[ToolAnswer, ...]
    ran_args_sha256: str


class Executor:
    """Runs token-bearing actions against a :class:`World`."""

    def __init__(self, world: World, signer: Signer, policy_version: str,
                 tools: Mapping[str, ToolSpec] = TOOLS, die: Callable[[str], None] = kill_runner) -> None:
        self.world = world
        self.die = die
        self.signer = signer
        self.policy_version = policy_version
        self.tools = dict(tools)

    def authorize(self, run_id: str, action: ActionState) -> None:
        """Raise :class:`UnauthorizedAction` unless ``action`` carries a token for exactly itself."""
        if action.tool not in self.tools:
            raise UnauthorizedAction(f"unknown tool {action.tool!r}", "only validated tools can run.")
        if not self.signer.verify(run_id, action):
            raise UnauthorizedAction(
                f"action {action.action_id} ({action.tool}) has no valid validation token",
                "send every action through the validator; the executor runs only what it allowed.")
        if action.policy_version != self.policy_version:
            raise UnauthorizedAction(
                f"action {action.action_id} was validated under policy {action.policy_version!r}, "
                f"the executor enforces {self.policy_version!r}", "validate the action again.")

    def execute(self, run_id: str, action: ActionState, fault: Fault | None = None) -> Delivery:
        """Authorize, then run the tool once (with ``fault`` applied, if any)."""
        self.authorize(run_id, action)
        return self._run_tool(action, fault)

    def _run_tool(self, action: ActionState, fault: Fault | None) -> Delivery:
        """Run the tool without any check. Private on purpose: :meth:`execute` is the only way in, so
        nothing can reach a tool around the token (a test that breaks the executor overrides this)."""
        spec = self.tools[action.tool]
        args = spec.args.model_validate(dict(action.args))
        ctx = CallContext(action_id=action.action_id, human_grant=action.human_grant)
        kind = fault.kind if fault else None
        if kind == "crash":  # the runner dies inside the call, before or after the tool acted
            if not fault.landed:  # type: ignore[union-attr]
                self.die(f"crash before {spec.name} ran")
            getattr(self.world, spec.name)(args, ctx)
            self.die(f"crash after {spec.name} ran")
            raise RuntimeError("the crash fault's die() returned; it must end the runner")
        if kind == "read_timeout" or (kind == "write_timeout" and not fault.landed):  # type: ignore[union-attr]
            answer = ToolAnswer("timeout", detail="no answer before the deadline")
        elif kind == "write_timeout":
            answer = self.world.save_draft(args, ctx, lose_reply=True)  # type: ignore[arg-type]
        elif kind == "denied":
            answer = ToolAnswer("denied", detail="permission denied by the data owner (injected)")
        else:
            answer = getattr(self.world, spec.name)(args, ctx)
        answers = (answer, answer) if kind == "duplicate_result" else (answer,)
        return Delivery(answers, args_sha256(dict(action.args)))
