"""Typed, immutable, hash-chained events, parsed through one discriminated union on ``type``.

Each stored event carries ``seq``, ``prev_hash`` and ``hash`` (SHA-256 of its JSON as written, without
the hash, which is the line's first key, so verifying needs no re-serialisation); loads verify every line."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from labkit.core import registry
from labkit.core.errors import EventLogError

SCHEMA_VERSION = 1
GENESIS_HASH = "0" * 64
_HASH_PREFIX = '{"hash":"'
_HASH_PREFIX_B = _HASH_PREFIX.encode()
_HASH_END = len(_HASH_PREFIX) + 64  # index just after the hex digest
_BODY_START = _HASH_END + 2  # skip the '",' that closes the hash field
_EMPTY_HASH_FIELD_B = b'{"hash":"",'  # how an unsealed event's JSON starts
_EMPTY_HASH_END = len(_EMPTY_HASH_FIELD_B)
_HASHED_BRACE = hashlib.sha256(b"{")  # every hashed body starts with the '{' that the cut field leaves


class Event(BaseModel):
    """Fields shared by every event. Subclasses add a ``type`` literal and their own facts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hash: str = ""  # must stay the first field: see the module docstring
    type: str
    schema_version: int = SCHEMA_VERSION
    seq: int = -1
    run_id: str = ""
    at: float = 0.0
    prev_hash: str = ""


_REGISTRY: dict[str, type[Event]] = {}
_adapter: TypeAdapter[Any] | None = None
_declared_loaded = False


def register_event(cls: type[Event]) -> type[Event]:
    """Class decorator: add an event type to the parsing union (modules in ``registry.EVENT_MODULES``)."""
    global _adapter
    tag = cls.model_fields["type"].default
    if not isinstance(tag, str) or not tag:
        raise TypeError(f"{cls.__name__} needs a default for its 'type' literal")
    if tag in _REGISTRY and _REGISTRY[tag] is not cls:
        raise TypeError(f"event type '{tag}' is registered twice ({_REGISTRY[tag].__name__}, {cls.__name__})")
    _REGISTRY[tag] = cls
    _adapter = None
    return cls


def _load_declared() -> None:
    """Import the modules that declare event types (once), so their types are registered."""
    global _declared_loaded
    if not _declared_loaded:
        registry.load(registry.EVENT_MODULES)
        _declared_loaded = True


def event_types() -> dict[str, type[Event]]:
    """Every event type by tag, the declared layers' included (a copy)."""
    _load_declared()
    return dict(_REGISTRY)


def _union_adapter() -> TypeAdapter[Any]:
    global _adapter
    if _adapter is None:  # built once (again after a new registration), with every declared type
        _load_declared()
        members = tuple(_REGISTRY.values())
        union = members[0] if len(members) == 1 else Union[members]  # noqa: UP007 - built at run time
        _adapter = TypeAdapter(Annotated[union, Field(discriminator="type")])
    return _adapter


@register_event
class RunStarted(Event):
    """First event of a run: which table it follows and the versions that shaped it."""

    type: Literal["run_started"] = "run_started"
    table: str
    initial: str
    versions: dict[str, str] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)


@register_event
class Transitioned(Event):
    """The machine moved from ``source`` to ``dest`` because ``trigger`` fired."""

    type: Literal["transitioned"] = "transitioned"
    trigger: str
    source: str
    dest: str
    payload: dict[str, Any] = Field(default_factory=dict)


@register_event
class InvariantViolated(Event):
    """An invariant failed after event ``after_seq``; ``dest`` is where the run was sent (or stayed)."""

    type: Literal["invariant_violated"] = "invariant_violated"
    invariant: str
    detail: str
    after_seq: int
    state: str
    dest: str


