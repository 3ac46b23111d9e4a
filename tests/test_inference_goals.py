"""The speed goals are judged from the records as they are: met, missed by how much, or not recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labkit.core.errors import LabkitError
from labkit.inference import SPEED_GOALS, SpeedGoal, render_speed_goals, speed_goals

ROOT = Path(__file__).resolve().parents[1]

RATIO = SpeedGoal("ratio", "r.json", lambda r: r["ratio"], 2.0, "×", lambda r: f"because {r['why']}")
TIME = SpeedGoal("time", "t.json", lambda r: r["s"], 10.0, "s", lambda r: "slow disk", lower_is_better=True)


def write(folder: Path, name: str, record: dict) -> None:
    (folder / name).write_text(json.dumps(record), encoding="utf-8")


def test_met_missed_and_margin(tmp_path: Path) -> None:
    write(tmp_path, "r.json", {"ratio": 1.5, "why": "the prefix is short"})
    write(tmp_path, "t.json", {"s": 8.0})
    ratio, time = speed_goals(tmp_path, (RATIO, TIME))
    assert (ratio.met, ratio.margin, ratio.why) == (False, -0.25, "because the prefix is short")
    assert (time.met, time.margin) == (True, 0.2)
    text = render_speed_goals([ratio, time])
    assert "missed by 25%" in text and "met by 20%" in text and "goal ≤ 10 s" in text


def test_a_missing_record_is_not_recorded_never_met(tmp_path: Path) -> None:
    (result,) = speed_goals(tmp_path, (RATIO,))
    assert result.value is None and result.met is None
    assert "not recorded" in render_speed_goals([result])


def test_a_record_without_the_field_is_a_clear_error(tmp_path: Path) -> None:
    write(tmp_path, "r.json", {"something": "else"})
    with pytest.raises(LabkitError, match="lacks a field"):
        speed_goals(tmp_path, (RATIO,))
    with pytest.raises(LabkitError, match="not a folder"):
        speed_goals(tmp_path / "nowhere")


def test_every_declared_goal_reads_its_committed_record() -> None:
    results = speed_goals(ROOT / "data" / "bench")
    assert [r.goal for r in results] == list(SPEED_GOALS)
    for r in results:
        assert r.value is not None, f"{r.goal.record} is not committed"
        assert r.why
