"""Cassettes: every call of a live backend recorded to JSONL and replayed without the model.

A key hashes what determines the answer (prompt, schema, decoding, model sha256); an unknown key in replay
raises :class:`CassetteMiss` and never asks a model. Lines: ``{"type": "backend"}`` when the description
changes, then one ``"call"`` each."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.llm.backend import Backend, Completion, Request, WrappedBackend
from labkit.llm.errors import CassetteError, CassetteMiss
from labkit.llm.grammar import canonical_schema


def cassette_key(request: Request, model_id: str) -> str:
    """sha256 over the canonical JSON of (prompt, schema, decoding parameters, model id, a conversation's turns)."""
    schema = None
    if request.schema is not None:
        schema = hashlib.sha256(canonical_schema(request.schema).encode()).hexdigest()
    material = {"prompt": request.prompt, "schema_sha256": schema, "max_tokens": request.max_tokens,
                "stop": list(request.stop), "temperature": request.temperature, "seed": request.seed,
                "sampling": request.sampling, "model": model_id}
    if request.messages:  # only then: the keys of calls without turns stay what they were
        material["messages"] = [list(turn) for turn in request.messages]
    return hashlib.sha256(json.dumps(material, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _request_from(data: dict[str, Any]) -> Request:
    return Request(prompt=data["prompt"], max_tokens=int(data["max_tokens"]),
                   stop=tuple(data.get("stop") or ()), schema=data.get("schema"),
                   temperature=float(data["temperature"]), seed=int(data["seed"]), sampling=dict(data["sampling"]),
                   messages=tuple((role, text) for role, text in data.get("messages") or ()))


def read_cassette(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return (backend descriptions, call records) of a cassette; a damaged line is an error."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CassetteError(f"cannot read cassette {p}: {exc.strerror or exc}",
                            "check the path; record a cassette with RecordingBackend first.") from exc
    backends: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            kind = record["type"]
            if kind == "call" and not (isinstance(record["key"], str) and "text" in record["completion"]
                                       and "prompt" in record["request"]):
                raise KeyError("key, completion.text or request.prompt")
        except (ValueError, KeyError, TypeError) as exc:
            raise CassetteError(f"cassette {p}, line {number}: not a cassette record ({exc})",
                                "the file was edited or cut off; re-record it, or remove that line.") from exc
        if kind == "backend":
            backends.append(record.get("describe", {}))
        elif kind == "call":
            calls.append(record)
    return backends, calls


class RecordingBackend(WrappedBackend):
    """Passes every call to ``inner`` and appends it to the cassette at ``path`` (failures are not recorded;
    replay serves a key's latest). Recorders sharing one file must share one ``lock``."""

    kind = "recording"

    def __init__(self, inner: Backend, path: str | Path, *, lock: threading.Lock | None = None) -> None:
        super().__init__(inner)
        self.path = Path(path)
        self._lock = lock or threading.Lock()
        self._last_describe: dict[str, Any] | None = None
        with self._lock:
            if self.path.exists():
                backends, _ = read_cassette(self.path)  # refuse to append to a damaged cassette
                self._last_describe = backends[-1] if backends else None

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "recording_to": str(self.path)}

    def _append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")
            handle.flush()

    def _complete(self, request: Request) -> Completion:
        completion = self.inner._complete(request)
        description = self.inner.describe()
        model = self.inner.model_id()
        call = {"type": "call", "key": cassette_key(request, model), "model": model,
                "request": request.to_dict(), "completion": completion.to_dict()}
        if description.get("server"):
            call["server"] = description["server"]
        with self._lock:
            if description != self._last_describe:
                self._append({"type": "backend", "describe": description})
                self._last_describe = description
            self._append(call)
        return completion


class ReplayBackend(Backend):
    """Serves completions from a cassette (``replayed=True``, recorded timings); ``model_id`` picks one
    model when it holds several; an unrecorded call raises :class:`CassetteMiss`."""

    kind = "replay"

    def __init__(self, path: str | Path, *, model_id: str | None = None) -> None:
        self.path = Path(path)
        self.backends, calls = read_cassette(self.path)
        models = sorted({str(c.get("model")) for c in calls})
        if model_id is None and len(models) > 1:
            raise CassetteError(f"cassette {self.path} holds calls of {len(models)} models: "
                                f"{', '.join(models)}",
                                "pass model_id= to choose which model's recordings to replay.")
        self._model = model_id or (models[0] if models else "none-recorded")
        self._calls = {c["key"]: c for c in calls}
        sample = next((c for c in calls if c.get("model") == self._model), None)
        self._sampling = dict(sample["request"]["sampling"]) if sample else super().sampling()
        self.hits = 0

    def __len__(self) -> int:
        return len(self._calls)

    def sampling(self) -> dict[str, Any]:
        return dict(self._sampling)

    def model_id(self) -> str:
        return self._model

    def describe(self) -> dict[str, Any]:
        recorded = next((b for b in reversed(self.backends) if b.get("model_sha256") == self._model), None)
        recorded = recorded or (self.backends[-1] if self.backends else {})
        return {**recorded, "backend": self.kind, "recorded_backend": recorded.get("backend"),
                "cassette": str(self.path), "model_sha256": recorded.get("model_sha256", self._model)}

    def _complete(self, request: Request) -> Completion:
        key = cassette_key(request, self._model)
        record = self._calls.get(key)
        if record is None:
            raise CassetteMiss(key, request.prompt, str(self.path))
        self.hits += 1
        return Completion.from_dict({**record["completion"], "replayed": True})

    def requests(self) -> list[Request]:
        """The recorded requests (e.g. to list what a cassette can answer)."""
        return [_request_from(c["request"]) for c in self._calls.values()]


class ReusingBackend(WrappedBackend):
    """Answers a call from earlier cassettes where that very request was answered (a best-of-k arm's
    first try is the greedy arm), else asks ``inner``; ``hits`` and ``misses`` count them."""

    kind = "reusing"

    def __init__(self, inner: Backend, cassettes: list[Path]) -> None:
        super().__init__(inner)
        self.cassettes = [Path(p) for p in cassettes]
        model = inner.model_id()
        self._calls: dict[str, dict[str, Any]] = {}
        for path in self.cassettes:
            _, calls = read_cassette(path)
            self._calls.update((c["key"], c) for c in calls if c.get("model") == model)
        self.hits = self.misses = 0

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "reusing": [str(p) for p in self.cassettes]}

    def _complete(self, request: Request) -> Completion:
        record = self._calls.get(cassette_key(request, self.inner.model_id()))
        if record is None:
            self.misses += 1
            return self.inner._complete(request)
        self.hits += 1
        return Completion.from_dict({**record["completion"], "replayed": True})


def reuse_counts(path: str | Path) -> tuple[int, int]:
    """(calls answered from an earlier recording, calls asked of the model) in a cassette recorded through a
    :class:`ReusingBackend`: what ``--reuse`` saved, read from the cassette itself."""
    _, calls = read_cassette(path)
    reused = sum(bool(c["completion"].get("replayed")) for c in calls)
    return reused, len(calls) - reused


def reusing(live: Backend, folder: Path, *, server: bool) -> ReusingBackend:
    """``live`` answering every request already recorded in ``folder``'s cassettes from there (``--reuse`` of
    ``labkit compare code`` and ``labkit compare dialog``): a recording's cassettes lie in ``cassettes/``."""
    if server:
        raise LabkitError("--reuse serves answers of the in-process model file", "drop --server, or drop --reuse.")
    cassettes = sorted((Path(folder) / "cassettes").glob("*.jsonl"))
    if not cassettes:
        raise LabkitError(f"no cassettes in {Path(folder) / 'cassettes'}",
                          "give a folder recorded by labkit with the same model (it holds cassettes/*.jsonl).")
    return ReusingBackend(live, cassettes)
