"""EDIT_FILE's contract under ``definition_edit``: whole definitions in fenced code blocks, named from a closed list.

Why not JSON here, when every other answer of the machine is JSON under a grammar: on the dev
tasks the 1.5B coder model, asked to put a whole function inside a JSON string, copied the
function back unchanged (every escaped quote and newline is one more thing to get right), while
the same model answering in a fenced block — the form it was trained to write code in — fixed
it. So the code goes in a ```python block, and the machine keeps what makes the contract safe:
the name must come from the file's own list (checked here, refused with the list otherwise), the
code must parse and define one thing (:func:`~labkit.repoedit.definitions.definition_edit`), and
every edit guard still judges the result. The answer::

    DEFINITION: count_words
    ```python
    def count_words(text):
        return len(text.split())
    ```

one block per definition changed (at most :data:`MAX_DEFINITIONS`), or ``SKIP: <why>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labkit.repoedit.edits import Refusal

MAX_DEFINITIONS = 3
_BLOCK = re.compile(r"DEFINITION:\s*`?([\w.()]+)`?\s*\n```[\w+-]*\n(.*?)```", re.DOTALL)
_SKIP = re.compile(r"^\s*SKIP:\s*(.*)", re.DOTALL)


@dataclass(frozen=True)
class DefinitionAnswer:
    """A parsed answer: ``ok`` with (name, code) pairs, or ``skip`` with a reason."""

    status: str
    changes: tuple[tuple[str, str], ...] = ()
    reason: str = ""


def parse_definitions(raw: str, names: tuple[str, ...]) -> tuple[DefinitionAnswer | None, Refusal | None]:
    """Read an answer in the definition contract; a name outside ``names`` or no block at all is a refusal."""
    skip = _SKIP.match(raw)
    blocks = _BLOCK.findall(raw)
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
