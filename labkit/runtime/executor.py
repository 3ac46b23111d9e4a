"""The executor: runs a validated action, once per attempt, and nothing else.

:meth:`Executor.authorize` requires EXECUTING with the action in flight and a matching token, and issues
one :class:`Attempt` per attempt number; :meth:`Executor.execute` runs only such an attempt, once. Faults
strike here through :func:`labkit.runtime.inject.deliver`."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from labkit.core.errors import LabkitError
from labkit.runtime.events import RefusalCode
from labkit.runtime.faults import Fault
from labkit.runtime.inject import deliver
from labkit.runtime.state import ActionState, RunState
from labkit.runtime.tools import TOOLS, CallContext, ToolAnswer, ToolSpec, World
from labkit.runtime.validator import Signer, args_sha256


def kill_runner(reason: str) -> None:
    """End this process as a power cut would: SIGKILL, no clean-up (the ``crash`` fault; tests pass a ``die``
    that raises)."""
    os.kill(os.getpid(), signal.SIGKILL)


class UnauthorizedAction(LabkitError):
    """The executor refused an attempt; ``code`` says why (see ``ExecutionRefused``)."""

    def __init__(self, message: str, hint: str, code: RefusalCode) -> None:
        self.code: RefusalCode = code
        super().__init__(message, hint)


@dataclass(frozen=True)
class Delivery:
    """What came back from one execution: the answers (two for a duplicate delivery) and the
    digest of the arguments the tool actually ran with."""

    answers: tuple[ToolAnswer, ...]
    ran_args_sha256: str


@dataclass(frozen=True, eq=False)
class Attempt:
    """One authorized execution: attempt ``number`` of ``action`` in ``run_id``, issued only by
    :meth:`Executor.authorize` and run at most once."""

    run_id: str
    action: ActionState
    number: int


class Executor:
    """Runs token-bearing actions against a :class:`World`, one authorized attempt at a time."""

    def __init__(self, world: World, signer: Signer, policy_version: str,
                 tools: Mapping[str, ToolSpec] = TOOLS, die: Callable[[str], None] = kill_runner) -> None:
        self.world = world
        self._die = die  # private: the executor's only public ways in are authorize() and execute()
        self.signer = signer
        self.policy_version = policy_version
        self.tools = dict(tools)
        self._authorized: set[tuple[str, str, str, int]] = set()  # (run, action, token, attempt) ever issued
        self._issued: dict[tuple[str, str, int], Attempt] = {}  # issued and not run yet

    def authorize(self, state: RunState) -> Attempt:
        """The next attempt of the action in flight, if the run may execute it now; else raise
        :class:`UnauthorizedAction` (nothing runs, nothing is remembered)."""
        action = state.action
        if state.status != "EXECUTING" or action is None:
            what = f"action {action.action_id} ({action.tool})" if action else "an action"
            raise UnauthorizedAction(
                f"{what} was handed to the executor while the run is in {state.status or 'no state'}",
                "the executor runs only the action in flight while the run is in EXECUTING.", "out_of_state")
        if action.tool not in self.tools:
            raise UnauthorizedAction(f"unknown tool {action.tool!r}", "only validated tools can run.", "unknown_tool")
        if not action.token:
            raise UnauthorizedAction(f"action {action.action_id} ({action.tool}) carries no validation token",
                                     "send every action through the validator; the executor runs only what "
                                     "it allowed.", "no_token")
        if not self.signer.verify(state.run_id, action):
            raise UnauthorizedAction(
                f"action {action.action_id} ({action.tool}) has no valid validation token",
                "send every action through the validator; the executor runs only what it allowed.", "bad_token")
        if action.policy_version != self.policy_version:
            raise UnauthorizedAction(
                f"action {action.action_id} was validated under policy {action.policy_version!r}, "
                f"the executor enforces {self.policy_version!r}", "validate the action again.", "policy_version")
        number = action.attempts + 1
        key = (state.run_id, action.action_id, action.token, number)
        if key in self._authorized:
            raise UnauthorizedAction(
                f"attempt {number} of action {action.action_id} ({action.tool}) was already authorized once",
                "an attempt runs at most once; a retry is a new attempt of a run state that recorded the "
                "previous one.", "replayed")
        self._authorized.add(key)
        attempt = Attempt(state.run_id, action, number)
        self._issued[(state.run_id, action.action_id, number)] = attempt
        return attempt

    def execute(self, attempt: Attempt, fault: Fault | None = None) -> Delivery:
        """Run the tool once for an attempt :meth:`authorize` issued (with ``fault`` applied, if any)."""
        key = (attempt.run_id, attempt.action.action_id, attempt.number)
        if self._issued.get(key) is not attempt:
            raise UnauthorizedAction(
                f"attempt {attempt.number} of action {attempt.action.action_id} was not issued by this "
                "executor, or has run already", "ask authorize() for each attempt and run it once.", "replayed")
        del self._issued[key]
        return self._run_tool(attempt.action, fault)

    def _run_tool(self, action: ActionState, fault: Fault | None) -> Delivery:
        """Run the tool without any check. Private on purpose: :meth:`execute` is the only way in, so
        nothing can reach a tool around the token and the attempt (a test that breaks the executor
        overrides this)."""
        spec = self.tools[action.tool]
        args = spec.args.model_validate(dict(action.args))
        ctx = CallContext(action_id=action.action_id, human_grant=action.human_grant)
        answers = deliver(spec, self.world, args, ctx, fault, self._die)
        return Delivery(answers, args_sha256(dict(action.args)))
