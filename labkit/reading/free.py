"""The prompt-only arms' loop: the whole task in one growing prompt, and whatever action the model writes
is run until ``done`` or the step budget. Arguments are checked against the tool's schema (the error shown
to the model); calls and results are events in the loop's own log."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.core.store import EventLog
from labkit.llm.backend import Backend
from labkit.reading import prompts
from labkit.reading.answers import ActionAnswer, answer_schema, read_answer
from labkit.reading.choosers import Decoding
from labkit.reading.events import LoopEnded, ModelAsked
from labkit.reading.families import compose_differences, compose_form, compose_route
from labkit.reading.taskfile import Form, ReadingTask
from labkit.runtime.events import ToolResult
from labkit.runtime.redact import redact, scrub_text
from labkit.runtime.tools import INBOX_TOOLS, CallContext, SaveDraftArgs, ToolAnswer, ToolSpec, World, check_key


class SaveRouteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    key: str
    queue: str = Field(min_length=1)


class SaveFormArgs(Form):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    key: str


class SaveDifferencesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    key: str
    ids: list[str] = Field(min_length=1)


@dataclass(frozen=True)
class LoopAction:
    """One action a prompt-only loop can run: its argument model, what it does in the world, whether it
    writes, and (for a read) how its answer is shown in the prompt."""

    name: str
    args: type[BaseModel]
    run: Callable[[World, BaseModel, Mapping[str, Mapping[str, Any]]], ToolAnswer]
    helper: bool = False
    writes: bool = True
    view: Callable[[Mapping[str, Any]], str] | None = None


# How the prompt shows what each read returned (the rest of a read tool comes from its declaration).
READ_VIEWS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "read_message": prompts.message_view, "read_record": prompts.record_view}


def _tool(spec: ToolSpec) -> LoopAction:
    """A declared runtime tool as a loop action (run through the declaration, as the executor runs it)."""
    return LoopAction(spec.name, spec.args,
                      lambda world, args, read: spec.call(world, args, CallContext(action_id=spec.name)),
                      writes=spec.side_effect, view=READ_VIEWS.get(spec.name))


def _save(world: World, key: str, text: str) -> ToolAnswer:
    return world.save_draft(SaveDraftArgs(text=text, key=check_key(key)), CallContext(action_id="save"))


def _save_differences(world: World, args: BaseModel, read: Mapping[str, Mapping[str, Any]]) -> ToolAnswer:
    ids = list(args.ids)  # type: ignore[attr-defined]
    missing = [i for i in ids if i not in read]
    if missing:
        return ToolAnswer("error", detail=f"record(s) {missing} have not been read yet")
    return _save(world, args.key, compose_differences([read[i] for i in ids]))  # type: ignore[attr-defined]


ACTIONS: dict[str, LoopAction] = {a.name: a for a in (
    *(_tool(t) for t in INBOX_TOOLS.values() if t.planner_visible),
    LoopAction("save_route", SaveRouteArgs,
               lambda w, a, r: _save(w, a.key, compose_route(a.queue)), helper=True),  # type: ignore[attr-defined]
    LoopAction("save_form", SaveFormArgs,
               lambda w, a, r: _save(w, a.key, compose_form(a.model_dump())), helper=True),  # type: ignore[attr-defined]
    LoopAction("save_differences", SaveDifferencesArgs, _save_differences, helper=True),
)}
DONE = "done"
# Where an unconstrained answer ends: at the next line of the transcript's pattern, or a blank line. Not at
# the first newline: an instruction-tuned model fences its JSON ("```json", newline, the action, "```"),
# which the one parser accepts, and a newline stop would cut it to "```json" — a format failure the arm
# would then be charged with that no model made.
STEP_END = ["\nResult:", "\nStep ", "\n\n"]


def action_names(helpers: bool) -> list[str]:
    return [n for n, a in ACTIONS.items() if helpers or not a.helper] + [DONE]


@dataclass(frozen=True)
class FreeOutcome:
    stop: str  # said_done | step_budget
    steps: int


def _result_text(answer: ToolAnswer, action: LoopAction) -> str:
    if answer.outcome != "ok":
        return f"{answer.outcome}: {answer.detail}"
    data = dict(answer.data)
    if action.view is not None:
        return "ok " + action.view(data)
    return f"ok saved {data.get('key', '')}"


def run_free(task: ReadingTask, world: World, backend: Backend, log: EventLog, *, examples: Sequence[ReadingTask],
             grammar: bool, helpers: bool, seed: int, decoding: Decoding) -> FreeOutcome:
    """Run ``task`` in the prompt-only loop; facts go to ``log``; the world keeps what was saved."""
    names = action_names(helpers)
    schema = answer_schema(ActionAnswer, {"action": names}) if grammar else None
    transcript: list[tuple[str, str]] = []
    read: dict[str, Mapping[str, Any]] = {}
    steps = task.budget.max_steps
    for step in range(steps):
        prompt = prompts.whole_prompt(examples, task.description, transcript, helpers=helpers)
        out = backend.complete(prompt, max_tokens=decoding.max_tokens_action, stop=None if grammar else STEP_END,
                               schema=schema, temperature=decoding.temperature,
                               seed=decoding.call_seed(seed, step))
        answer, problem = read_answer(out.text, ActionAnswer)
        if answer is not None and answer.action not in names:
            problem = f"unknown action {answer.action!r} (actions: {', '.join(names)})"
        log.append(ModelAsked(decision="action", step=step, attempt=1,
                              prompt_sha256=hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                              prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                              answer=scrub_text(out.text.strip())[:300], problem=problem[:300],
                              grammar=out.grammar_used, http_retries=out.retries))
        if answer is None or problem:
            transcript.append((out.text.strip().replace("\n", " ")[:400], f"error: {problem}"))
            continue
        # What was run, as the worked episodes write it: one plain JSON line (a fenced answer is not echoed
        # back with its fence, which would teach the model a format the next step may not parse).
        line = prompts.step_line(answer.action, answer.args)
        if answer.action == DONE:
            log.append(LoopEnded(stop="said_done", steps=step + 1))
            return FreeOutcome("said_done", step + 1)
        spec = ACTIONS[answer.action]
        try:
            args = spec.args.model_validate(answer.args)
        except (ValidationError, ValueError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else {"loc": (), "msg": str(exc)}
            where = ".".join(str(p) for p in first["loc"]) or "(arguments)"
            transcript.append((line, f"error: arguments of {answer.action}: {where}: {first['msg']}"))
            continue
        try:
            result = spec.run(world, args, read)
        except ValueError as exc:  # a helper's key that is not a plain name
            result = ToolAnswer("error", detail=str(exc))
        if result.outcome == "ok" and not spec.writes:
            read[str(result.data.get("id"))] = dict(result.data)
        side_effect = spec.writes
        log.append(ToolResult(action_id=f"free-{step}", attempt=1, tool=answer.action,
                              args_sha256=hashlib.sha256(json.dumps(answer.args, sort_keys=True,
                                                                    default=str).encode()).hexdigest(),
                              outcome=result.outcome, side_effect=side_effect, data=redact(dict(result.data)),
                              detail=scrub_text(result.detail)[:300]))
        transcript.append((line, _result_text(result, spec)))
    log.append(LoopEnded(stop="step_budget", steps=steps))
    return FreeOutcome("step_budget", steps)