class FieldsSet(set):  # type: ignore[type-arg]
    """A read-only ``model_fields_set`` shared by events of one shape (no per-event set for the GC to walk);
    mutating it is refused, and any copy is a plain, private ``set``."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this fields set is shared by many events and cannot change; copy it first")

    add = discard = remove = pop = clear = _refuse
    update = intersection_update = difference_update = symmetric_difference_update = _refuse
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> set[str]:
        return set(self)

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:
        return set, (list(self),)


def describe(event: Event) -> str:
    """One readable line for an event: its seq, type and own fields (no chain fields)."""
    own = {k: v for k, v in event.__dict__.items() if k not in _CHAIN_FIELDS}
    if isinstance(event, Transitioned):
        payload = f" {event.payload}" if event.payload else ""
        return f"#{event.seq} {event.source} --{event.trigger}--> {event.dest}{payload}"
    details = ", ".join(f"{k}={v!r}" for k, v in own.items())
    return f"#{event.seq} {event.type}: {details}"


_CHAIN_FIELDS = frozenset({"hash", "type", "schema_version", "seq", "run_id", "at", "prev_hash"})


def seal(event: Event, *, seq: int, prev_hash: str, run_id: str, at: float,
         owned: bool = False) -> tuple[Event, str]:
    """Give an event its place in a chain; return it sealed and its JSON line. The caller's event is
    copied unless ``owned`` (built for this call alone: sealed in place)."""
    sealed, body = seal_body(event, seq=seq, prev_hash=prev_hash, run_id=run_id, at=at, owned=owned)
    return sealed, sealed_line(sealed, body)


def seal_body(event: Event, *, seq: int, prev_hash: str, run_id: str, at: float,
              owned: bool = False) -> tuple[Event, bytes]:
    """:func:`seal` returning the hashed body, for a store that may write nothing (see :func:`sealed_line`)."""
    fields = event.__dict__  # the same values as the attributes, read without pydantic's attribute hook
    if (fields["hash"] == "" and fields["seq"] == seq and fields["prev_hash"] == prev_hash
            and fields["run_id"] == run_id and fields["at"] == at):
        staged = event if owned else event.model_copy()
    else:
        staged = event.model_copy(update={"seq": seq, "prev_hash": prev_hash, "run_id": run_id, "at": at,
                                          "hash": ""})
    # With the hash still empty, the JSON starts with exactly '{"hash":"",'; the body hashed and
    # written is that JSON without it. Cutting the prefix is cheaper than a serialiser told to skip
    # the field, and gives the same bytes (the hash is the first field: see the module docstring).
    # The serialiser is looked up on the instance: through the class, pydantic's metaclass makes
    # the lookup several times slower.
    full = staged.__pydantic_serializer__.to_json(staged)
    if not full.startswith(_EMPTY_HASH_FIELD_B):  # a subclass that moved the hash field
        raise TypeError(f"{type(staged).__name__} must keep 'hash' as its first field")
    body = full[_EMPTY_HASH_END:]
    hasher = _HASHED_BRACE.copy()  # cheaper than a new hasher, and no '{' + body copy
    hasher.update(body)
    digest = hasher.hexdigest()
    # ``staged`` is a private copy nobody else holds yet, so filling in its hash here is safe. A
    # pydantic model keeps its fields in its ``__dict__``; writing there skips the frozen model's
    # ``__setattr__`` guard (which would refuse) at a tenth of ``object.__setattr__``'s cost.
    staged.__dict__["hash"] = digest
    return staged, body


def sealed_line(sealed: Event, body: bytes) -> str:
    """The line a store writes for an event sealed by :func:`seal_body` with that body (no newline)."""
    return f'{_HASH_PREFIX}{sealed.hash}",{body.decode()}'


def parse_line(line: str | bytes, *, where: str) -> Event:
    """Parse one written event line (str or faster bytes), checking its own hash; ``where`` names it."""
    raw = line.encode() if isinstance(line, str) else line
    if not raw.startswith(_HASH_PREFIX_B) or raw[_HASH_END:_BODY_START] != b'",':
        _explain_unparseable(raw, where)
    try:
        event = _union_adapter().validate_json(raw)
    except ValidationError as exc:
        raise _validation_error(exc, raw, where) from None
    if event.schema_version != SCHEMA_VERSION:
        raise EventLogError(
            f"{where}: event seq {event.seq} has schema_version {event.schema_version}, "
            f"this labkit reads version {SCHEMA_VERSION}",
            "open it with the labkit version that wrote it, or re-record the run.",
            seq=event.seq,
        )
    hasher = _HASHED_BRACE.copy()
    hasher.update(raw[_BODY_START:])
    if hasher.hexdigest() != event.hash:
        raise EventLogError(
            f"{where}: event seq {event.seq} does not match its own hash: it was edited after it was written",
            "restore the original file (the hash chain cannot be repaired by hand), or re-record the run.",
            seq=event.seq,
        )
    return event


def _json_problem(line: bytes, where: str) -> EventLogError | None:
    """If ``line`` is not JSON text at all, the error saying so; else None."""
    try:
        json.loads(line)
    except json.JSONDecodeError as exc:
        return EventLogError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})",
                             "the file is damaged at this line; restore it from a copy.")
    except UnicodeDecodeError:
        return EventLogError(f"{where}: not UTF-8 text", "the file is damaged at this line; restore it from a copy.")
    return None


def _explain_unparseable(line: bytes, where: str) -> None:
    problem = _json_problem(line, where)
    if problem is not None:
        raise problem
    raise EventLogError(f"{where}: a JSON object, but not a sealed labkit event (no leading 'hash' field)",
                        "event logs are written by labkit's stores; do not edit or reformat them by hand.")


def _validation_error(exc: ValidationError, line: bytes, where: str) -> EventLogError:
    problem = _json_problem(line, where)
    if problem is not None:
        return problem
    raw = json.loads(line)
    seq = raw.get("seq") if isinstance(raw, dict) else None
    tag = raw.get("type") if isinstance(raw, dict) else None
    if isinstance(raw, dict) and raw.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        return EventLogError(
            f"{where}: event seq {seq} has schema_version {raw.get('schema_version')}, "
            f"this labkit reads version {SCHEMA_VERSION}",
            "open it with the labkit version that wrote it, or re-record the run.", seq=seq)
    if tag not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        return EventLogError(f"{where}: unknown event type {tag!r} (seq {seq}); known types: {known}",
                             "add the module that declares this event type to EVENT_MODULES in "
                             "labkit/core/registry.py, or load the log with the labkit that wrote it.",
                             seq=seq)
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"][1:]) or "(event)"
    return EventLogError(f"{where}: event seq {seq} of type '{tag}' is invalid: {field}: {first['msg']}",
                         "the event does not match its schema; restore the file or re-record the run.",
                         seq=seq)


def verify_chain(events: list[Event], where: Callable[[int], str]) -> None:
    """Check sequence numbers and hash links (deleted, inserted, reordered events); name the first break."""
    expected_prev = GENESIS_HASH
    for index, event in enumerate(events):
        if event.seq != index:
            what = "missing or reordered" if event.seq > index else "duplicated or reordered"
            raise EventLogError(
                f"{where(index)}: expected event seq {index}, found seq {event.seq} ({what} events)",
                "restore the original file; an event log must never be edited by hand.", seq=event.seq)
        if event.prev_hash != expected_prev:
            raise EventLogError(
                f"{where(index)}: event seq {event.seq} does not link to the event before it "
                "(an event was inserted, removed or replaced before it)",
                "restore the original file; an event log must never be edited by hand.", seq=event.seq)
        expected_prev = event.hash
