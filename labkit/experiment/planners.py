"""The planners of the experiment's arms.

- :class:`PromptOnlyPlanner` — the prompt-only arms: the whole task in one growing prompt; the
  model writes the next action (tool, arguments and, for the save, the whole draft text) as JSON,
  with or without a JSON grammar. The free loop executes whatever it parses.
- :class:`StepChoicePlanner` — the machine arm with the model: at each PLANNING step the model
  picks one option of the menu (:mod:`labkit.experiment.menu`) under an enum grammar; the machine
  validates, executes, settles unknown writes and stops on its own predicate.
- :class:`RandomMenuPlanner` — the ablation: the same menu, the same machine, a seeded random pick.

What the model decides in the machine arm is exactly the menu choice. Code finds the record ids and
the key in the task text, drops forbidden records from the menu, and composes the draft text; a
menu with a single option is taken without asking the model (the same for the random planner).

Seeds: every model call gets ``seed * 1000 + step`` as its sampling seed (temperature > 0 makes
that matter), and the menu order shown to the model is shuffled with the run's seed and step, so
seeds change what the model sees and samples. Both derive from the context alone, so a resumed
run asks the same questions again.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from labkit.errors import LabkitError
from labkit.experiment.menu import SAVE, compose_draft, draft_key_in, menu, shuffled
from labkit.experiment.prompts import ACTION_SCHEMA, record_line, step_prompt, step_schema, whole_task_prompt
from labkit.llm.backend import Backend, Completion
from labkit.runtime.events import Usage
from labkit.runtime.planner import Candidate, PlannerContext, PlannerError, Proposal, register_planner
from labkit.runtime.task import Task

INVALID_ACTION = "invalid_output"


@dataclass(frozen=True)
class Decoding:
    """The decoding parameters of the model arms (recorded in the provenance)."""

    temperature: float = 0.5
    max_tokens_whole: int = 160
    max_tokens_step: int = 8

    def call_seed(self, seed: int, step: int) -> int:
        return seed * 1000 + step


DEFAULT_DECODING = Decoding()


@dataclass
class PlannerStats:
    """What a planner counts about its model's answers."""

    model_calls: int = 0
    schema_invalid: int = 0
    forced: int = 0  # menu decisions with one option, taken without the model
    problems: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # raw answers, for the traces


def _usage(out: Completion) -> Usage:
    return Usage(prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens)


class PromptOnlyPlanner:
    """The whole task in one prompt; the model's JSON line is the action (see module docstring)."""

    def __init__(self, backend: Backend, *, grammar: bool, seed: int, decoding: Decoding = DEFAULT_DECODING) -> None:
        self.backend = backend
        self.grammar = grammar
        self.seed = seed
        self.decoding = decoding
        self.name = "prompt-only+grammar" if grammar else "prompt-only"
        self.stats = PlannerStats()
        self.transcript: list[tuple[str, str]] = []
        self._last: tuple[str, dict[str, Any] | None] | None = None  # (action line, parsed action)

    def _result_of_last(self, ctx: PlannerContext) -> str:
        assert self._last is not None
        _, parsed = self._last
        if parsed is None:
            return "error: that was not one JSON action with 'action' and 'args'"
        if ctx.feedback:
            return ctx.feedback
        action, args = parsed["action"], parsed["args"]
        if action == "read_record" and str(args.get("id")) in ctx.records:
            return "ok " + record_line(ctx.records[str(args.get("id"))])
        if action == "save_draft":
            return f"ok saved {args.get('key')}"
        return "ok"

    def prompt(self, ctx: PlannerContext) -> str:
        if self._last is not None:
            self.transcript.append((self._last[0], self._result_of_last(ctx)))
            self._last = None
        return whole_task_prompt(ctx.goal, self.transcript)

    def propose(self, ctx: PlannerContext) -> Proposal:
        text = self.prompt(ctx)
        out = self.backend.complete(text, max_tokens=self.decoding.max_tokens_whole,
                                    stop=None if self.grammar else ["\n"],
                                    schema=ACTION_SCHEMA if self.grammar else None,
                                    temperature=self.decoding.temperature,
                                    seed=self.decoding.call_seed(self.seed, ctx.step))
        self.stats.model_calls += 1
        raw = out.text.strip()
        self.stats.outputs.append(raw)
        line = raw.replace("\n", " ")[:300]
        parsed, problem = parse_action(raw)
        usage = _usage(out)
        if parsed is None:
            self.stats.schema_invalid += 1
            self.stats.problems.append(problem)
            self._last = (line, None)
            return Proposal(candidates=(Candidate(action=INVALID_ACTION, rationale_summary=problem[:200]),),
                            usage=usage)
        self._last = (line, parsed)
        if parsed["action"] == "done":
            return Proposal(claims_done=True, usage=usage)
        return Proposal(candidates=(Candidate(action=parsed["action"], args=parsed["args"]),), usage=usage)


