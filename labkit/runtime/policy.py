"""What a run may do (``Policy``) and spend (``Budget``): plain data in ``run_started``, so resume and replay
use the same limits. A spent budget ends as ``incomplete`` (``needs_review`` with a write unknown)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from labkit.runtime.state import RunState
from labkit.runtime.tools import TOOLS


class Policy(BaseModel):
    """The permissions a run holds. Its ``version`` is bound into every validation token."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str = "policy-1"
    allowlist: tuple[str, ...] = tuple(n for n, t in TOOLS.items() if t.planner_visible)  # every offered tool
    forbidden_records: tuple[str, ...] = ()
    escalate_denials: bool = True  # denied -> WAITING_HUMAN (True) or FAILED (False)


class Budget(BaseModel):
    """Limits of one run. ``None`` means no limit of that kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: int = Field(20, ge=1, description="planner calls")
    max_tokens: int | None = Field(None, ge=0, description="prompt + completion tokens over all planner calls")
    max_cost: float | None = Field(None, ge=0)
    max_seconds: float | None = Field(600.0, gt=0, description="wall-clock seconds of work (waits for people "
                                      "and time stopped before a resume are not counted)")
    max_retries: int = Field(3, ge=0, description="retries per state: replans, tool retries, status queries")
    max_tool_calls: int = Field(30, ge=1)
    max_wait_seconds: float | None = Field(None, gt=0, description="how long a paused run waits for a person")

    def exhausted(self, state: RunState, now: float) -> str | None:
        """Why the run may not spend more (steps, tokens, cost or time), or None."""
        if state.planner_calls >= self.max_steps:
            return f"steps: {state.planner_calls} planner calls used of {self.max_steps}"
        if self.max_tokens is not None and state.tokens >= self.max_tokens:
            return f"tokens: {state.tokens} used of {self.max_tokens}"
        if self.max_cost is not None and state.cost >= self.max_cost:
            return f"cost: {state.cost:g} used of {self.max_cost:g}"
        return self.out_of_time(state, now)

    @staticmethod
    def elapsed(state: RunState, now: float) -> float:
        """Seconds the run has been working: since its start, less the time it waited for people and
        the time it lay stopped before a resume (``Resumed`` events)."""
        waiting = now - state.waiting_since if state.waiting_since >= 0 else 0.0
        return now - state.started_at - state.waited - waiting - state.down

    def out_of_time(self, state: RunState, now: float) -> str | None:
        used = self.elapsed(state, now)
        if self.max_seconds is not None and used >= self.max_seconds:
            return f"time: {used:.1f} s of work used of {self.max_seconds:g}"
        return None

    def waited_too_long(self, state: RunState, now: float) -> str | None:
        if self.max_wait_seconds is not None and state.waiting_since >= 0:
            waited = now - state.waiting_since
            if waited >= self.max_wait_seconds:
                return f"no decision from a person within {self.max_wait_seconds:g} s (waited {waited:.1f} s)"
        return None
