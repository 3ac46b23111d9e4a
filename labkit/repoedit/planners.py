"""Who proposes plans and edits: the oracle (the known fix), a script (tests), or a model.

A planner only *proposes*: it returns raw text, and the machine parses it, checks it against the
index and the guards, and decides. So the oracle's known fix, a scripted bad answer and a model's
answer all go through exactly the same checks, and a planner can never apply anything itself.
Each call sees a small view (:class:`PlanView`, :class:`EditView`): the requirement, the index
summary or the one file, its plan line, and the failure output on a targeted fix — never the
whole repository.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from labkit.llm.backend import Backend
from labkit.repoedit.edits import PlanProposal
from labkit.repoedit.formats import edit_format
from labkit.repoedit.tasks import RepoTask


@dataclass(frozen=True)
class Proposal:
    """A planner's answer: the raw text plus what it cost (an empty prompt: no model was asked)."""

    raw: str
    prompt: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class PlanView:
    requirement: str
    files: str  # the index summary: one line per source file with its symbols
    failing: tuple[str, ...]  # baseline failures: "node id: short message"
    refused: str = ""  # why the previous proposal was refused, if it was
    menu: tuple[str, ...] = ()  # closed_plan: the files a plan may name (the grammar's enum); empty: any text
    example: bool = False  # plan_example: show the worked example


@dataclass(frozen=True)
class EditView:
    requirement: str
    path: str
    why: str
    content: str
    failure: str = ""  # test output on a targeted fix (and on the first edit, with first_failure)
    refused: str = ""
    format: str = "search_replace"  # the edit format asked for (labkit.repoedit.formats)
    definitions: tuple[str, ...] = ()  # the definitions format: the file's definitions, the blamed ones first
    blamed: tuple[str, ...] = ()  # the definitions the failing output points at
    previous: str = ""  # repair_feedback: the previous answer for this file and what became of it
    temperature: float = 0.0  # sampled_repair: above 0 after a greedy answer failed
    seed: int = 0
    first: bool = True  # the file's first edit in the run (False on a targeted fix)
    offer_skip: bool = True  # False for the file the failure blames (blamed_skip): prevent, not only refuse
    whole: str = ""  # definition_view: the whole file when ``content`` is an excerpt of it
    short_docstrings: bool = False  # short_docstrings: the excerpt elides long docstrings; a rewrite keeps them


class Planner(Protocol):
    name: str

    def propose_plan(self, view: PlanView) -> Proposal: ...

    def propose_edit(self, view: EditView) -> Proposal: ...



class OraclePlanner:
    """Proposes the task's known fix, through the same machine (a ceiling, and a check of the harness).

    On a targeted fix round it has nothing new to offer and answers ``abort``.
    """

    name = "oracle"

    def __init__(self, task: RepoTask) -> None:
        self.task = task
        self._done: set[str] = set()

    def propose_plan(self, view: PlanView) -> Proposal:
        steps = [{"file": fix.path, "why": fix.why} for fix in self.task.oracle]
        return Proposal(json.dumps({"steps": steps}))

    def propose_edit(self, view: EditView) -> Proposal:
        fix = next((f for f in self.task.oracle if f.path == view.path), None)
        if fix is None or view.path in self._done or (view.failure and not view.first):
            return Proposal(json.dumps({"status": "abort", "reason": "the known fix has nothing more to offer"}))
        self._done.add(view.path)
        render = edit_format(view.format, per_file=True).render_fix
        assert render is not None
        return Proposal(render(view.whole or view.content, fix.edits, view.definitions if view.whole else ()))


class ScriptedPlanner:
    """Answers from two lists (plans, edits) or functions of the view: for tests of the machine's logic."""

    name = "scripted"

    def __init__(self, plans: Iterable[str] | Callable[[PlanView], str],
                 edits: Iterable[str] | Callable[[EditView], str]) -> None:
        self._plans = plans if callable(plans) else iter(list(plans))
        self._edits = edits if callable(edits) else iter(list(edits))
        self.views: list[PlanView | EditView] = []

    def _next(self, source: Any, view: PlanView | EditView) -> Proposal:
        self.views.append(view)
        if callable(source):
            return Proposal(source(view))
        try:
            return Proposal(next(source))
        except StopIteration:
            raise AssertionError(f"the script has no answer left for {type(view).__name__}") from None

    def propose_plan(self, view: PlanView) -> Proposal:
        return self._next(self._plans, view)

    def propose_edit(self, view: EditView) -> Proposal:
        return self._next(self._edits, view)


