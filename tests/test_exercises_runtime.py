"""Mutation tests for exercises 02–05: a realistic wrong answer gets a precise message.

Each test takes the reference solution, makes one mistake a learner plausibly makes, and checks
that the checker names that mistake (where it happened and what was expected) — not just "wrong".
"""

from __future__ import annotations

from pathlib import Path

from labkit.exercises import exercises_root, run_check


def _mutated(folder: str, old: str, new: str, tmp_path: Path) -> Path:
    solution = (exercises_root() / folder / "solution.py").read_text(encoding="utf-8")
    assert old in solution, f"the mutation target is gone from {folder}/solution.py: {old!r}"
    target = tmp_path / "mine.py"
    target.write_text(solution.replace(old, new), encoding="utf-8")
    return target


def test_04_a_chain_check_that_only_looks_at_seq_misses_a_swapped_in_event(tmp_path: Path):
    mine = _mutated("04_replay_and_compare", "if event.seq != position or event.prev_hash != previous:",
                    "if event.seq != position:", tmp_path)
    report = run_check("04", mine)
    assert report.feedback == [
        "first_broken_link, event 2 replaced by the same event of another run: returned None, expected 2"]


def test_04_a_reducer_that_counts_a_record_twice_is_stopped_at_the_second_read(tmp_path: Path):
    mine = _mutated("04_replay_and_compare", "        if record not in state.records_read:\n"
                    "            changes[\"records_read\"]", "        if True:\n            changes[\"records_read\"]",
                    tmp_path)
    report = run_check("04", mine)
    assert report.feedback == [
        "reduce, run 'a record read twice': first wrong after #4 READING --read_ok--> READING "
        "{'record_id': 'r1', 'more': True}: records_read is ('r1', 'r2', 'r1'), expected ('r1', 'r2')"]
