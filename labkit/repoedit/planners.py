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
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from labkit.llm.backend import Backend
from labkit.llm.parse import parse_json_output
from labkit.repoedit.definition_contract import render
from labkit.repoedit.definitions import definitions
from labkit.repoedit.edits import EditProposal, PlanProposal, Refusal
from labkit.repoedit.tasks import RepoTask, SearchReplace

M = TypeVar("M", bound=BaseModel)


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
    definitions: tuple[str, ...] = ()  # definition_edit: the file's definitions, the blamed ones first
    blamed: tuple[str, ...] = ()  # the definitions the failing output points at
    previous: str = ""  # repair_feedback: the previous answer for this file and what became of it
    temperature: float = 0.0  # sampled_repair: above 0 after a greedy answer failed
    seed: int = 0
    first: bool = True  # the file's first edit in the run (False on a targeted fix)
    offer_skip: bool = True  # False for the file the failure blames (blamed_skip): prevent, not only refuse


class Planner(Protocol):
    name: str

    def propose_plan(self, view: PlanView) -> Proposal: ...

    def propose_edit(self, view: EditView) -> Proposal: ...


def strip_fence(text: str) -> str:
    """The JSON inside a Markdown code fence (chat models often add one), else the text itself."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        end = body.rfind("```")
        body = body[:end] if end >= 0 else body
    return body.strip()


def parse_proposal(raw: str, model: type[M]) -> tuple[M | None, Refusal | None]:
    """Parse a planner's raw answer into ``model``; a failure is a ``not_json`` or ``schema_invalid`` refusal."""
    obj, error = parse_json_output(strip_fence(raw), model)
    if error is None:
        return obj, None
    code = "not_json" if error.startswith("not JSON") else "schema_invalid"
    schema = json.dumps(_example(model))
    return None, Refusal(code, error, f"answer with one JSON object shaped like {schema}.")


def _example(model: type[BaseModel]) -> dict[str, Any]:
    if model is PlanProposal:
        return {"steps": [{"file": "module.py", "why": "..."}]}
    return {"status": "ok", "edits": [{"search": "exact old text", "replace": "new text"}]}


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
        if view.definitions:  # the definition contract: the known fix's changed definitions, written out whole
            changed = as_definitions(view.content, fix.edits)
            return Proposal(render([(c["name"], c["code"]) for c in changed]))
        return Proposal(json.dumps({"status": "ok", "edits": [e.model_dump() for e in fix.edits]}))


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

@dataclass(frozen=True)
class WorkedExample:
    """The one worked example every model arm is shown, each in its own answer format.

    A small model is not judged on guessing a format from a description: the machine's edit prompt,
    the prompt-only prompt and the free loop's head all show this same fix, on a project that is
    none of the tasks' (so no arm sees more help than another, and no task's answer leaks).
    """

    requirement: str = "add(a, b) must return the sum of a and b."
    failing: str = "tests/test_calc.py::test_add: assert -1 == 5"
    path: str = "calc.py"
    why: str = "add subtracts instead of adding"
    before: str = "def add(a, b):\n    return a - b"
    search: str = "    return a - b"
    replace: str = "    return a + b"

    def edits_json(self) -> str:
        return json.dumps([{"search": self.search, "replace": self.replace}])

    def file_block(self) -> str:
        return f"{self.path}:\n```python\n{self.before}\n```"


EXAMPLE = WorkedExample()


def format_safe(text: str) -> str:
    """``text`` made safe inside a ``str.format`` template."""
    return text.replace("{", "{{").replace("}", "}}")


EDIT_PROMPT = """You change one file of a small Python project. Reply with JSON only, shaped like
{{"status": "ok", "edits": [{{"search": "<lines copied exactly from the file>", "replace": "<the new lines>"}}]}}
or {{"status": "skip", "reason": "<why>"}} if this file needs no change.

Example, on another project:
""" + format_safe(f"""Requirement: {EXAMPLE.requirement}
Plan for {EXAMPLE.path}: {EXAMPLE.why}
{EXAMPLE.file_block()}
JSON: {{"status": "ok", "edits": {EXAMPLE.edits_json()}}}
""") + """
Your file:
Requirement: {requirement}
Plan for {path}: {why}
{path}:
```python
{content}
```
{failure}{refused}JSON:"""
EDIT_HEAD = EDIT_PROMPT.split("Your file:\n", 1)[0].replace("{{", "{").replace("}}", "}") + "Your file:\n"
"""The part of every edit prompt no task changes (a backend may keep its evaluated state: ``prefixes``)."""


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

