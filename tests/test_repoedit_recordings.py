"""Facts the issue promises about the recorded code comparisons, read from their logs (no model, no pytest).

The 270M model used to die at the plan step (it copied the prompt's placeholder as a file name); with a
closed plan and code planning one-file projects, every one of its machine runs must get as far as an edit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.store import load_events

PLUS = Path(__file__).resolve().parents[1] / "data" / "repoedit" / "compare-plus"


@pytest.mark.parametrize("model", ["gemma3-270m", "qwen2.5-coder-1.5b"])
def test_every_recorded_machine_run_reaches_the_edit_state(model):
    logs = sorted((PLUS / model / "logs" / "machine_plus").glob("*.jsonl"))
    assert len(logs) == 10
    for log in logs:
        dests = [e.dest for e in load_events(log) if e.type == "transitioned"]
        assert "EDIT_FILE" in dests, f"{log.name}: the run never reached EDIT_FILE ({dests})"
