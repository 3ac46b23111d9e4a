"""Exercise 05a's probe: the answer is the scenario's text, so the child only reads it out.

The judge compiles it and runs the dialogs itself (the runs call no code of the learner's file).
"""

from __future__ import annotations

from typing import Any


def probe(module: Any, cases: Any) -> dict[str, Any]:
    text = getattr(module, "SCENARIO", None)
    return {"scenario": text if isinstance(text, str) else None}
