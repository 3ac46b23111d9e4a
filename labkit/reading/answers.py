"""The answers a model gives, as pydantic models, and :func:`read_answer`, the one parser every arm uses (so
"schema-invalid" means the same everywhere); :func:`answer_schema` is the grammar's schema."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from labkit.llm.grammar import unenforced_keywords
from labkit.llm.parse import parse_json_output
from labkit.reading.taskfile import Form

M = TypeVar("M", bound=BaseModel)
# A Markdown code fence around the answer: opened with ``` or ```json, closed with ``` — or not closed, when
# a stop sequence ended the answer before the closing fence.
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*(?:```)?\s*$", re.DOTALL)


class ActionAnswer(BaseModel):
    """The prompt-only arms' next step: a tool (or helper, or ``done``) and its arguments."""

    model_config = ConfigDict(extra="forbid")

    action: str
    args: dict[str, Any] = Field(default_factory=dict)


class QueueAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    queue: str


class MessageAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str


class NextAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    next: str


FormAnswer = Form


def read_answer(text: str, model: type[M]) -> tuple[M | None, str]:
    """``(answer, "")`` if ``text`` is one JSON value valid for ``model`` (a code fence around it allowed),
    else ``(None, why)``."""
    fenced = _FENCE.match(text) if text.lstrip().startswith("```") else None
    obj, problem = parse_json_output(fenced.group(1) if fenced else text.strip(), model)
    return obj, problem or ""


def answer_schema(model: type[BaseModel], enums: dict[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """The JSON schema of ``model`` for a grammar, each field in ``enums`` restricted to its options."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    for name, prop in schema.get("properties", {}).items():
        prop.pop("title", None)
        if enums and name in enums:
            prop.clear()
            prop["enum"] = list(enums[name])
    schema["required"] = list(schema.get("properties", {}))
    schema["additionalProperties"] = False
    return schema


def unenforced(schema: dict[str, Any]) -> list[str]:
    """The keywords of ``schema`` a llama.cpp grammar accepts but does not enforce (written to provenance)."""
    return unenforced_keywords(schema)
