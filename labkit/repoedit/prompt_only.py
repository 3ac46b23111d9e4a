"""The prompt-only arm: one prompt with everything (format ``all_changes``), all edits at once, applied as given.

The prompt holds the requirement, the failing tests and every source file (not the tests' code). Each
search/replace is applied on its own under the physical guards only (:data:`~labkit.repoedit.edits.PHYSICAL_GUARDS`):
nothing outside the copy, a search text must be in the file; a test file or a syntax error goes in as written.
No retry and no test run of its own: the verifier judges.
"""

from __future__ import annotations

from labkit.llm.errors import BackendError
from labkit.repoedit.arm_io import ArmEnd, ArmInputs, in_kept_copy
from labkit.repoedit.edits import PHYSICAL_GUARDS, Refusal
from labkit.repoedit.formats import FORMATS, AllChanges
from labkit.repoedit.index import index_project
from labkit.repoedit.tools import ToolContext, call_tool
from labkit.repoedit.workspace import Workspace


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
    fmt = FORMATS["all_changes"]
    prompt = fmt.prompt(inputs.task.requirement, inputs.failing_lines(), files)
    transcript = [prompt]
    try:
        done = inputs.backend.complete(prompt, max_tokens=inputs.max_tokens, schema=fmt.schema(None),
                                       temperature=0.0)
    except BackendError as exc:
        return ArmEnd(f"backend error: {exc.message[:200]}", ws, transcript=prompt)
    transcript.append(f"--- answer\n{done.text}")
    answer, refusal = fmt.parse(done.text)
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
