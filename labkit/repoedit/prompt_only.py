"""The prompt-only arm: one prompt with everything, all edits at once, applied as given.

The prompt holds the requirement, the failing tests (names and messages, as the machine's plan prompt
shows them) and every source file of the project in full — not the tests' code: the machine's prompts
never show it either, and the tests are the verifier. The model answers once, greedy, under the JSON
schema of :class:`AllChanges` (the machine's search/replace contract, with a path per file). Each
search/replace is then applied on its own through the workspace's ``apply_edit`` tool with only the
physical guards (:data:`~labkit.repoedit.edits.PHYSICAL_GUARDS`): nothing is written outside the copy,
a search text that is not in the file cannot be applied, and everything else — a test file, a syntax
error, a huge rewrite — goes in as written. There is no retry and no test run of its own: the
verifier's one test run judges.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from labkit.llm.errors import BackendError
from labkit.repoedit.arm_io import ArmEnd, ArmInputs, in_kept_copy
from labkit.repoedit.edits import MAX_PLAN_STEPS, PHYSICAL_GUARDS, Refusal
from labkit.repoedit.index import index_project
from labkit.repoedit.planners import EXAMPLE, format_safe, parse_proposal
from labkit.repoedit.tasks import SearchReplace
from labkit.repoedit.tools import ToolContext, call_tool
from labkit.repoedit.workspace import Workspace


class FileChange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(min_length=1)
    edits: tuple[SearchReplace, ...] = Field(min_length=1)


class AllChanges(BaseModel):
    """The prompt-only contract: every file to change with its search/replace edits, in one answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    changes: tuple[FileChange, ...] = Field(min_length=1, max_length=MAX_PLAN_STEPS)


PROMPT = """You fix a small Python project so that its failing tests pass. Reply with JSON only, shaped like
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
HEAD = PROMPT.split("Your project:\n", 1)[0].replace("{{", "{").replace("}}", "}") + "Your project:\n"
"""The part of every prompt-only prompt no task changes (a backend may keep its evaluated state)."""


def prompt_only_prompt(requirement: str, failing: list[str], files: dict[str, str]) -> str:
    """The one prompt: requirement, failing tests, every source file in a fenced block."""
    shown = "\n".join(f"{path}:\n```python\n{text.rstrip()}\n```" for path, text in files.items())
    return PROMPT.format(requirement=requirement, failing="\n".join(failing) or "(none)", files=shown)


def apply_as_given(ctx: ToolContext, answer: AllChanges) -> tuple[int, list[Refusal]]:
    """Apply each search/replace on its own under the physical guards; return (applied, refusals)."""
    applied, refusals = 0, []
    for change in answer.changes:
        for edit in change.edits:
            result = call_tool("apply_edit", ctx, {"path": change.path, "edits": [edit.model_dump()]})
            if isinstance(result, Refusal):
                refusals.append(result)
            else:
                applied += 1
    return applied, refusals


def _run(inputs: ArmInputs, ws: Workspace) -> ArmEnd:
    """One call, the edits applied as given; the copy is kept for the verifier."""
    assert inputs.backend is not None
    index = index_project(ws.root)
    ctx = ToolContext(ws, index, ws.digest(), guards=PHYSICAL_GUARDS)
    files = {path: (ws.root / path).read_text(encoding="utf-8") for path in index.source_files}
    prompt = prompt_only_prompt(inputs.task.requirement, inputs.failing_lines(), files)
    transcript = [prompt]
    try:
        done = inputs.backend.complete(prompt, max_tokens=inputs.max_tokens, schema=AllChanges.model_json_schema(),
                                       temperature=0.0)
    except BackendError as exc:
        return ArmEnd(f"backend error: {exc.message[:200]}", ws, transcript=prompt)
    transcript.append(f"--- answer\n{done.text}")
    answer, refusal = parse_proposal(done.text, AllChanges)
    if answer is None:
        assert refusal is not None
        transcript.append(f"--- not used: {refusal.code}: {refusal.detail}")
        return ArmEnd(f"{refusal.code}: nothing applied", ws, refused=1, transcript="\n".join(transcript))
    applied, refusals = apply_as_given(ctx, answer)
    transcript += [f"--- refused [{r.code}] {r.detail}" for r in refusals]
    total = applied + len(refusals)
    transcript.append(f"--- applied {applied} of {total} edit(s)")
    return ArmEnd(f"applied {applied} of {total} edit(s)", ws, edits=applied, refused=len(refusals),
                  transcript="\n".join(transcript))


run_prompt_only = in_kept_copy(_run, "the prompt-only arm")
