"""The repo-editing tools, each one declaration: arguments, whether it writes, what it observes, how it refuses.

The machine calls tools only through :func:`call_tool`, which validates the arguments against the
declared schema and returns either the tool's observation or a typed :class:`Refusal`. The free
loop of the code comparison (a model choosing tools itself, :mod:`~labkit.repoedit.free_loop`) calls
the same declarations; only the edit guards in its :class:`ToolContext` differ (the physical ones
alone), so what the machine adds over it is exactly its guards and its routing.

| tool | writes | observation | refusals |
|---|---|---|---|
| ``read_file`` | no | the file's text | ``bad_args``, ``outside_repo``, ``missing_file`` |
| ``apply_edit`` | yes | the diff and the new tree digest | ``bad_args`` and every edit guard |
| ``run_tests`` | no (the copy is left as it was) | a :class:`TestRun` | ``bad_args`` |
| ``rollback`` | yes | digests before and after, and whether the baseline is back | ``bad_args`` |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.repoedit.edits import (
    DEFAULT_DIFF_LIMIT,
    EDIT_GUARDS,
    EditCase,
    Guard,
    Refusal,
    changed_lines,
    check_edit,
    outside_repo,
    unified_diff,
)
from labkit.repoedit.index import RepoIndex
from labkit.repoedit.tasks import SearchReplace
from labkit.repoedit.workspace import TestRun, Workspace


class ReadFileArgs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    path: str = Field(min_length=1)


class ApplyEditArgs(BaseModel):
    """``approved``: a human approved an edit over the size limit (only HUMAN_APPROVAL sets it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: str = Field(min_length=1)
    edits: tuple[SearchReplace, ...] = Field(min_length=1)
    approved: bool = False


class RunTestsArgs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    timeout: float = Field(default=60.0, gt=0, le=600)
    select: tuple[str, ...] = ()  # test files to run; empty: the whole suite


class RollbackArgs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    to: Literal["baseline"] = "baseline"


@dataclass(frozen=True)
class FileText:
    path: str
    text: str


@dataclass(frozen=True)
class EditResult:
    path: str
    diff: str
    changed_lines: int
    digest: str
    normalised: tuple[str, ...] = ()  # what a tolerant match read alike (quotes, indentation), edit by edit


@dataclass(frozen=True)
class RollbackResult:
    digest_before: str
    digest_after: str
    baseline: str

    @property
    def restored(self) -> bool:
        return self.digest_after == self.baseline


@dataclass
class ToolContext:
    """What tools act on: the run's copy, its index and baseline digest, the checked plan, the limits.

    ``guards``: the edit guards ``apply_edit`` checks (the machine: all of them; an arm without the
    machine: :data:`~labkit.repoedit.edits.PHYSICAL_GUARDS`, which only keep writes inside the copy).
    ``tolerant``: search texts are matched up to quotes and indentation (the machine's ``tolerant_match``).
    """

    workspace: Workspace
    index: RepoIndex
    baseline_digest: str
    planned: frozenset[str] = frozenset()
    diff_limit: int = DEFAULT_DIFF_LIMIT
    guards: tuple[Guard, ...] = EDIT_GUARDS
    tolerant: bool = False

    @property
    def root(self) -> Path:
        return self.workspace.root


A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True)
class Tool(Generic[A]):
    """One tool: its argument schema, whether it writes, its observation type, its refusal codes, its body."""

    name: str
    args: type[A]
    writes: bool
    observation: type
    refusals: tuple[str, ...]
    run: Callable[[ToolContext, A], Any]


def _read_file(ctx: ToolContext, args: ReadFileArgs) -> FileText | Refusal:
    outside = outside_repo(ctx.root, args.path)
    if outside:
        return Refusal("outside_repo", outside, "name a file of the project by its relative path.")
    target = ctx.root / args.path
    if not target.is_file():
        return Refusal("missing_file", f"{args.path!r} is not a file of the project", "read an indexed file.")
    return FileText(args.path, target.read_text(encoding="utf-8"))


def _apply_edit(ctx: ToolContext, args: ApplyEditArgs) -> EditResult | Refusal:
    guards = tuple(g for g in ctx.guards if not (args.approved and g.to_human))
    case = EditCase(ctx.root, ctx.index, ctx.planned, args.path, args.edits, ctx.diff_limit, ctx.tolerant)
    refusal = check_edit(case, guards)
    if refusal is not None:
        return refusal
    before = case.before()
    after, _, normalised = case.resolve()
    assert after is not None  # the does_not_apply guard passed
    (ctx.root / args.path).write_text(after, encoding="utf-8")
    return EditResult(args.path, unified_diff(args.path, before, after), changed_lines(before, after),
                      ctx.workspace.digest(), normalised)


def _run_tests(ctx: ToolContext, args: RunTestsArgs) -> TestRun:
    return ctx.workspace.run_tests(timeout=args.timeout, select=args.select)


def _rollback(ctx: ToolContext, args: RollbackArgs) -> RollbackResult:
    before = ctx.workspace.digest()
    ctx.workspace.rollback()
    return RollbackResult(before, ctx.workspace.digest(), ctx.baseline_digest)


TOOLS: dict[str, Tool[Any]] = {tool.name: tool for tool in (
    Tool("read_file", ReadFileArgs, False, FileText, ("bad_args", "outside_repo", "missing_file"), _read_file),
    Tool("apply_edit", ApplyEditArgs, True, EditResult, ("bad_args", *(g.code for g in EDIT_GUARDS)), _apply_edit),
    Tool("run_tests", RunTestsArgs, False, TestRun, ("bad_args",), _run_tests),
    Tool("rollback", RollbackArgs, True, RollbackResult, ("bad_args",), _rollback),
)}


def call_tool(name: str, ctx: ToolContext, args: dict[str, Any]) -> Any:
    """Validate ``args`` against the tool's schema and run it; bad arguments are a ``bad_args`` refusal."""
    tool = TOOLS[name]
    try:
        parsed = tool.args.model_validate(args)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(arguments)"
        return Refusal("bad_args", f"{name}: {where}: {first['msg']}", f"follow the {name} argument schema.")
    return tool.run(ctx, parsed)
