"""Edit formats: how a model is asked to write a change, and how its answer becomes edits. One registry.

Each format has a name, its model-facing instructions (the fixed head every prompt of it opens with, after
the one worked example all arms share), its grammar or schema (None: free text in fenced blocks), and a
parser to edits. An arm's declaration names its format (:mod:`~labkit.repoedit.arms`); the machine asks
for one file at a time (:data:`FILE_FORMATS`), a one-prompt arm for the whole project (:data:`FORMATS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from labkit.core.errors import LabkitError
from labkit.llm.parse import parse_json_output
from labkit.repoedit.definitions import ELIDED, definition_edit, definitions
from labkit.repoedit.edits import MAX_PLAN_STEPS, EditProposal, PlanProposal, Refusal
from labkit.repoedit.tasks import SearchReplace

if TYPE_CHECKING:
    from labkit.repoedit.planners import EditView

M = TypeVar("M", bound=BaseModel)

# The definitions format's answer: one block per definition changed, named from the file's own list, or a skip::
#
#     DEFINITION: count_words
#     ```python
#     def count_words(text):
#         return len(text.split())
#     ```
#
# Code goes in a fenced block, the form a small coder model writes code in, rather than escaped inside JSON; the
# closed list of names, the parse check (definition_edit) and every edit guard keep the contract safe.
MAX_DEFINITIONS = 3
_DEFINITION_BLOCK = re.compile(r"DEFINITION:\s*`?([\w.()]+)`?\s*\n```[\w+-]*\n(.*?)```", re.DOTALL)
_SKIP = re.compile(r"^\s*SKIP:\s*(.*)", re.DOTALL)


@dataclass(frozen=True)
class DefinitionAnswer:
    """A parsed answer: ``ok`` with (name, code) pairs, or ``skip`` with a reason."""

    status: str
    changes: tuple[tuple[str, str], ...] = ()
    reason: str = ""


def parse_definitions(raw: str, names: tuple[str, ...], unchanged: Callable[[str, str], bool] = lambda n, c: False
                      ) -> tuple[DefinitionAnswer | None, Refusal | None]:
    """Read an answer in the definition contract; a name outside ``names`` or no block at all is a refusal.

    An answer over the limit is judged by the definitions it changes: the blocks ``unchanged`` finds copied
    as they were (a small model often writes out everything it was shown) are left out first."""
    skip = _SKIP.match(raw)
    blocks = _DEFINITION_BLOCK.findall(raw)
    if skip and not blocks:
        return DefinitionAnswer("skip", reason=skip.group(1).strip()[:300]), None
    shown = ", ".join(names)
    if not blocks:
        return None, Refusal("no_definition", "the answer holds no 'DEFINITION: <name>' line followed by a "
                                              "```python block", f"write the changed definition out whole under "
                                                                 f"'DEFINITION: <name>', a name from: {shown}.")
    unknown = [name for name, _ in blocks if name not in names]
    if unknown:
        return None, Refusal("unknown_definition", f"{unknown[0]!r} is not a definition of the file",
                             f"name one of: {shown}.")
    blocks = outermost(blocks)
    if len(blocks) > MAX_DEFINITIONS:
        blocks = [(name, code) for name, code in blocks if not unchanged(name, code)] or blocks[:1]
    if len(blocks) > MAX_DEFINITIONS:
        return None, Refusal("too_many_definitions", f"{len(blocks)} definitions in one answer",
                             f"change at most {MAX_DEFINITIONS} definitions at a time.")
    return DefinitionAnswer("ok", tuple((name, code) for name, code in blocks)), None


def outermost(blocks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The blocks without those a class's own block already holds (``Box.size`` beside ``Box``), and without a
    name given twice (the first block wins): a model that writes out the class and then each method again
    has said one thing, not several."""
    names = [name for name, _ in blocks]
    kept: list[tuple[str, str]] = []
    for name, code in blocks:
        inside_given_class = "." in name and name.rsplit(".", 1)[0] in names
        if not inside_given_class and all(name != k for k, _ in kept):
            kept.append((name, code))
    return kept


def render(changes: list[tuple[str, str]]) -> str:
    """An answer in the contract (the oracle's, and the worked example's)."""
    return "\n".join(f"DEFINITION: {name}\n```python\n{code.rstrip()}\n```" for name, code in changes)


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
{elided}{blamed}{failure}{previous}{refused}Answer:
"""
ELIDED_LINE = f"A docstring shown as {ELIDED} is kept as it is: write {ELIDED} in its place.\n"
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


def as_definitions(content: str, edits: tuple[SearchReplace, ...],
                   offered: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """The definitions that ``edits`` change in ``content``, written out whole (the oracle's answer in the
    definition contract). Definitions are paired by position when the count is unchanged (so a rename
    is the old name with the new code), else by name. A changed class is written out whole, not its
    methods again, unless ``offered`` (the names the view allows) leaves the class out."""
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
        name = prior.name if prior is not None else new.name
        inside_changed_class = any(new.name.startswith(c["name"] + ".") for c in changed)
        if not same and not inside_changed_class and (not offered or name in offered):
            changed.append({"name": name, "code": code})
    return changed


class FileChange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(min_length=1)
    edits: tuple[SearchReplace, ...] = Field(min_length=1)


class AllChanges(BaseModel):
    """The prompt-only contract: every file to change with its search/replace edits, in one answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    changes: tuple[FileChange, ...] = Field(min_length=1, max_length=MAX_PLAN_STEPS)


