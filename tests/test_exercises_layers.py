"""Mutation tests for exercise 08a: plausible wrong answers get a precise message.

Each test takes the reference solution, makes one mistake a learner plausibly makes, and checks
that the checker names it.
"""

from __future__ import annotations

from pathlib import Path

from labkit.course.exercises import exercises_root, run_check

SOLUTION = exercises_root() / "08a_layers" / "solution.py"
PROPERTY = '''    @property
    def lifecycle(self) -> str:
        """Computed on every read; there is no setter, so nobody can make it disagree with the layers."""
        if self._aborted or (self._phase == "COMPLETE" and self._flow != "IDLE"):
            return "paused"
        if self._phase == "COMPLETE":
            return "completed"
        return "running" if self._running else "idle"
'''


def _mutated(tmp_path: Path, *pairs: tuple[str, str]) -> Path:
    text = SOLUTION.read_text(encoding="utf-8")
    for before, after in pairs:
        assert before in text, f"the mutation target is gone from 08a_layers/solution.py: {before!r}"
        text = text.replace(before, after)
    target = tmp_path / "mine.py"
    target.write_text(text, encoding="utf-8")
    return target


def test_a_lifecycle_kept_as_a_field_can_be_set_directly_and_drifts_from_the_layers(tmp_path: Path):
    mine = _mutated(tmp_path, (PROPERTY, '    lifecycle = "idle"\n'),
                    ("self._running, self._aborted = True, False",
                     "self._running, self._aborted = True, False\n        self.lifecycle = \"running\""),
                    ("self._aborted = True  #", "self.lifecycle = \"paused\"\n        self._aborted = True  #"),
                    ("self._running = False\n", "self._running = False\n        self.lifecycle = \"idle\"\n"))
    feedback = run_check("08a", mine).feedback
    assert feedback[0].startswith("BookStatus().lifecycle = 'completed' was accepted: the lifecycle can be set")
    assert "lifecycle, an abort the loop has honoured (after start(), abort(), stop()): 'idle', which the layers " \
        "do not give" \
        in feedback
    assert "lifecycle after BookStatus.restore('COMPLETE', 'IDLE'): 'idle', which the layers do not give (it must be " \
        "recomputed from the restored layers)" in feedback


def test_a_rewriting_to_reviewing_shortcut_is_named_with_its_reason(tmp_path: Path):
    mine = _mutated(tmp_path, ('"REWRITING": {"WRITING", "STEERING"}',
                               '"REWRITING": {"WRITING", "STEERING", "REVIEWING"}'))
    assert run_check("08a", mine).feedback == [
        "FLOW_WHITELIST: REWRITING -> REVIEWING is allowed, but a rewrite must go back to WRITING before a new review"]


def test_a_lifecycle_that_trusts_the_phase_alone_reports_completed_with_a_review_open(tmp_path: Path):
    mine = _mutated(tmp_path, ('if self._aborted or (self._phase == "COMPLETE" and self._flow != "IDLE"):',
                               "if self._aborted:"))
    assert [f for f in run_check("08a", mine).feedback if "hidden" not in f] == [
        "lifecycle, phase COMPLETE while a review is still open (after start(), move_phase('WRITING'), "
        "move_flow('WRITING'), move_flow('REVIEWING'), move_phase('COMPLETE')): 'completed', which "
        "the layers do not give",
        "lifecycle after BookStatus.restore('COMPLETE', 'REVIEWING'): 'completed', which the layers do not give (it "
        "must be recomputed from the restored layers)"]


def test_a_lifecycle_that_asks_running_before_aborted_hides_the_abort(tmp_path: Path):
    mine = _mutated(tmp_path, ('        if self._aborted or (self._phase == "COMPLETE" and self._flow != "IDLE"):',
                               '        if self._running and not self._phase == "COMPLETE":\n'
                               '            return "running"\n'
                               '        if self._aborted or (self._phase == "COMPLETE" and self._flow != "IDLE"):'))
    assert [f for f in run_check("08a", mine).feedback if "hidden" not in f] == [
        "lifecycle, an abort the loop has not seen yet (after start(), abort()): 'running', which "
        "the layers do not give"]


def test_steering_forgotten_from_polishing_is_named(tmp_path: Path):
    mine = _mutated(tmp_path, ('"POLISHING": {"WRITING", "STEERING"}', '"POLISHING": {"WRITING"}'))
    assert run_check("08a", mine).feedback == [
        "FLOW_WHITELIST: POLISHING -> STEERING is missing (the README allows it)"]