PLAN_PROMPT = """You plan a change to a small Python project. Reply with JSON only, shaped like
{{"steps": [{{"file": "<a source file from the list>", "why": "<one short line>"}}]}}
List only the source files that must change (never test files).

Requirement: {requirement}
Failing tests:
{failing}
Source files and their definitions:
{files}
{refused}JSON:"""


PLAN_EXAMPLE = """Example, on another project:
Requirement: add(a, b) must return the sum of a and b.
Failing tests:
tests/test_calc.py::test_add: assert -1 == 5
Source files and their definitions:
calc.py: add(), sub()
cli.py: main()
JSON: {"steps": [{"file": "calc.py", "why": "add subtracts instead of adding"}]}

Your project:
"""
"""The plan step's worked example (plan_example), on a project that is none of the tasks'."""


def closed_schema(model: type[BaseModel], field: str, choices: tuple[str, ...]) -> dict[str, Any]:
    """``model``'s JSON schema with ``field`` (wherever it is declared) limited to ``choices``: a closed set
    the grammar enforces, so a model cannot name a file or definition that does not exist."""
    schema = model.model_json_schema()
    for part in [schema, *schema.get("$defs", {}).values()]:
        if field in part.get("properties", {}):
            part["properties"][field] = {"type": "string", "enum": list(choices)}
    return schema


class ModelPlanner:
    """Asks a :class:`~labkit.llm.backend.Backend` per state, under each contract's JSON schema.

    Each prompt holds one state's context only: the plan prompt the requirement, the failing tests
    and the index summary (names, no code); the edit prompt the requirement, one plan line and one
    file (plus the test output on a targeted fix, and the previous refusal on a retry). The view
    decides the contract: a ``menu`` closes the plan's file names, ``format`` names the edit format
    (:mod:`~labkit.repoedit.formats`), a ``temperature`` samples with the view's seed.

    ``temperature`` and ``seed`` given here sample *every* call of the run (a best-of-k try,
    :mod:`~labkit.repoedit.best_of`): the hotter of the two temperatures is used, and the run's seed
    is folded into the view's, so each try and each call in it draws differently. Left at 0, the
    requests are exactly the greedy ones.
    """

    name = "model"

    def __init__(self, backend: Backend, *, plan_tokens: int = 160, edit_tokens: int | None = None,
                 temperature: float = 0.0, seed: int = 0) -> None:
        self.backend = backend
        self.plan_tokens = plan_tokens
        self.edit_tokens = edit_tokens  # None: the edit format's own
        self.temperature = temperature
        self.seed = seed

    def _ask(self, prompt: str, schema: dict[str, Any] | None, max_tokens: int, temperature: float = 0.0,
             seed: int = 0) -> Proposal:
        if self.temperature > 0:
            temperature, seed = max(temperature, self.temperature), 1000 * self.seed + seed
        done = self.backend.complete(prompt, max_tokens=max_tokens, schema=schema, temperature=temperature,
                                     seed=seed)
        return Proposal(done.text, prompt, done.prompt_tokens, done.completion_tokens, done.seconds)

    def propose_plan(self, view: PlanView) -> Proposal:
        refused = f"Your previous answer was refused: {view.refused}\n" if view.refused else ""
        prompt = PLAN_PROMPT.format(requirement=view.requirement, files=view.files,
                                    failing="\n".join(view.failing) or "(none)", refused=refused)
        if view.example:
            head, rest = prompt.split("Requirement: ", 1)
            prompt = head + PLAN_EXAMPLE + "Requirement: " + rest
        schema = (closed_schema(PlanProposal, "file", view.menu) if view.menu
                  else PlanProposal.model_json_schema())
        return self._ask(prompt, schema, self.plan_tokens)

    def propose_edit(self, view: EditView) -> Proposal:
        fmt = edit_format(view.format, per_file=True)
        return self._ask(fmt.prompt(view), fmt.schema(view), self.edit_tokens or fmt.max_tokens or 320,
                         view.temperature, view.seed)
