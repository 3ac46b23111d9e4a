"""The one interface every LLM backend implements, and the record of one call.

The machines only need "complete this prompt, maybe under a JSON schema, with these decoding
parameters" plus provenance. No streaming or tool calls: every backend must behave alike for a
fair experiment. A conversation is sent in both forms: ``prompt`` (the plain transcript a base
model reads) and ``messages`` (the turns for a chat model's template, :class:`Request`).
"""

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
    """What one call returned, with the counts an experiment reports.

    ``seconds``: wall time of the call (for a replayed call, as recorded; see ``replayed``).
    ``grammar_used``: a grammar really constrained decoding. ``retries``: HTTP requests re-sent, barrier
    included. ``cached_tokens``: prompt tokens read from a KV cache, 0 where none or unknown.
    """

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
    """One call's inputs; the cassette key is a hash of this plus the model's sha256.

    ``messages``: a conversation's turns (alternating user and assistant, ending with the user's) that
    a chat model reads through its template instead of ``prompt``; a base model, or a server without a
    kind, reads ``prompt``, the same turns as one transcript.
    """

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
    """Complete prompts; describe where the answers come from.

    Implementations: :class:`~labkit.llm.llamacpp.LlamaCppBackend` (in process),
    :class:`~labkit.llm.http.OpenAICompatBackend` (server), :class:`~labkit.llm.cassette.RecordingBackend`
    and :class:`~labkit.llm.cassette.ReplayBackend` (cassettes), :class:`~labkit.llm.fake.ScriptedBackend`.
    """

    kind: str = "abstract"

    def complete(self, prompt: str, *, max_tokens: int = 64, stop: list[str] | tuple[str, ...] | None = None,
                 schema: dict[str, Any] | None = None, temperature: float = 0.0, seed: int = 0,
                 messages: Sequence[Turn] = ()) -> Completion:
        """Complete ``prompt`` (plain completion, no chat template); ``messages`` as in :class:`Request`.

        ``schema``: a JSON schema that constrains decoding where the backend can (``grammar_used``); still
        validate the text (:func:`labkit.llm.parse.parse_json_output`), as not every keyword is enforced.
        ``temperature`` 0 is greedy; above 0, the same ``seed`` gives the same sample.
        """
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
    """A backend that adds something around another one (recording, metering, a lock).

    It answers for the inner backend in everything but the call itself, so a wrapper's cassette keys,
    provenance and sampling are those of the model that really answered.
    """

    kind = "wrapped"

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    def sampling(self) -> dict[str, Any]:
        return self.inner.sampling()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def model_id(self) -> str:
        return self.inner.model_id()

