"""The whole-file prompt-only arm: one chat prompt with everything, answered with whole files.

This is the baseline a new user would write first, and the strongest one-call baseline the kit
knows: the prompt holds the requirement, every source file and the failing tests' *output* (the
same tail the machine's first edit is shown with ``first_failure``), and the model answers with
each file it changes written out in full, in fenced blocks — no search text to copy exactly and no
JSON to escape. The answer is applied as given under the physical rules only (a file of the
project, inside the copy); a test file may be overwritten, and the verifier counts it. No retry,
no test run of its own: the verifier's one run judges.
"""

from __future__ import annotations

import re

from labkit.llm.errors import BackendError
from labkit.repoedit.arm_io import ArmEnd, ArmInputs, in_kept_copy
from labkit.repoedit.edits import outside_repo
from labkit.repoedit.index import index_project
from labkit.repoedit.planners import EXAMPLE
from labkit.repoedit.workspace import Workspace

WHOLE_TOKENS = 800  # a whole small file, or two, fit; the machine's definition edits get 600 per file
FAILURE_CHARS = 900  # as the machine's Limits.failure_chars

PROMPT = """You fix a small Python project so that its failing tests pass.
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
_BLOCK = re.compile(r"FILE:\s*`?([^\s`]+)`?\s*\n```[\w+-]*\n(.*?)```", re.DOTALL)


def whole_prompt(requirement: str, failing: str, files: dict[str, str]) -> str:
    """The one prompt: requirement, the failing output, every source file, after the worked example."""
    shown = "\n".join(f"FILE: {path}\n```python\n{text.rstrip()}\n```" for path, text in files.items())
    return PROMPT.format(ex_requirement=EXAMPLE.requirement, ex_failing=EXAMPLE.failing, ex_path=EXAMPLE.path,
                         ex_before=EXAMPLE.before, ex_after=EXAMPLE.before.replace(EXAMPLE.search, EXAMPLE.replace),
                         requirement=requirement, failing=failing.strip() or "(none)", files=shown)


HEAD = PROMPT.split("Your project:\n", 1)[0].format(
    ex_requirement=EXAMPLE.requirement, ex_failing=EXAMPLE.failing, ex_path=EXAMPLE.path, ex_before=EXAMPLE.before,
    ex_after=EXAMPLE.before.replace(EXAMPLE.search, EXAMPLE.replace)) + "Your project:\n"
"""The part of every whole-file prompt no task changes (a backend may keep its evaluated state)."""


def parse_files(answer: str) -> dict[str, str]:
    """The files an answer writes out, by path (a later block for the same path wins)."""
    return {path: body if body.endswith("\n") else body + "\n" for path, body in _BLOCK.findall(answer)}


def _run(inputs: ArmInputs, ws: Workspace) -> ArmEnd:
    """One call; each file written as given if it is a file of the project; the copy is kept for the verifier."""
    assert inputs.backend is not None
    index = index_project(ws.root)
    files = {path: (ws.root / path).read_text(encoding="utf-8") for path in index.source_files}
    prompt = whole_prompt(inputs.task.requirement, inputs.baseline.output[-FAILURE_CHARS:], files)
    transcript = [prompt]
    try:
        done = inputs.backend.complete(prompt, max_tokens=WHOLE_TOKENS, temperature=inputs.temperature,
                                       seed=inputs.seed)
    except BackendError as exc:
        return ArmEnd(f"backend error: {exc.message[:200]}", ws, transcript=prompt)
    transcript.append(f"--- answer\n{done.text}")
    written, refused = 0, 0
    answered = parse_files(done.text)
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