ALL_CHANGES_PROMPT = """You fix a small Python project so that its failing tests pass. Reply with JSON only, shaped like
{{"changes": [{{"path": "<a file of the project>", "edits": [{{"search": "<lines copied exactly from the file>", \
"replace": "<the new lines>"}}]}}]}}

Example, on another project:
""" + format_safe(f"""Requirement: {EXAMPLE.requirement}
Failing tests:
{EXAMPLE.failing}
The project's source files:
{EXAMPLE.file_block()}
JSON: {{"changes": [{{"path": "{EXAMPLE.path}", "edits": {EXAMPLE.edits_json()}}}]}}
""") + """
Your project:
Requirement: {requirement}
Failing tests:
{failing}
The project's source files:
{files}
JSON:"""
ALL_CHANGES_HEAD = (ALL_CHANGES_PROMPT.split("Your project:\n", 1)[0].replace("{{", "{").replace("}}", "}")
                    + "Your project:\n")
"""The part of every prompt-only prompt no task changes (a backend may keep its evaluated state)."""


def prompt_only_prompt(requirement: str, failing: list[str], files: dict[str, str]) -> str:
    """The one prompt: requirement, failing tests, every source file in a fenced block."""
    shown = "\n".join(f"{path}:\n```python\n{text.rstrip()}\n```" for path, text in files.items())
    return ALL_CHANGES_PROMPT.format(requirement=requirement, failing="\n".join(failing) or "(none)", files=shown)


WHOLE_FILES_PROMPT = """You fix a small Python project so that its failing tests pass.
Reply with every file you change written out in full, each as a line `FILE: <path>` followed by a
```python block holding the whole new file. Change only what the fix needs.

Example, on another project:
Requirement: {ex_requirement}
Failing tests' output:
{ex_failing}
The project's source files:
FILE: {ex_path}
```python
{ex_before}
```
Answer:
FILE: {ex_path}
```python
{ex_after}
```

Your project:
Requirement: {requirement}
Failing tests' output:
{failing}
The project's source files:
{files}
Answer:
"""
_FILE_BLOCK = re.compile(r"FILE:\s*`?([^\s`]+)`?\s*\n```[\w+-]*\n(.*?)```", re.DOTALL)


def whole_prompt(requirement: str, failing: str, files: dict[str, str]) -> str:
    """The one prompt: requirement, the failing output, every source file, after the worked example."""
    shown = "\n".join(f"FILE: {path}\n```python\n{text.rstrip()}\n```" for path, text in files.items())
    return WHOLE_FILES_PROMPT.format(ex_requirement=EXAMPLE.requirement, ex_failing=EXAMPLE.failing,
                                     ex_path=EXAMPLE.path, ex_before=EXAMPLE.before,
                                     ex_after=EXAMPLE.before.replace(EXAMPLE.search, EXAMPLE.replace),
                                     requirement=requirement, failing=failing.strip() or "(none)", files=shown)


WHOLE_FILES_HEAD = WHOLE_FILES_PROMPT.split("Your project:\n", 1)[0].format(
    ex_requirement=EXAMPLE.requirement, ex_failing=EXAMPLE.failing, ex_path=EXAMPLE.path, ex_before=EXAMPLE.before,
    ex_after=EXAMPLE.before.replace(EXAMPLE.search, EXAMPLE.replace)) + "Your project:\n"
"""The part of every whole-file prompt no task changes (a backend may keep its evaluated state)."""


def parse_files(answer: str) -> dict[str, str]:
    """The files an answer writes out, by path (a later block for the same path wins)."""
    return {path: body if body.endswith("\n") else body + "\n" for path, body in _FILE_BLOCK.findall(answer)}




@dataclass(frozen=True)
class FileAnswer:
    """One answer for one file as edits: the search/replace changes (or the refusal), its status and reason,
    and the definitions it replaced whole (the definitions format only)."""

    changes: tuple[SearchReplace, ...] = ()
    status: str = ""
    reason: str = ""
    named: tuple[str, ...] = ()
    refusal: Refusal | None = None


