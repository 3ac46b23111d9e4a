"""The whole-file prompt-only arm: one chat prompt with everything, answered with whole files (``whole_files``).

The prompt holds the requirement, every source file and the failing tests' output; each file the answer writes
out is written as given if it is a file of the project (a test file may be overwritten: the verifier counts it).
No retry and no test run of its own: the verifier judges.
"""

from __future__ import annotations

from labkit.llm.errors import BackendError
from labkit.repoedit.arm_io import ArmEnd, ArmInputs, in_kept_copy
from labkit.repoedit.edits import outside_repo
from labkit.repoedit.formats import FORMATS
from labkit.repoedit.index import index_project
from labkit.repoedit.workspace import Workspace

FAILURE_CHARS = 900  # as the machine's Limits.failure_chars


def _run(inputs: ArmInputs, ws: Workspace) -> ArmEnd:
    """One call; each file written as given if it is a file of the project; the copy is kept for the verifier."""
    assert inputs.backend is not None
    index = index_project(ws.root)
    files = {path: (ws.root / path).read_text(encoding="utf-8") for path in index.source_files}
    fmt = FORMATS["whole_files"]
    prompt = fmt.prompt(inputs.task.requirement, inputs.baseline.output[-FAILURE_CHARS:], files)
    transcript = [prompt]
    try:
        done = inputs.backend.complete(prompt, max_tokens=fmt.max_tokens, temperature=inputs.temperature,
                                       seed=inputs.seed)
    except BackendError as exc:
        return ArmEnd(f"backend error: {exc.message[:200]}", ws, transcript=prompt)
    transcript.append(f"--- answer\n{done.text}")
    written, refused = 0, 0
    answered = fmt.parse(done.text)
    for path, body in answered.items():
        outside = outside_repo(ws.root, path)
        if outside or not (ws.root / path).is_file():
            refused += 1
            transcript.append(f"--- refused {path}: {outside or 'not a file of the project'}")
            continue
        if (ws.root / path).read_text(encoding="utf-8") != body:
            (ws.root / path).write_text(body, encoding="utf-8")
            written += 1
    transcript.append(f"--- wrote {written} file(s), refused {refused}")
    status = (f"wrote {written} file(s)" if written or refused
              else "every file left as it was" if answered else "no file in the answer")
    return ArmEnd(status, ws, edits=written, refused=refused, transcript="\n".join(transcript))


run_prompt_whole = in_kept_copy(_run, "the whole-file prompt-only arm")
