"""The prompt + tools arm: a free loop with the workspace's tools and no machine.

The model sees the requirement, the failing tests and the project's file list (tests included), and
writes one JSON action per turn — ``read_file``, ``apply_edit``, ``run_tests`` or ``done`` —, greedy,
under the union schema of the four actions. The loop runs the action through the same tool
declarations the machine uses (:func:`~labkit.repoedit.tools.call_tool`) and appends the action and
its result to one growing conversation, until ``done`` or the step budget (the machine arm's call
budget) is spent. A base model continues the conversation as one transcript; a chat model reads it as
turns in its template, its own actions as its turns (:class:`Conversation`).

The edit guards are only the physical ones: the loop may edit a test file, edit a file nobody
planned, or break the syntax. Nothing stops it, because that is what the comparison
measures; only writes outside the copy are impossible. The head of the prompt shows one worked
example on another project, so the loop is not judged on guessing the action format.

Actions are declarations (:data:`ACTIONS`): an argument model and a function that runs it and says
what the model reads next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from labkit.llm.backend import Turn
from labkit.llm.errors import BackendError
from labkit.repoedit.arm_io import ArmEnd, ArmInputs, in_kept_copy
from labkit.repoedit.budget import BudgetSpent
from labkit.repoedit.edits import PHYSICAL_GUARDS, Refusal
from labkit.repoedit.formats import EXAMPLE, parse_proposal
from labkit.repoedit.index import index_project
from labkit.repoedit.tasks import SearchReplace
from labkit.repoedit.tools import EditResult, FileText, ToolContext, call_tool
from labkit.repoedit.workspace import TestRun, Workspace

RESULT_CHARS = 600  # characters of a test run's failures shown to the model (the machine shows 900 on a fix)


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PathArgs(_Args):
    path: str = Field(min_length=1)


class EditArgs(_Args):
    path: str = Field(min_length=1)
    edits: tuple[SearchReplace, ...] = Field(min_length=1)


class NoArgs(_Args):
    pass


class ReadFileAction(_Args):
    action: Literal["read_file"]
    args: PathArgs


class ApplyEditAction(_Args):
    action: Literal["apply_edit"]
    args: EditArgs


class RunTestsAction(_Args):
    action: Literal["run_tests"]
    args: NoArgs


class DoneAction(_Args):
    action: Literal["done"]
    args: NoArgs


class Action(RootModel[ReadFileAction | ApplyEditAction | RunTestsAction | DoneAction]):
    """One turn of the loop: exactly one of the four actions."""


@dataclass
class LoopState:
    """What the loop has done so far (the counts the row reports)."""

    ctx: ToolContext
    test_runs: int = 0
    edits: int = 0
    refused: int = 0


def _refused(state: LoopState, refusal: Refusal) -> str:
    state.refused += 1
    return f"refused [{refusal.code}]: {refusal.detail}"


def _read_file(state: LoopState, args: dict[str, Any]) -> str:
    result = call_tool("read_file", state.ctx, args)
    if isinstance(result, FileText):
        return f"{result.path}:\n```python\n{result.text.rstrip()}\n```"
    return _refused(state, result)


def _apply_edit(state: LoopState, args: dict[str, Any]) -> str:
    result = call_tool("apply_edit", state.ctx, args)
    if isinstance(result, EditResult):
        state.edits += 1
        return f"edit applied to {result.path} ({result.changed_lines} changed lines)"
    return _refused(state, result)


def test_summary(run: TestRun, limit: int = RESULT_CHARS) -> str:
    """A test run as the loop shows it: the outcome, the counts, each failure's message (or the output's tail)."""
    head = f"tests {run.outcome}: {len(run.passed)} passed, {len(run.failed)} failed"
    body = "\n".join(f"FAILED {node}: {run.details.get(node, '')}" for node in run.failed) or (
        run.output.strip()[-limit:] if not run.green else "")
    return (head + ("\n" + body[:limit] if body else "")).rstrip()


def _run_tests(state: LoopState, args: dict[str, Any]) -> str:
    state.test_runs += 1
    return test_summary(call_tool("run_tests", state.ctx, args))


ACTIONS: dict[str, Callable[[LoopState, dict[str, Any]], str]] = {
    "read_file": _read_file,
    "apply_edit": _apply_edit,
    "run_tests": _run_tests,
}
"""The actions that run a tool; ``done`` ends the loop."""


HEAD = """You fix a small Python project so that its failing tests pass, one action per turn. Reply with one JSON \
action:
{"action": "read_file", "args": {"path": "<file>"}} shows a file;
{"action": "apply_edit", "args": {"path": "<file>", "edits": [{"search": "<lines copied exactly from the file>", \
"replace": "<the new lines>"}]}} changes a file;
{"action": "run_tests", "args": {}} runs the tests;
{"action": "done", "args": {}} ends your work.