DEFINITION_PROMPT = """You fix one file of a small Python project by rewriting whole definitions.
Answer with each definition you change written out in full (its def, class or assignment line and its
whole body), each under a line `DEFINITION: <its name from the list>`, in a ```python block.
{skip}
Example, on another project:
""" + format_safe(f"""Requirement: {EXAMPLE.requirement}
Plan for {EXAMPLE.path}: {EXAMPLE.why}
{EXAMPLE.file_block()}
Definitions: add
The failing tests' output:
{EXAMPLE.failing}
Answer:
{render([("add", EXAMPLE.before.replace(EXAMPLE.search, EXAMPLE.replace))])}
""") + """
Your file:
Requirement: {requirement}
Plan for {path}: {why}
{path}:
```python
{content}
```
Definitions: {definitions}
{blamed}{failure}{previous}{refused}Answer:
"""
SKIP_LINE = "If this file needs no change, answer `SKIP: <why>` instead.\n"
DEFINITION_HEAD = DEFINITION_PROMPT.split("Your file:\n", 1)[0].format(skip="") + "Your file:\n"
"""The definition prompt's fixed part for a file the failure blames (no skip offered)."""


def closed_schema(model: type[BaseModel], field: str, choices: tuple[str, ...]) -> dict[str, Any]:
    """``model``'s JSON schema with ``field`` (wherever it is declared) limited to ``choices``: a closed set
    the grammar enforces, so a model cannot name a file or definition that does not exist."""
    schema = model.model_json_schema()
    for part in [schema, *schema.get("$defs", {}).values()]:
        if field in part.get("properties", {}):
            part["properties"][field] = {"type": "string", "enum": list(choices)}
    return schema


def as_definitions(content: str, edits: tuple[SearchReplace, ...]) -> list[dict[str, str]]:
    """The definitions that ``edits`` change in ``content``, written out whole (the oracle's answer in the
    definition contract). Definitions are paired by position when the count is unchanged (so a rename
    is the old name with the new code), else by name."""
    after = content
    for edit in edits:
        after = after.replace(edit.search, edit.replace, 1)
    old_defs, new_defs = definitions(content), definitions(after)
    old_lines, new_lines = content.splitlines(keepends=True), after.splitlines(keepends=True)
    by_name = {d.name: d for d in old_defs}
    pairs = (list(zip(old_defs, new_defs, strict=True)) if len(old_defs) == len(new_defs)
             else [(by_name.get(n.name), n) for n in new_defs])
    changed: list[dict[str, str]] = []
    for prior, new in pairs:
        code = "".join(new_lines[new.first - 1:new.last])
        same = prior is not None and "".join(old_lines[prior.first - 1:prior.last]) == code
        inside_changed_class = any(new.name.startswith(c["name"] + ".") for c in changed)
        if not same and not inside_changed_class:
            changed.append({"name": prior.name if prior is not None else new.name, "code": code})
    return changed


class ModelPlanner:
    """Asks a :class:`~labkit.llm.backend.Backend` per state, under each contract's JSON schema.

    Each prompt holds one state's context only: the plan prompt the requirement, the failing tests
    and the index summary (names, no code); the edit prompt the requirement, one plan line and one
    file (plus the test output on a targeted fix, and the previous refusal on a retry). What the
    view carries decides the contract: a ``menu`` closes the plan's file names, ``definitions`` asks
    for whole definitions instead of search texts, a ``temperature`` samples with the view's seed.

    ``temperature`` and ``seed`` given here sample *every* call of the run (a best-of-k try,
    :mod:`~labkit.repoedit.best_of`): the hotter of the two temperatures is used, and the run's seed
    is folded into the view's, so each try and each call in it draws differently. Left at 0, the
    requests are exactly the greedy ones.
    """

    name = "model"

    def __init__(self, backend: Backend, *, plan_tokens: int = 160, edit_tokens: int = 320,
                 definition_tokens: int = 600, temperature: float = 0.0, seed: int = 0) -> None:
        self.backend = backend
        self.plan_tokens = plan_tokens
        self.edit_tokens = edit_tokens
        self.definition_tokens = definition_tokens
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
        failure = f"The tests still fail:\n{view.failure}\n" if view.failure else ""
        if view.failure and view.first:
            failure = f"The failing tests' output:\n{view.failure}\n"
        refused = f"Your previous answer was refused: {view.refused}\n" if view.refused else ""
        previous = f"Your previous answer for this file:\n{view.previous}\n" if view.previous else ""
        if view.definitions:  # fenced code, no grammar: see labkit.repoedit.definition_contract
            blamed = f"The failure points at: {', '.join(view.blamed)}\n" if view.blamed else ""
            prompt = DEFINITION_PROMPT.format(requirement=view.requirement, path=view.path, why=view.why,
                                              content=view.content.rstrip("\n"),
                                              definitions=", ".join(view.definitions), blamed=blamed,
                                              failure=failure, previous=previous, refused=refused,
                                              skip="" if view.offer_skip is False else SKIP_LINE)
            return self._ask(prompt, None, self.definition_tokens, view.temperature, view.seed)
        prompt = EDIT_PROMPT.format(requirement=view.requirement, path=view.path, why=view.why,
                                    content=view.content.rstrip("\n"), failure=failure + previous,
                                    refused=refused)
        return self._ask(prompt, EditProposal.model_json_schema(), self.edit_tokens, view.temperature, view.seed)
