"""JSON schema → llama.cpp grammar (GBNF), compiled once per schema, never silently weakened.

Against llama-cpp-python 0.3.x: no silent "any JSON" fallback (:class:`GrammarError`,
:func:`check_not_generic`), invalid grammars parsed before they crash sampling (:func:`check_gbnf`), and
unenforced keywords listed (:attr:`CompiledSchema.unenforced`)."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from labkit.llm.errors import GrammarError

# Keywords the converter reads and turns into grammar rules.
_ENFORCED = {"type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems",
             "maxItems", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions",
             "pattern", "minLength", "maxLength"}
# Keywords that only annotate; nothing to enforce.
_ANNOTATIONS = {"title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
                "readOnly", "writeOnly", "discriminator"}
_FORMATS = {"date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"}


@dataclass(frozen=True)
class CompiledSchema:
    """A schema and its grammar: ``sha256`` of the canonical schema JSON, and ``unenforced`` as
    ``"<json pointer>: <keyword>"`` for every rule the grammar does not enforce."""

    schema_json: str
    gbnf: str
    sha256: str
    unenforced: tuple[str, ...]


def canonical_schema(schema: dict[str, Any]) -> str:
    """The schema as canonical JSON (sorted keys, no spaces): equal schemas, equal text."""
    try:
        return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise GrammarError(f"the schema is not JSON-serialisable: {exc}",
                           "pass a plain dict, e.g. YourModel.model_json_schema().") from exc


def compile_schema(schema: dict[str, Any]) -> CompiledSchema:
    """Turn a JSON schema into GBNF; cached, so each distinct schema is converted once per process."""
    if not isinstance(schema, dict):
        raise GrammarError(f"a JSON schema must be a dict, got {type(schema).__name__}",
                           "pass e.g. YourModel.model_json_schema().")
    return _compile(canonical_schema(schema), json.dumps(schema, ensure_ascii=False))


@lru_cache(maxsize=256)
def _compile(schema_json: str, ordered_json: str) -> CompiledSchema:
    """``schema_json`` (canonical) names the schema; the grammar is built from ``ordered_json``, the schema with
    its properties in their declared order: the converter writes them in the order it reads them, and a
    sorted schema would make a model write ``replace`` before ``search`` and ``edits`` before ``status``."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        gbnf = json_schema_to_gbnf(ordered_json)
    except Exception as exc:  # the converter signals unsupported schemas with bare asserts
        raise GrammarError(
            f"llama.cpp cannot turn this JSON schema into a grammar: {type(exc).__name__}: {exc}",
            "simplify the schema (plain objects, enums, strings, numbers, arrays, $defs refs; patterns "
            "must start with ^ and end with $), or leave the schema out and validate the text yourself.",
        ) from exc
    schema = json.loads(schema_json)
    check_not_generic(gbnf, schema)
    return CompiledSchema(schema_json=schema_json, gbnf=gbnf,
                          sha256=hashlib.sha256(schema_json.encode()).hexdigest(),
                          unenforced=tuple(unenforced_keywords(schema)))


@lru_cache(maxsize=1)
def _generic_grammars() -> frozenset[str]:
    from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

    return frozenset({JSON_GBNF.strip(), json_schema_to_gbnf("{}").strip(),
                      json_schema_to_gbnf('{"type":"object"}').strip()})


def _is_specific(schema: dict[str, Any]) -> bool:
    """True if the schema says more than "any JSON" / "any object"."""
    meaningful = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    return meaningful not in ({}, {"type": "object"})


def check_not_generic(gbnf: str, schema: dict[str, Any]) -> None:
    """Raise if ``gbnf`` is llama-cpp-python's generic JSON grammar while ``schema`` asks for more."""
    if _is_specific(schema) and gbnf.strip() in _generic_grammars():
        raise GrammarError(
            "the grammar for this schema is llama-cpp-python's generic JSON grammar: the schema's "
            "structure would not be enforced (its silent fallback after a failed conversion)",
            "build the grammar with labkit.llm.grammar.compile_schema, which reports the conversion error.")


def unenforced_keywords(schema: Any, pointer: str = "") -> list[str]:
    """Every schema keyword that a grammar will not enforce, as ``"<pointer>: <keyword>"``."""
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            where = f"{pointer}/{key}"
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                for name, sub in value.items():
                    found += unenforced_keywords(sub, f"{where}/{name}")
            elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
                for i, sub in enumerate(value):
                    found += unenforced_keywords(sub, f"{where}/{i}")
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                found += unenforced_keywords(value, where)
            elif key == "format":
                if value not in _FORMATS:
                    found.append(f"{pointer or '/'}: format={value}")
            elif key not in _ENFORCED and key not in _ANNOTATIONS:
                found.append(f"{pointer or '/'}: {key}")
    return found


_check_lock = threading.Lock()


def check_gbnf(gbnf: str, vocab: Any) -> None:
    """Parse ``gbnf`` with llama.cpp's own parser (needs a ``vocab``); raise if invalid, as sampling with
    an invalid grammar crashes the process."""
    import llama_cpp

    with _check_lock:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
        if not sampler:
            raise GrammarError("llama.cpp could not parse the grammar (its parser's message is on stderr)",
                               "fix the grammar text; for JSON schemas, use compile_schema.")
        llama_cpp.llama_sampler_free(sampler)


@lru_cache(maxsize=1)
def _reference_vocab() -> Any:
    """A vocabulary-only load of the embedded model: enough to parse grammars without weights."""
    import llama_cpp

    from labkit.llm.modelfile import embedded_model_path

    return llama_cpp.Llama(model_path=str(embedded_model_path()), vocab_only=True, verbose=False)


def check_gbnf_offline(gbnf: str) -> None:
    """:func:`check_gbnf` without a loaded model (used before sending a grammar to a server, whose
    process the same crash would take down)."""
    check_gbnf(gbnf, _reference_vocab()._model.vocab)
