"""Exercise 02b's probe: the file holds only literals, so the child only proves that it imports.

The judge reads the predictions from the file's source in its own process (``ast.literal_eval``),
not from this module: a file that computes its answers, or deletes ``__file__``, is refused there.
"""

from __future__ import annotations

from typing import Any


def probe(module: Any, cases: Any) -> dict[str, Any]:
    return {"defines": sorted(name for name in ("PREDICTIONS", "OUTCOMES") if hasattr(module, name))}
