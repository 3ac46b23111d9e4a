"""A scripted backend for unit tests of logic (retries, budgets, broken JSON): it never runs a model."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from labkit.llm.backend import Backend, Completion, Request
from labkit.llm.errors import BackendError


class ScriptedBackend(Backend):
    """Answers with the scripted texts in order, or ``script(request)``; tokens are whitespace words,
    ``seconds`` is ``seconds_per_call``, and every request is kept in :attr:`requests`."""

    kind = "scripted"

    def __init__(self, script: Iterable[str] | Callable[[Request], str], *, seconds_per_call: float = 0.0,
                 name: str = "scripted") -> None:
        self._fn = script if callable(script) else None
        self._texts = [] if callable(script) else list(script)
        self.seconds_per_call = seconds_per_call
        self.name = name
        self.requests: list[Request] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": self.name, "model_sha256": None,
                "token_counts": "whitespace words", "sampling": self.sampling()}

    def _complete(self, request: Request) -> Completion:
        if self._fn is not None:
            text = self._fn(request)
        else:
            index = len(self.requests)
            if index >= len(self._texts):
                raise BackendError(f"the scripted backend has only {len(self._texts)} answer(s); call "
                                   f"{index + 1} asked for another (prompt {request.prompt[:60]!r})",
                                   "add answers to the script, or check why the code calls the model again.")
            text = self._texts[index]
        self.requests.append(request)
        words = text.split()[: request.max_tokens]
        truncated = len(text.split()) > request.max_tokens
        return Completion(text=text if not truncated else " ".join(words),
                          prompt_tokens=len(request.prompt.split()), completion_tokens=len(words),
                          seconds=self.seconds_per_call, grammar_used=False,
                          finish_reason="length" if truncated else "stop")