Example, on another project:
""" + f"""Requirement: {EXAMPLE.requirement}
Failing tests:
{EXAMPLE.failing}
Files: {EXAMPLE.path}, tests/test_calc.py
> {{"action": "read_file", "args": {{"path": "{EXAMPLE.path}"}}}}
{EXAMPLE.file_block()}
> {{"action": "apply_edit", "args": {{"path": "{EXAMPLE.path}", "edits": {EXAMPLE.edits_json()}}}}}
edit applied to {EXAMPLE.path} (2 changed lines)
> {{"action": "run_tests", "args": {{}}}}
tests passed: 3 passed, 0 failed
> {{"action": "done", "args": {{}}}}

Your project ({{budget}} actions at most):
"""


def loop_head(budget: int) -> str:
    """The part of every transcript that no task changes (a backend may keep its evaluated state: ``prefixes``)."""
    return HEAD.replace("{budget}", str(budget))


def loop_start(requirement: str, failing: list[str], files: list[str], budget: int) -> str:
    """The transcript before the first action: the head with its example, then this task."""
    return (loop_head(budget) + f"Requirement: {requirement}\nFailing tests:\n"
            + ("\n".join(failing) or "(none)") + f"\nFiles: {', '.join(files)}\n> ")


@dataclass
class Conversation:
    """The loop's conversation, kept in both forms a backend may read (see :class:`~labkit.llm.backend.Request`).

    ``transcript``: one text, each action after ``> `` and its result on the next lines — what a base
    model continues, and what the cassette and the saved transcript show. ``turns``: the same as
    alternating turns (the task, then each action as the model's turn and its result as the user's), so
    that a chat model reads its own earlier actions as its own and the results as the answers to them.
    """

    transcript: str
    turns: list[Turn] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.turns = [("user", self.transcript.removesuffix("> ").rstrip())]

    def add(self, answer: str, result: str | None = None) -> None:
        """The model's ``answer``, then what it got back (None: the loop ends, nothing follows)."""
        self.transcript += answer.strip() + "\n"
        self.turns.append(("assistant", answer.strip()))
        if result is not None:
            self.transcript += result + "\n> "
            self.turns.append(("user", result))


def _loop(inputs: ArmInputs, ws: Workspace) -> ArmEnd:
    """Run the loop in a fresh copy until ``done`` or the budget is spent; the copy is kept for the verifier."""
    backend = inputs.backend
    assert backend is not None
    index = index_project(ws.root)
    state = LoopState(ToolContext(ws, index, ws.digest(), guards=PHYSICAL_GUARDS))
    files = [f.path for f in index.files if f.path.endswith(".py")]
    talk = Conversation(loop_start(inputs.task.requirement, inputs.failing_lines(), files, backend.budget))
    schema = Action.model_json_schema()
    status = f"step budget spent ({backend.budget} actions)"
    step = 0
    while backend.left > 0:
        step += 1
        try:
            done = backend.complete(talk.transcript, max_tokens=inputs.max_tokens, schema=schema, temperature=0.0,
                                    messages=talk.turns)
        except BudgetSpent:
            break
        except BackendError as exc:
            status = f"backend error: {exc.message[:200]}"
            break
        action, refusal = parse_proposal(done.text, Action)
        if action is None:
            assert refusal is not None
            talk.add(done.text, _refused(state, refusal)[:300])
            continue
        name = action.root.action
        if name == "done":
            talk.add(done.text)
            status = f"done after {step} action(s)"
            break
        talk.add(done.text, ACTIONS[name](state, action.root.args.model_dump()))
    return ArmEnd(status, ws, test_runs=state.test_runs, edits=state.edits, refused=state.refused,
                  transcript=talk.transcript)


run_free_loop = in_kept_copy(_loop, "the free loop")
