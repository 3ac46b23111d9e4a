"""Reading a model's JSON answer into the caller's pydantic model, and counting the failures (validated even
after constrained decoding: a grammar misses rules, a server may ignore it, an answer may be cut off)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def parse_json_output(text: str, model: type[M]) -> tuple[M | None, str | None]:
    """``(instance, None)`` if ``text`` is one JSON value valid for ``model`` (whitespace allowed around),
    else ``(None, why)``."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        excerpt = text if len(text) <= 60 else text[:57] + "…"
        return None, f"not JSON ({exc.msg} at char {getattr(exc, 'pos', '?')}): {excerpt!r}"
    try:
        return model.model_validate(data), None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                             for e in exc.errors()[:3])
        more = f" (+{exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        return None, f"schema-invalid: {problems}{more}"


@dataclass
class OutputTally:
    """Counts valid and invalid structured outputs across calls (one tally per run or arm)."""

    valid: int = 0
    invalid: int = 0
    errors: list[str] = field(default_factory=list)

    def parse(self, text: str, model: type[M]) -> M | None:
        """:func:`parse_json_output`, counted; the error text is kept in :attr:`errors`."""
        obj, error = parse_json_output(text, model)
        if error is None:
            self.valid += 1
        else:
            self.invalid += 1
            self.errors.append(error)
        return obj