@dataclass(frozen=True)
class EditFormat:
    """One edit format: name, what it asks for, its fixed instructions (``head``), its schema for a view
    (None: no grammar), a parser to edits, and how many tokens an answer may take.

    ``prompt`` builds the whole prompt for a view; ``render_fix`` writes a known fix in the format (the
    oracle answers through the same parser as the model)."""

    name: str
    about: str
    head: str
    schema: Callable[[Any], dict[str, Any] | None]
    parse: Callable[..., Any]
    prompt: Callable[..., str]
    max_tokens: int | None  # None: the comparison's own --max-tokens
    render_fix: Callable[..., str] | None = None  # (content, edits, offered names) -> the answer


def _asked(view: EditView) -> tuple[str, str, str]:
    """The failure, refusal and previous-answer lines a per-file prompt shows (empty when there is none)."""
    failure = f"The tests still fail:\n{view.failure}\n" if view.failure else ""
    if view.failure and view.first:
        failure = f"The failing tests' output:\n{view.failure}\n"
    refused = f"Your previous answer was refused: {view.refused}\n" if view.refused else ""
    previous = f"Your previous answer for this file:\n{view.previous}\n" if view.previous else ""
    return failure, refused, previous


def _search_replace_prompt(view: EditView) -> str:
    failure, refused, previous = _asked(view)
    return EDIT_PROMPT.format(requirement=view.requirement, path=view.path, why=view.why,
                              content=view.content.rstrip("\n"), failure=failure + previous, refused=refused)


def _search_replace_parse(raw: str, content: str, view: EditView) -> FileAnswer:
    proposal, refusal = parse_proposal(raw, EditProposal)
    if proposal is None:
        return FileAnswer(refusal=refusal)
    return FileAnswer(proposal.edits, proposal.status, proposal.reason)


def _definitions_prompt(view: EditView) -> str:
    failure, refused, previous = _asked(view)
    blamed = f"The failure points at: {', '.join(view.blamed)}\n" if view.blamed else ""
    return DEFINITION_PROMPT.format(requirement=view.requirement, path=view.path, why=view.why,
                                    content=view.content.rstrip("\n"), definitions=", ".join(view.definitions),
                                    blamed=blamed, failure=failure, previous=previous, refused=refused,
                                    elided=ELIDED_LINE if view.short_docstrings else "",
                                    skip=SKIP_LINE if view.offer_skip else "")


def _definitions_parse(raw: str, content: str, view: EditView) -> FileAnswer:
    def unchanged(name: str, code: str) -> bool:
        edit = definition_edit(content, name, code, keep_docstrings=view.short_docstrings)[0]
        return edit is not None and edit.search == edit.replace

    answer, refusal = parse_definitions(raw, view.definitions, unchanged)
    if answer is None:
        return FileAnswer(refusal=refusal)
    changes = []
    for name, code in answer.changes:
        edit, why, _ = definition_edit(content, name, code, keep_docstrings=view.short_docstrings)
        if edit is None:
            return FileAnswer(refusal=Refusal("bad_definition", why, "write the named definition out whole: its "
                                              "def, class or assignment line and its whole body."))
        changes.append(edit)
    return FileAnswer(tuple(changes), answer.status, answer.reason, tuple(name for name, _ in answer.changes))


FILE_FORMATS: dict[str, EditFormat] = {f.name: f for f in (
    EditFormat("search_replace", "JSON search/replace edits of one file, under the schema's grammar", EDIT_HEAD,
               lambda view: EditProposal.model_json_schema(), _search_replace_parse, _search_replace_prompt, 320,
               lambda content, edits, offered=(): json.dumps({"status": "ok",
                                                              "edits": [e.model_dump() for e in edits]})),
    EditFormat("definitions", "whole definitions in fenced blocks, named from the file's own list "
               "(parse_definitions); no grammar", DEFINITION_HEAD, lambda view: None,
               _definitions_parse, _definitions_prompt, 600,
               lambda content, edits, offered=(): render([(c["name"], c["code"])
                                                          for c in as_definitions(content, edits, offered)])),
)}
"""The machine's formats: one file, one answer."""

FORMATS: dict[str, EditFormat] = {**FILE_FORMATS, **{f.name: f for f in (
    EditFormat("all_changes", "one JSON answer with every file's search/replace edits", ALL_CHANGES_HEAD,
               lambda view: AllChanges.model_json_schema(), lambda raw: parse_proposal(raw, AllChanges),
               prompt_only_prompt, None),
    EditFormat("whole_files", "every changed file written out whole in fenced blocks; no grammar",
               WHOLE_FILES_HEAD, lambda view: None, parse_files, whole_prompt, 800),
)}}
"""Every edit format, the one-prompt arms' included."""


def edit_format(name: str, *, per_file: bool = False) -> EditFormat:
    """The format ``name`` (a per-file one if ``per_file``); an unknown name is refused with the known ones."""
    known = FILE_FORMATS if per_file else FORMATS
    if name not in known:
        raise LabkitError(f"unknown edit format {name!r}", f"use one of: {', '.join(known)}.")
    return known[name]