def parse_action(text: str) -> tuple[dict[str, Any] | None, str]:
    """``({"action", "args"}, "")`` if ``text`` is one JSON action, else ``(None, why)``."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        excerpt = text if len(text) <= 60 else text[:57] + "…"
        return None, f"not JSON ({exc.__class__.__name__}: {str(exc)[:60]}): {excerpt!r}"
    if not isinstance(data, dict) or not isinstance(data.get("action"), str):
        return None, "schema-invalid: no string 'action'"
    args = data.get("args", {})
    if not isinstance(args, dict):
        return None, "schema-invalid: 'args' is not an object"
    extra = sorted(set(data) - {"action", "args"})
    if extra:
        return None, f"schema-invalid: unexpected field(s) {extra}"
    return {"action": data["action"], "args": args}, ""


class _MenuPlanner:
    """Shared by the model and the random planner: the menu, forced moves, and turning a choice into an action."""

    name = "menu"

    def __init__(self, task: Task, seed: int) -> None:
        self.forbidden = tuple(task.forbidden_records)
        self.seed = seed
        self.stats = PlannerStats()

    def options(self, ctx: PlannerContext) -> list[str]:
        opts = menu(ctx.goal, ctx.records, ctx.drafts, self.forbidden)
        return shuffled(opts, random.Random(f"menu:{self.seed}:{ctx.step}"))

    def candidate(self, ctx: PlannerContext, choice: str, why: str) -> Candidate:
        if choice == SAVE:
            key = draft_key_in(ctx.goal) or "draft"
            return Candidate(action="save_draft", args={"key": key, "text": compose_draft(ctx.goal, ctx.records)},
                             rationale_summary=why)
        return Candidate(action="read_record", args={"id": choice}, rationale_summary=why)

    def choose(self, ctx: PlannerContext, options: Sequence[str]) -> tuple[str, Usage]:
        raise NotImplementedError

    def propose(self, ctx: PlannerContext) -> Proposal:
        options = self.options(ctx)
        if not options:
            return Proposal(note="the draft is saved", claims_done=True)
        if len(options) == 1:
            self.stats.forced += 1
            return Proposal(candidates=(self.candidate(ctx, options[0], "the only option left"),))
        choice, usage = self.choose(ctx, options)
        return Proposal(candidates=(self.candidate(ctx, choice, f"{self.name} chose {choice} of {len(options)}"),),
                        usage=usage)


class StepChoicePlanner(_MenuPlanner):
    """The model picks the next menu option under an enum grammar (one short prompt per decision)."""

    name = "llm-steps"

    def __init__(self, backend: Backend, task: Task, *, seed: int, decoding: Decoding = DEFAULT_DECODING) -> None:
        super().__init__(task, seed)
        self.backend = backend
        self.decoding = decoding

    def choose(self, ctx: PlannerContext, options: Sequence[str]) -> tuple[str, Usage]:
        prompt = step_prompt(ctx.goal, list(ctx.records), options)
        out = self.backend.complete(prompt, max_tokens=self.decoding.max_tokens_step, schema=step_schema(options),
                                    temperature=self.decoding.temperature,
                                    seed=self.decoding.call_seed(self.seed, ctx.step))
        self.stats.model_calls += 1
        self.stats.outputs.append(out.text)
        try:
            choice = json.loads(out.text)
        except ValueError:
            choice = None
        if choice not in options:
            self.stats.schema_invalid += 1
            problem = f"answer {out.text[:40]!r} is not one of the options {list(options)}"
            self.stats.problems.append(problem)
            raise PlannerError(problem, "the machine records it and asks again (a retry in PLANNING).")
        return str(choice), _usage(out)


class RandomMenuPlanner(_MenuPlanner):
    """The no-model ablation: a seeded uniform pick from the same menu."""

    name = "random-menu"

    def choose(self, ctx: PlannerContext, options: Sequence[str]) -> tuple[str, Usage]:
        return random.Random(f"pick:{self.seed}:{ctx.step}").choice(list(options)), Usage()


class TextOrderPlanner(_MenuPlanner):
    """A one-line rule instead of the model: the first option in the order the task text names it, save last.

    Why it exists: if this rule scores as well as the model inside the same machine, the model's menu
    choices added nothing that code could not do on these tasks.
    """

    name = "text-order"

    def choose(self, ctx: PlannerContext, options: Sequence[str]) -> tuple[str, Usage]:
        from labkit.experiment.menu import record_ids_in

        return next((r for r in record_ids_in(ctx.goal) if r in options), SAVE), Usage()


_default_backend: Backend | None = None


def _embedded() -> Backend:
    global _default_backend
    if _default_backend is None:
        from labkit.experiment.prompts import REUSED_PREFIXES
        from labkit.llm.llamacpp import LlamaCppBackend

        _default_backend = LlamaCppBackend(prefixes=REUSED_PREFIXES)
    return _default_backend


def _llm_steps_factory(task: Task) -> StepChoicePlanner:
    return StepChoicePlanner(_embedded(), task, seed=0, decoding=Decoding(temperature=0.0))


def _random_factory(task: Task) -> RandomMenuPlanner:
    if not draft_key_in(task.description):
        raise LabkitError(f"task {task.id!r} names no 'key NAME' in its description",
                          "the menu planners read the draft key from the task text.")
    return RandomMenuPlanner(task, seed=0)


# Usable from task files and `labkit run --planner`: the embedded model greedy, or random with seed 0.
register_planner("llm-steps", _llm_steps_factory)
register_planner("random-menu", _random_factory)
