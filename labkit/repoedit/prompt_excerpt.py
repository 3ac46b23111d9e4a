"""The prompt-only arm for projects too big to show whole: one prompt with what the failure names, no tests.

Real packages do not fit a small model's context (one of their files often does not), so the one prompt
holds what a bug report points at: the requirement, the failing output, and the file the evidence names
first (:func:`~labkit.repoedit.localize.candidate_files`), shown whole if short, else as the excerpt of the
definitions the failure points at (:func:`~labkit.repoedit.localize.excerpt`, long docstrings elided as the
machine's short_docstrings does). The answer rewrites whole
definitions (the ``definitions`` format) and is applied as given; the verifier judges. Wrapped in best of
k, it is the equal-compute baseline: the same calls and test runs as the machine, without its structure.
"""

from __future__ import annotations

from labkit.llm.errors import BackendError
from labkit.repoedit.arm_io import ArmEnd, ArmInputs, in_kept_copy
from labkit.repoedit.formats import FILE_FORMATS
from labkit.repoedit.index import index_project
from labkit.repoedit.localize import candidate_files, failing_statements, file_view
from labkit.repoedit.planners import EditView
from labkit.repoedit.workspace import Workspace


def _run(inputs: ArmInputs, ws: Workspace) -> ArmEnd:
    """One call on the file the failure names first; its definitions written as given; the copy kept."""
    assert inputs.backend is not None
    limits, baseline = inputs.limits, inputs.baseline
    index = index_project(ws.root)
    evidence = "\n".join([baseline.output, *baseline.details.values()])
    found = candidate_files(evidence, baseline.failed, index) or [(index.source_files[0], "the first source file")]
    path, why = found[0]
    content = (ws.root / path).read_text(encoding="utf-8")
    seen = file_view(path, content, baseline.output, view_lines=limits.view_lines,
                     excerpt_lines=limits.excerpt_lines, short_docstrings=True,
                     statements=failing_statements(ws.root, baseline.output))
    view = EditView(inputs.task.requirement, path, why, seen.shown, baseline.output[-limits.failure_chars:],
                    format="definitions", definitions=seen.names, blamed=seen.pointed, offer_skip=False,
                    whole=content if seen.excerpted else "", short_docstrings=seen.short_docstrings)
    fmt = FILE_FORMATS["definitions"]
    prompt = fmt.prompt(view)
    try:
        done = inputs.backend.complete(prompt, max_tokens=fmt.max_tokens or inputs.max_tokens,
                                       temperature=inputs.temperature, seed=inputs.seed)
    except BackendError as exc:
        return ArmEnd(f"backend error: {exc.message[:200]}", ws, transcript=prompt)
    answer = fmt.parse(done.text, content, view)
    transcript = f"{prompt}\n--- answer\n{done.text}"
    if answer.refusal is not None:
        return ArmEnd(f"answer not applied: {answer.refusal.code}", ws, refused=1,
                      transcript=f"{transcript}\n--- refused: {answer.refusal.detail}")
    after = content
    for change in answer.changes:
        after = after.replace(change.search, change.replace, 1)
    if after != content:
        (ws.root / path).write_text(after, encoding="utf-8")
    status = f"rewrote {len(answer.changes)} definition(s) of {path}" if after != content else "changed nothing"
    return ArmEnd(status, ws, edits=int(after != content), transcript=f"{transcript}\n--- {status}")


run_prompt_excerpt = in_kept_copy(_run, "the excerpt prompt-only arm")
