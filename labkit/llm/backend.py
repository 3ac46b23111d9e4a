"""The one interface every LLM backend implements, and the record of one call: complete a prompt, maybe
under a JSON schema, plus provenance; no streaming or tools, so every backend behaves alike. A conversation
is sent both as ``prompt`` (a base model's transcript) and as ``messages`` (a chat model's turns)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from labkit.llm.errors import BackendError

# Sampling knobs that are fixed per backend (not per call); pinned explicitly so that the in-process
# backend and a llama.cpp server sample the same way, and recorded in ``describe()``.
DEFAULT_SAMPLING: dict[str, float | int] = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0}


@dataclass(frozen=True)
class Completion:
    """What one call returned: ``seconds`` (as recorded when ``replayed``), ``grammar_used``, ``retries``
    (HTTP re-sends, barrier included), ``cached_tokens`` (prompt tokens read from a KV cache) and counts."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    grammar_used: bool = False
    finish_reason: str = "stop"
    retries: int = 0
    replayed: bool = False
    cached_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


Role = Literal["user", "assistant"]
Turn = tuple[Role, str]


@dataclass(frozen=True)
class Request:
    """One call's inputs (the cassette key hashes this and the model's sha256); ``messages``: the turns a
    chat model reads through its template instead of ``prompt``."""

    prompt: str
    max_tokens: int = 64
    stop: tuple[str, ...] = ()
    schema: dict[str, Any] | None = None
    temperature: float = 0.0
    seed: int = 0
    sampling: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_SAMPLING))
    messages: tuple[Turn, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON; ``messages`` only when there are some (older cassettes have none)."""
        data = asdict(self)
        data["stop"] = list(self.stop)
        if self.messages:
            data["messages"] = [list(turn) for turn in self.messages]
        else:
            del data["messages"]
        return data


def checked_turns(messages: Sequence[Turn]) -> tuple[Turn, ...]:
    """``messages`` as a tuple, refused unless the turns alternate user/assistant and end with the user's."""
    turns = tuple((str(role), str(text)) for role, text in messages)
    for number, (role, _) in enumerate(turns):
        expected = "user" if number % 2 == 0 else "assistant"
        if role != expected:
            raise BackendError(f"turn {number + 1} of the messages is {role!r}, expected {expected!r}",
                               "alternate user and assistant turns, starting with the user's.")
    if turns and turns[-1][0] != "user":
        raise BackendError("the messages end with the assistant's turn",
                           "end a conversation with the user's turn: the model answers it.")
    return turns  # type: ignore[return-value]


class Backend(abc.ABC):
    """Complete prompts and describe where the answers come from (see :mod:`labkit.llm`)."""

    kind: str = "abstract"

    def complete(self, prompt: str, *, max_tokens: int = 64, stop: list[str] | tuple[str, ...] | None = None,
                 schema: dict[str, Any] | None = None, temperature: float = 0.0, seed: int = 0,
                 messages: Sequence[Turn] = ()) -> Completion:
        """Complete ``prompt`` (no chat template; ``messages`` as in :class:`Request`). ``schema`` constrains
        decoding where the backend can, but validate the text anyway; ``temperature`` 0 is greedy, else
        the same ``seed`` gives the same sample."""
        if max_tokens < 1:
            raise BackendError(f"max_tokens must be at least 1, got {max_tokens}",
                               "ask for at least one token.")
        if temperature < 0:
            raise BackendError(f"temperature must be 0 (greedy) or more, got {temperature}",
                               "use 0 for greedy decoding, or a positive temperature with a seed.")
        request = Request(prompt=prompt, max_tokens=max_tokens, stop=tuple(stop or ()), schema=schema,
                          temperature=float(temperature), seed=int(seed), sampling=self.sampling(),
                          messages=checked_turns(messages))
        return self._complete(request)

    def sampling(self) -> dict[str, Any]:
        """The per-backend sampling knobs that go into every request (and into the cassette key)."""
        return dict(DEFAULT_SAMPLING)

    @abc.abstractmethod
    def _complete(self, request: Request) -> Completion:
        """Run one validated request."""

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """Provenance for a results table: backend kind, model path and sha256, versions, sampling."""

    def model_id(self) -> str:
        """The model identity used in cassette keys: its sha256 where known."""
        info = self.describe()
        return str(info.get("model_sha256") or f"unhashed:{info.get('model', 'unknown')}")


class WrappedBackend(Backend):
    """A backend around another (recording, metering, a lock) that answers for the inner one in everything
    but the call, so cassette keys and provenance are the real model's."""

    kind = "wrapped"

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    def sampling(self) -> dict[str, Any]:
        return self.inner.sampling()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def model_id(self) -> str:
        return self.inner.model_id()

