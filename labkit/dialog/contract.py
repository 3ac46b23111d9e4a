"""The four-field contract every model turn must keep, its validator and the corrective re-ask.

Every answer is one JSON object: ``message`` (what the user reads), ``signal`` (one of the step's signals),
``results`` (checked against the step's pydantic model) and ``summary`` (one line that later prompts carry
instead of the conversation). A grammar guarantees the shape, not the meaning (a signal before its needed
results, a value breaking a rule, a cut-off answer): :func:`check_answer` names each violation and
:func:`reask_prompt` builds the one follow-up call that asks again.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.dialog.scenario import Step, unknown

MESSAGE_MAX = 200
SUMMARY_MAX = 100


class Answer(BaseModel):
    """One model turn, as the contract defines it."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, max_length=MESSAGE_MAX)
    signal: str
    results: dict[str, Any] = Field(default_factory=dict)
    summary: str = Field(default="", max_length=SUMMARY_MAX)


@dataclass(frozen=True)
class Violation:
    """Why an answer broke the contract: a code a table can count and a sentence the model can read."""

    code: str  # not_json | wrong_shape | unknown_signal | invalid_results | missing_results | ungrounded_results
    #             | mixed_values (split_values)
    detail: str


@dataclass(frozen=True)
class Checked:
    """The outcome of checking one raw answer: the answer, or the violation."""

    answer: Answer | None
    violation: Violation | None

    @property
    def ok(self) -> bool:
        return self.violation is None


def answer_schema(step: Step) -> dict[str, Any]:
    """The JSON schema the grammar enforces for ``step``: the signal is one of the step's own."""
    results = step.results_model().model_json_schema()
    results.pop("title", None)
    return {"type": "object",
            "properties": {"message": {"type": "string", "minLength": 1, "maxLength": MESSAGE_MAX},
                           "signal": {"enum": step.signal_names},
                           "results": results,
                           "summary": {"type": "string", "maxLength": SUMMARY_MAX}},
            "required": ["message", "signal", "results", "summary"]}


def check_answer(raw: str, step: Step, known: dict[str, Any]) -> Checked:
    """Check a raw answer against the contract for ``step``.

    ``known`` are the dialog's variables before this answer: a signal's ``needs`` are satisfied by
    results given now or earlier.
    """
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return Checked(None, Violation("not_json", f"the answer is not valid JSON ({exc.msg} at column {exc.colno})"))
    try:
        answer = Answer.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the answer"
        return Checked(None, Violation("wrong_shape", f"{where}: {first['msg']}"))
    signal = step.signal(answer.signal)
    if signal is None:
        return Checked(None, Violation("unknown_signal", f"signal '{answer.signal}' is not allowed in step "
                                       f"'{step.name}'; allowed: {', '.join(step.signal_names)}"))
    try:
        results = step.results_model().model_validate(answer.results)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "results"
        return Checked(None, Violation("invalid_results", f"results.{where}: {first['msg']}"))
    given = {k: v for k, v in results.model_dump().items() if not unknown(v)}
    missing = [n for n in signal.needs if unknown(given.get(n)) and unknown(known.get(n))]
    if missing:
        return Checked(None, Violation("missing_results", f"signal '{signal.name}' needs {', '.join(missing)}, "
                                       "but the results do not give it"))
    return Checked(answer.model_copy(update={"results": given}), None)


def reask_prompt(prompt: str, raw: str, violation: Violation, step: Step) -> str:
    """The follow-up prompt: the original prompt, the broken answer, what was wrong, and the rule again."""
    shown = raw.strip() if len(raw) <= 400 else raw[:400] + "…"
    needs = "; ".join(f"{s.name} needs {', '.join(s.needs)}" for s in step.signals if s.needs) or "none"
    return (f"{prompt}{shown}\n\nThat answer broke the contract: {violation.detail}.\n"
            f"Answer again with one JSON object: message, signal (one of: {', '.join(step.signal_names)}), "
            f"results, summary. Required results per signal: {needs}. If a needed result is unknown, "
            "use a signal that stays and ask the user for it.\nJSON: ")


# --------------------------------------------------------------------------- the machine's features
def _field_schema(f: Any, required: bool) -> dict[str, Any]:
    """One result field as JSON schema: typed; a required one is non-empty and never null."""
    from labkit.dialog.scenario import _STRING_MAX

    if f.type == "enum":
        base: dict[str, Any] = {"enum": list(f.values)}
    elif f.type == "string":
        base = {"type": "string", "minLength": 1 if required else 0, "maxLength": _STRING_MAX}
    elif f.type == "list":
        base = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": _STRING_MAX},
                "minItems": 1 if required else 0, "maxItems": 6}
    else:
        base = {"type": {"integer": "integer", "number": "number", "boolean": "boolean"}[f.type]}
    return base if required else {"anyOf": [base, {"type": "null"}]}


