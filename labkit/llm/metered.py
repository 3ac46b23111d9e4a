"""Per-run counting of model calls (calls, tokens, time, HTTP retries), made at the one place every arm's
calls pass; the code comparison's call budget is built on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from labkit.llm.backend import Backend, Completion, Request, WrappedBackend


@dataclass
class CallNote:
    """One call as a run reports it (no text: that lives in the cassette)."""

    purpose: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    grammar: bool
    finish_reason: str
    retries: int


@dataclass
class Meter:
    """The calls of one run, with the totals a run's record reports."""

    calls: list[CallNote] = field(default_factory=list)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    @property
    def retries(self) -> int:
        return sum(c.retries for c in self.calls)

    @property
    def seconds(self) -> float:
        return sum(c.seconds for c in self.calls)


class MeteredBackend(WrappedBackend):
    """Passes every call to ``inner`` and notes it in :attr:`meter`; ``purpose`` labels the next calls."""

    kind = "metered"

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.meter = Meter()
        self.purpose = ""

    def _complete(self, request: Request) -> Completion:
        out = self.inner._complete(request)
        self.meter.calls.append(CallNote(self.purpose, out.prompt_tokens, out.completion_tokens, out.seconds,
                                         out.grammar_used, out.finish_reason, out.retries))
        return out
