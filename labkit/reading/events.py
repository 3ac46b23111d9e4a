"""The facts the comparison adds to a run's log: each model call (the prompt's sha256, not the prompt) and
how a free loop ended; calls are counted once, from the log."""

from __future__ import annotations

from typing import Literal

from labkit.core.events import Event, register_event


@register_event
class ModelAsked(Event):
    """One model call for one decision; ``attempt`` 2+ is a corrective re-ask after ``problem``-s."""

    type: Literal["model_asked"] = "model_asked"
    decision: str  # e.g. "queue", "form", "message-1", "next", "action"
    step: int
    attempt: int
    prompt_sha256: str
    prompt_tokens: int
    completion_tokens: int
    answer: str  # the raw answer, shortened and scrubbed
    problem: str = ""  # why the answer was not accepted ("" when it was)
    grammar: bool = False
    http_retries: int = 0  # HTTP requests re-sent for this call (a server's barrier request included)


@register_event
class LoopEnded(Event):
    """How a free loop stopped: the model said done, or the step budget ran out."""

    type: Literal["loop_ended"] = "loop_ended"
    stop: Literal["said_done", "step_budget"]
    steps: int