def grammar_schema(step: Step, known: dict[str, Any],
                   only: Mapping[str, Collection[str]] | None = None, without: Collection[str] = (), *,
                   stay_keeps_needs: bool = True, needs_decide: bool = False,
                   first: Sequence[str] = ()) -> dict[str, Any]:
    """The ``results_grammar`` schema: one alternative per signal, each with its own results object.

    A signal's alternative requires (non-empty, typed) every value it ``needs`` that is not ``known``, so a
    ``next`` cannot close ``results`` empty; a staying signal cannot write a not-yet-known value a move on needs
    (``stay_keeps_needs=False`` drops this rule). ``needs_decide`` (with ``results_first``): such a value only
    under a signal that needs it. ``only`` narrows a signal's results to the named fields; ``without`` leaves
    signals out (a re-ask may not take the move just refused); ``first`` fields are required and written first
    wherever they are offered.
    """
    forward = ({n for s in step.signals if s.to != step.name for n in s.needs if unknown(known.get(n))}
               if stay_keeps_needs else set())
    alternatives = []
    for signal in (s for s in step.signals if s.name not in without):
        required = [n for n in signal.needs if unknown(known.get(n)) and any(f.name == n for f in step.results)]
        fields = [f for f in step.results if f.name not in forward
                  or (f.name in signal.needs if needs_decide else signal.to != step.name)]
        if only is not None and signal.name in only:
            fields = [f for f in fields if f.name in only[signal.name]]
        if first:
            fields = sorted(fields, key=lambda f: (f.name not in first, first.index(f.name) if f.name in first else 0))
            required += [f.name for f in fields if f.name in first and f.name not in required]
        results = {"type": "object",
                   "properties": {f.name: _field_schema(f, f.name in required) for f in fields},
                   "required": required, "additionalProperties": False}
        alternatives.append({"type": "object",
                             "properties": {"message": {"type": "string", "minLength": 1, "maxLength": MESSAGE_MAX},
                                            "signal": {"const": signal.name},
                                            "results": results,
                                            "summary": {"type": "string", "maxLength": SUMMARY_MAX}},
                             "required": ["message", "signal", "results", "summary"],
                             "additionalProperties": False})
    return alternatives[0] if len(alternatives) == 1 else {"oneOf": alternatives}


RESULTS_FIRST = ("results", "signal", "message", "summary")
"""The ``results_first`` field order: what the user gave, then the move it allows, then what to say."""


def in_order(schema: dict[str, Any], order: tuple[str, ...] = RESULTS_FIRST) -> dict[str, Any]:
    """``schema`` (one answer object, or a ``oneOf`` of them) with its properties in ``order``.

    The grammar writes an object's properties in the order the schema lists them, so this decides
    what the model decodes first; the schema accepts the same answers either way.
    """
    if "oneOf" in schema:
        return {**schema, "oneOf": [in_order(alt, order) for alt in schema["oneOf"]]}
    props = schema["properties"]
    return {**schema, "properties": {k: props[k] for k in order if k in props}
            | {k: v for k, v in props.items() if k not in order},
            "required": [k for k in order if k in schema.get("required", [])]
            + [k for k in schema.get("required", []) if k not in order]}


def differing_reask_prompt(prompt: str, raw: str, violation: Violation, step: Step, known: dict[str, Any]) -> str:
    """The ``differing_reask`` follow-up: the violation named, the previous answer quoted, what to change.

    Unlike :func:`reask_prompt` (the broken answer appended as if the model had written it, then the
    rule), the previous answer is set apart as a quotation and the prompt ends with a different
    head, so a greedy decoder does not simply continue into the same answer again.
    """
    shown = raw.strip() if len(raw) <= 400 else raw[:400] + "…"
    lines = [f"{prompt.rstrip()}", "", f"Your previous answer was refused ({violation.code}): {violation.detail}.",
             f"Previous answer (do not repeat it): {shown or '(empty)'}"]
    if violation.code == "missing_results":
        for signal in step.signals:
            missing = [n for n in signal.needs if unknown(known.get(n))]
            if missing:
                lines.append(f"To emit '{signal.name}', put {', '.join(missing)} into results, taken from the "
                             "user's words; if the user has not said it, emit a signal that stays and ask for it.")
    elif violation.code == "mixed_values":
        lines.append("Split the values: every field in results holds one value, in the user's words; the fields of "
                     "later steps may be filled now.")
    elif violation.code == "unknown_signal":
        lines.append(f"The signal must be one of: {', '.join(step.signal_names)}.")
    else:
        lines.append("Write one complete JSON object with the four fields message, signal, results, summary.")
    lines.append("Corrected JSON: ")
    return "\n".join(lines)
