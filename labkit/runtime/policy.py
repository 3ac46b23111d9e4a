"""What a run may do (``Policy``) and how much it may spend (``Budget``).

Both are plain data, stored in the run's ``run_started`` event, so a resumed run and a replay use
the limits the run was started with. A budget that runs out ends the run as ``incomplete`` (or
``needs_review`` when a write's outcome is still unknown), never as a success.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from labkit.runtime.state import RunState


class Policy(BaseModel):
    """The permissions a run holds. Its ``version`` is bound into every validation token."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str = "policy-1"
    allowlist: tuple[str, ...] = ("read_record", "save_draft")
    forbidden_records: tuple[str, ...] = ()
    escalate_denials: bool = True  # denied -> WAITING_HUMAN (True) or FAILED (False)


class Budget(BaseModel):
    """Limits of one run. ``None`` means no limit of that kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: int = Field(20, ge=1, description="planner calls")
    max_tokens: int | None = Field(None, ge=0, description="prompt + completion tokens over all planner calls")
    max_cost: float | None = Field(None, ge=0)
    max_seconds: float | None = Field(600.0, gt=0, description="wall-clock seconds since the run started")
    max_retries: int = Field(3, ge=0, description="retries per state: replans, tool retries, status queries")
    max_tool_calls: int = Field(30, ge=1)

    def exhausted(self, state: RunState, now: float) -> str | None:
        """Why the run may not spend more (steps, tokens, cost or time), or None."""
        if state.planner_calls >= self.max_steps:
            return f"steps: {state.planner_calls} planner calls used of {self.max_steps}"
        if self.max_tokens is not None and state.tokens >= self.max_tokens:
            return f"tokens: {state.tokens} used of {self.max_tokens}"
        if self.max_cost is not None and state.cost >= self.max_cost:
            return f"cost: {state.cost:g} used of {self.max_cost:g}"
        return self.out_of_time(state, now)

    def out_of_time(self, state: RunState, now: float) -> str | None:
        if self.max_seconds is not None and now - state.started_at >= self.max_seconds:
            return f"time: {now - state.started_at:.1f} s elapsed of {self.max_seconds:g}"
        return None
