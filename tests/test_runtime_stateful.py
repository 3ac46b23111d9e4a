"""A Hypothesis stateful test of the planner–executor runtime.

Hypothesis draws a schedule (task, budget, faults including crashes, through the same generator as
``labkit bench fuzz``), then interleaves runtime steps with a person's answers (approve, refuse, or
no answer while the clock runs) whenever the run pauses. After every step it checks the three
invariants, that the replay of the SQLite log equals the live state, at most one side effect per
idempotency key in the draft area's own audit table, and that a finished run refuses everything.
A failure shrinks to a minimal schedule, reported as the ``labkit run --faults ...`` line (and
``labkit decide`` lines) that reproduce it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from labkit.core.errors import LabkitError
from labkit.runtime.events import HumanDecision
from labkit.runtime.fuzz import DECISIONS, FuzzRun, Schedule, draw_schedule
from labkit.runtime.table import planner_executor_table
from labkit.runtime.tools import DraftStore

SETTINGS = settings(max_examples=60, stateful_step_count=40, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


class HypothesisChooser:
    """The fuzz generator's choices, drawn from Hypothesis (so it can shrink them)."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def pick(self, options: Any) -> Any:
        return self.data.draw(st.sampled_from(list(options)))

    def number(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))


class RuntimeMachine(RuleBasedStateMachine):
    """One run per example: the schedule is drawn first, then steps and answers interleave."""

    run: FuzzRun | None = None

    @initialize(data=st.data())
    def start(self, data: Any) -> None:
        schedule = draw_schedule(HypothesisChooser(data))
        self.schedule = schedule
        self.answers: list[str] = []
        self.crashes = 0
        root = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
        self.folder = Path(tempfile.mkdtemp(prefix="labkit-stateful-", dir=root))
        self.run = FuzzRun(schedule, self.folder)

    def _reproduce(self) -> str:
        s = self.schedule
        return "\n".join(Schedule(s.task_id, s.overrides, s.faults, tuple(self.answers)).commands())

    @precondition(lambda self: self.run is not None and not self.run.runtime.machine.finished
                  and not self.run.paused)
    @rule()
    def advance(self) -> None:
        """Step the runtime until it finishes or waits for a person, checking after every step
        (one rule for the whole stretch keeps the program short, so a failure shrinks fast)."""
        assert self.run is not None
        for _ in range(2_000):
            self.run.step()
            self.every_rule_holds()
            if self.run.runtime.machine.finished or self.run.paused:
                return
        raise AssertionError("no end or pause after 2000 steps\nreproduce with:\n" + self._reproduce())

    @precondition(lambda self: self.run is not None and self.run.paused)
    @rule(answer=st.sampled_from(DECISIONS))
    def answer(self, answer: str) -> None:
        assert self.run is not None
        self.answers.append(answer)
        self.run.decide(answer)

    @precondition(lambda self: self.run is not None and self.run.runtime.machine.finished)
    @rule(event=st.sampled_from(sorted({r.event for r in planner_executor_table().rows})))
    def after_the_end(self, event: str) -> None:
        """A finished run refuses every event and every fact, and its log does not change."""
        assert self.run is not None
        log = self.run.runtime.log
        before = (len(log), log.head)
        with pytest.raises(LabkitError):
            self.run.runtime.machine.fire(event)
        with pytest.raises(LabkitError):
            self.run.runtime.machine.record(HumanDecision(action_id="late", decision="refuse", note=event))
        assert (len(log), log.head) == before
        assert self.run.runtime.step() is False

    @invariant()
    def every_rule_holds(self) -> None:
        if self.run is None:
            return
        runtime = self.run.runtime
        problems = self.run.check(full=runtime.machine.finished or self.run.paused
                                  or self.run.crashes != self.crashes)
        self.crashes = self.run.crashes
        assert not problems, "; ".join(problems) + "\nreproduce with:\n" + self._reproduce()

    def teardown(self) -> None:
        if self.run is not None:
            self.run.close()
            shutil.rmtree(self.folder, ignore_errors=True)


def test_the_runtime_keeps_its_guarantees_under_random_schedules() -> None:
    run_state_machine_as_test(RuntimeMachine, settings=SETTINGS)


def test_a_repeated_write_is_found_and_shrinks_to_a_reproducible_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """A draft area that applies every save twice (a retrying driver, say): the log cannot see it, the
    store's audit table can. Hypothesis must find it and shrink the schedule to no faults at all."""
    real_save = DraftStore.save

    def save_twice(self: DraftStore, key: str, text: str, request: str = "") -> bool:
        real_save(self, key, text, request)
        return real_save(self, key, text, request)

    monkeypatch.setattr(DraftStore, "save", save_twice)
    # Hypothesis shrinks for up to five minutes; a CI test gives it 30 s (an internal knob, guarded).
    import hypothesis.internal.conjecture.engine as engine

    if hasattr(engine, "MAX_SHRINKING_SECONDS"):
        monkeypatch.setattr(engine, "MAX_SHRINKING_SECONDS", 30)
    with pytest.raises(AssertionError) as failure:
        run_state_machine_as_test(RuntimeMachine, settings=settings(SETTINGS, max_examples=40))
    message = str(failure.value)
    assert "saved 2 times with the same text (draft area audit)" in message
    line = message.split("reproduce with:\n", 1)[1].splitlines()[0].strip()
    assert line.startswith("labkit run ") and "--faults none" in line and "--set" not in line, line


def test_a_finished_run_that_takes_an_event_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Break terminal absorption (a finished run accepts `start` again): the check after the last step
    must say so."""
    from labkit.core.machine import LabMachine

    real_fire = LabMachine.fire

    def fire(self: LabMachine, trigger: str, **payload: Any) -> Any:
        if self.status in self.table.terminal and trigger == "start":
            self._machine.set_state("PLANNING", model=self._model)
            return None
        return real_fire(self, trigger, **payload)

    monkeypatch.setattr(LabMachine, "fire", fire)
    with pytest.raises(AssertionError, match=r"the finished run .* took event 'start'"):
        run_state_machine_as_test(RuntimeMachine, settings=settings(SETTINGS, max_examples=20,
                                                                    phases=[Phase.generate]))
