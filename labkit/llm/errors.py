"""Errors of the LLM backend layer, each a :class:`labkit.core.errors.LabkitError`."""

from __future__ import annotations

from labkit.core.errors import LabkitError


class BackendError(LabkitError):
    """A backend could not produce a completion (bad request, model refused, context too small)."""


class ModelFileError(BackendError):
    """A model file is missing, unreadable, not GGUF, or llama.cpp could not load it."""


class GrammarError(BackendError):
    """A JSON schema could not be turned into a llama.cpp grammar that really enforces it."""


class ServerError(BackendError):
    """An OpenAI-compatible server was down, too slow, or answered with an error; ``attempts`` says
    how many requests were sent before giving up."""

    def __init__(self, message: str, hint: str | None = None, *, attempts: int = 0) -> None:
        self.attempts = attempts
        super().__init__(message, hint)


class ServerDown(ServerError):
    """A server gave no answer after every retry (down, or too slow): the recording stops, it is no run's result."""


class CassetteMiss(BackendError):
    """A replayed prompt is not in the cassette; replay never falls back to a live model."""

    def __init__(self, key: str, prompt: str, cassette: str) -> None:
        self.key, self.prompt, self.cassette = key, prompt, cassette
        excerpt = prompt if len(prompt) <= 80 else prompt[:60] + " … " + prompt[-17:]
        super().__init__(
            f"cassette {cassette} has no recording for key {key[:16]}… (prompt {excerpt!r})",
            "record it first (RecordingBackend around a live backend), or check that the prompt, "
            "schema, decoding parameters and model are exactly the ones recorded.",
        )


class CassetteError(BackendError):
    """A cassette file could not be read (bad JSON line, wrong format)."""
