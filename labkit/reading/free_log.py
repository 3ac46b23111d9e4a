"""What a prompt-only loop's log says, for ``labkit replay``: each step's ``model_asked``, its action's
``tool_result`` (none: arguments refused) and one ``loop_ended``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from labkit.core.events import Event
from labkit.core.log_kinds import LogKind
from labkit.reading.events import LoopEnded, ModelAsked
from labkit.runtime.events import ToolResult

_TYPES = frozenset({"model_asked", "tool_result", "loop_ended"})
_ENDINGS = {"said_done": "the model said done", "step_budget": "the step budget ran out"}


def is_free_loop_log(events: Sequence[Event]) -> bool:
    """A log of model answers and tool results only, with at least one model call: the free loop's."""
    return bool(events) and {e.type for e in events} <= _TYPES and any(isinstance(e, ModelAsked) for e in events)


def _one_line(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def summarize_free_loop(events: Sequence[Event]) -> dict[str, Any]:
    """The run told from its log: how it ended, its counts, and one line per step."""
    asked = [e for e in events if isinstance(e, ModelAsked)]
    results = {e.action_id: e for e in events if isinstance(e, ToolResult)}
    ended = next((e for e in events if isinstance(e, LoopEnded)), None)
    steps = []
    for e in asked:
        said = _one_line(e.answer)
        result = results.get(f"free-{e.step}")
        if e.problem:
            steps.append(f"step {e.step}: {said} -> refused: {_one_line(e.problem)}")
        elif result is not None:
            detail = f" ({_one_line(result.detail)})" if result.detail else ""
            steps.append(f"step {e.step}: {said} -> {result.tool} {result.outcome}{detail}")
        elif ended is not None and ended.stop == "said_done" and e.step == ended.steps - 1:
            steps.append(f"step {e.step}: {said} -> done")
        else:
            steps.append(f"step {e.step}: {said} -> not run: its arguments were refused")
    saved = [str(r.data.get("key")) for r in results.values() if r.side_effect and r.outcome == "ok"
             and r.data.get("key")]
    how = (f"{_ENDINGS[ended.stop]} after {ended.steps} step(s)" if ended is not None
           else "no loop_ended event: the loop stopped before it finished")
    return {"run_id": events[0].run_id if events else "", "ended": how, "steps": ended.steps if ended else len(asked),
            "model_calls": len(asked), "answers_refused": sum(1 for e in asked if e.problem),
            "prompt_tokens": sum(e.prompt_tokens for e in asked),
            "completion_tokens": sum(e.completion_tokens for e in asked),
            "http_retries": sum(e.http_retries for e in asked), "tool_calls": len(results),
            "drafts_saved": saved, "by_step": steps}


LOG_KINDS = {"free loop": LogKind("free loop", is_free_loop_log, summarize_free_loop)}
