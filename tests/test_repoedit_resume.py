"""A repo-editing run that stops half-way resumes from its log and its copy, and ends as if it never stopped.

The runs are real (a git copy, pytest subprocesses); the stops are real too: a process killed with
SIGKILL, and a log that raises KeyboardInterrupt right after its k-th append, for every k of a
scenario, so that each place a run can stop is tried once. A resumed run must record the same facts
(proposals, refusals, edits, test outcomes, transitions) as the run that never stopped, ask the
planner the same questions in total and a human at most once per decision.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labkit.core.errors import LabkitError
from labkit.core.events import Event, RunStarted, Transitioned
from labkit.core.store import JsonlLog, load_events
from labkit.repoedit.events import EditApplied, Proposed, RepoResumed, TestsRan
from labkit.repoedit.machine import Limits, RepoEditRun
from labkit.repoedit.planners import EditView, PlanView, ScriptedPlanner
from labkit.repoedit.tasks import load_tasks, project_dir
from tests.test_repoedit_machine import BROKEN, FIX, edit, plan, replays

pytestmark = pytest.mark.slow  # real git and pytest subprocesses, many runs

WORDS = load_tasks()["wordcount-whitespace"]
ROOT = Path(__file__).resolve().parents[1]


class StopAfter(JsonlLog):
    """A log that stops its run (KeyboardInterrupt, as Ctrl-C would) right after its ``k``-th append."""

    def __init__(self, path: Path, k: int) -> None:
        super().__init__(path, run_id=WORDS.id)
        self.k, self.appended = k, 0

    def append(self, event: Event, *, at: float = 0.0, owned: bool = False) -> Event:
        stored = super().append(event, at=at, owned=owned)
        self.appended += 1
        if self.appended == self.k:
            raise KeyboardInterrupt
        return stored


# ------------------------------------------------------------------ scenarios
# Planners answer from the view alone, so a resumed run, which asks with the notes it reads from the
# log, gets the answer the uninterrupted run got.
def refusals_then_fix(view: PlanView | EditView) -> str:
    """A plan refused once, an edit refused once, a broken edit, then the targeted fix."""
    if isinstance(view, PlanView):
        return plan("words.py") if view.refused else "a plan, not JSON"
    if view.failure:
        return edit("len(text.split()) + 1", "len(text.split())")
    return BROKEN if view.refused else "{"


def broken(view: PlanView | EditView) -> str:
    return plan("words.py") if isinstance(view, PlanView) else BROKEN


BIG = edit('    return len(text.split(" "))', "    return len(text.split())" + "\n    pass" * 12)


def big(view: PlanView | EditView) -> str:
    return plan("words.py") if isinstance(view, PlanView) else BIG


class Asked:
    """An approver that says yes and counts how often it was asked."""

    __name__ = "reviewer"

    def __init__(self) -> None:
        self.times = 0

    def __call__(self, file: str, changed: int, diff: str) -> bool:
        self.times += 1
        return True


SCENARIOS: dict[str, tuple[Callable[[Any], str], Limits]] = {
    "refusals and a targeted fix": (refusals_then_fix, Limits()),
    "rollback": (broken, Limits(fix_budget=0)),
    "human approval": (big, Limits(diff_limit=5)),
}


def start(answer: Callable[[Any], str], limits: Limits, log: JsonlLog, at: Path,
          approver: Callable[..., bool] | None = None) -> tuple[RepoEditRun, ScriptedPlanner]:
    planner = ScriptedPlanner(answer, answer)
    extra = {"approver": approver} if approver is not None else {}
    run = RepoEditRun(project_dir(WORDS), WORDS.requirement, planner, task_id=WORDS.id, limits=limits,
                      log=log, clock=lambda: 0.0, copy_at=at, **extra)
    return run, planner


def facts(events: list[Event]) -> list[tuple[Any, ...]]:
    """What a run decided and saw, without times, pytest's timing line or the resume records."""
    out: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, RepoResumed):
            continue
        if isinstance(e, Transitioned):
            out.append(("transition", e.trigger, e.dest))
        elif isinstance(e, TestsRan):
            out.append(("tests", e.phase, e.outcome, tuple(e.passed), tuple(e.failed), e.digest))
        elif isinstance(e, Proposed):
            out.append(("proposed", e.state, e.file, e.raw))
        else:
            body = e.model_dump(exclude={"seq", "hash", "prev_hash", "at", "run_id", "output", "seconds"})
            out.append((type(e).__name__, json.dumps(body, sort_keys=True, default=str)))
    return out


def asked(planner: ScriptedPlanner) -> list[tuple[Any, ...]]:
    """The questions a planner got (a failure's text reduced to whether there was one: it holds timings)."""
    return [(type(v).__name__, getattr(v, "path", ""), v.refused, bool(getattr(v, "failure", "")))
            for v in planner.views]


def uninterrupted(name: str, tmp_path: Path) -> tuple[RepoEditRun, ScriptedPlanner, int]:
    answer, limits = SCENARIOS[name]
    approver = Asked()
    run, planner = start(answer, limits, JsonlLog(tmp_path / "whole.jsonl", run_id=WORDS.id),
                         tmp_path / "whole.copy", approver)
    run.run()
    return run, planner, approver.times


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_run_stopped_after_any_event_resumes_to_the_same_end(name, tmp_path):
    whole, whole_planner, whole_asked = uninterrupted(name, tmp_path)
    expected = facts(list(whole.events))
    assert not (tmp_path / "whole.copy").exists()  # a finished run removes its copy
    answer, limits = SCENARIOS[name]
    for k in range(1, len(expected)):
        path, at, approver = tmp_path / f"stop{k}.jsonl", tmp_path / f"stop{k}.copy", Asked()
        first = None
        with pytest.raises(KeyboardInterrupt):
            first, first_planner = start(answer, limits, StopAfter(path, k), at, approver)
            first.run()
        views = asked(first_planner) if first is not None else []
        resumed, planner = start(answer, limits, JsonlLog(path, run_id=WORDS.id), at, approver)
        resumed.run()
        events = list(resumed.events)
        assert facts(events) == expected, f"stopped after event {k}"
        assert views + asked(planner) == asked(whole_planner), f"stopped after event {k}"
        assert approver.times == whole_asked, f"stopped after event {k}"
        assert sum(isinstance(e, RepoResumed) for e in events) == 1
        end = replays(resumed)
        assert end.seq == whole.state.seq + 1  # the one RepoResumed
        assert dataclasses.replace(end, seq=whole.state.seq) == whole.state
        assert not at.exists()


def test_a_resume_undoes_a_write_the_log_never_recorded(tmp_path):
    path, at = tmp_path / "run.jsonl", tmp_path / "run.copy"
    answer, limits = SCENARIOS["refusals and a targeted fix"]
    whole, _, _ = uninterrupted("refusals and a targeted fix", tmp_path)
    with pytest.raises(KeyboardInterrupt):
        start(answer, limits, StopAfter(path, 12), at)[0].run()
    (at / "wordcount" / "words.py").write_text("half a write", encoding="utf-8")  # the process died mid-edit
    resumed, _ = start(answer, limits, JsonlLog(path, run_id=WORDS.id), at)
    resumed.run()
    note = next(e for e in resumed.events if isinstance(e, RepoResumed))
    assert note.reset and note.found != note.expected
    assert facts(list(resumed.events)) == facts(list(whole.events))


def test_a_copy_changed_behind_the_runs_back_is_refused(tmp_path):
    path, at = tmp_path / "run.jsonl", tmp_path / "run.copy"
    answer, limits = SCENARIOS["rollback"]
    with pytest.raises(KeyboardInterrupt):
        start(answer, limits, StopAfter(path, 8), at)[0].run()
    source = at / "wordcount" / "words.py"
    source.write_text(source.read_text(encoding="utf-8") + "\n# changed by hand\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(source.parent), "commit", "-qam", "by hand"], check=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})
    before = path.read_bytes()
    with pytest.raises(LabkitError, match="not the tree the log describes"):
        start(answer, limits, JsonlLog(path, run_id=WORDS.id), at)
    assert path.read_bytes() == before


@pytest.mark.parametrize("change", [{"limits": Limits(fix_budget=2)}, {"task_id": "another-task"}])
def test_a_log_of_other_settings_is_refused_and_left_as_it_was(change, tmp_path):
    path, at = tmp_path / "run.jsonl", tmp_path / "run.copy"
    answer, limits = SCENARIOS["rollback"]
    with pytest.raises(KeyboardInterrupt):
        start(answer, limits, StopAfter(path, 6), at)[0].run()
    before = path.read_bytes()
    kwargs = {"limits": limits, "task_id": WORDS.id, **change}
    with pytest.raises(LabkitError, match="other settings"):
        RepoEditRun(project_dir(WORDS), WORDS.requirement, ScriptedPlanner(answer, answer),
                    log=JsonlLog(path, run_id=WORDS.id), copy_at=at, **kwargs)
    assert path.read_bytes() == before


def test_a_stopped_run_whose_copy_is_gone_is_refused(tmp_path):
    path, at = tmp_path / "run.jsonl", tmp_path / "run.copy"
    answer, limits = SCENARIOS["rollback"]
    with pytest.raises(KeyboardInterrupt):
        start(answer, limits, StopAfter(path, 6), at)[0].run()
    subprocess.run(["rm", "-rf", str(at)], check=True)
    before = path.read_bytes()
    with pytest.raises(LabkitError, match="copy is gone"):
        start(answer, limits, JsonlLog(path, run_id=WORDS.id), at)
    assert path.read_bytes() == before


def test_a_finished_log_is_not_run_again(tmp_path):
    answer, limits = SCENARIOS["rollback"]
    run, _ = start(answer, limits, JsonlLog(tmp_path / "run.jsonl", run_id=WORDS.id), tmp_path / "run.copy")
    run.run()
    before = (tmp_path / "run.jsonl").read_bytes()
    with pytest.raises(LabkitError, match="finished run"):
        start(answer, limits, JsonlLog(tmp_path / "run.jsonl", run_id=WORDS.id), tmp_path / "run.copy")
    assert (tmp_path / "run.jsonl").read_bytes() == before


# ------------------------------------------------------------------ a real kill
KILLED = """
import os, signal, sys
from pathlib import Path
from labkit.repoedit.machine import RepoEditRun
from labkit.repoedit.planners import ScriptedPlanner
from labkit.repoedit.tasks import load_tasks, project_dir
from labkit.core.store import JsonlLog
from tests.test_repoedit_machine import plan

task = load_tasks()["wordcount-whitespace"]
def die(view):
    os.kill(os.getpid(), signal.SIGKILL)  # the process dies while the model would be writing the edit
run = RepoEditRun(project_dir(task), task.requirement, ScriptedPlanner([plan("words.py")], die),
                  task_id=task.id, log=JsonlLog(sys.argv[1], run_id=task.id, durable=True),
                  clock=lambda: 0.0, copy_at=sys.argv[2])
run.run()
"""


def test_a_killed_process_leaves_a_run_that_resumes_and_replays(tmp_path):
    path, at = tmp_path / "run.jsonl", tmp_path / "run.copy"
    killed = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED), str(path), str(at)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    stopped = load_events(path)
    assert isinstance(stopped[0], RunStarted) and stopped[-1].dest == "EDIT_FILE"  # type: ignore[attr-defined]
    assert at.is_dir()
    planner = ScriptedPlanner([], [FIX])
    resumed = RepoEditRun(project_dir(WORDS), WORDS.requirement, planner, task_id=WORDS.id,
                          log=JsonlLog(path, run_id=WORDS.id), clock=lambda: 0.0, copy_at=at)
    assert resumed.run().status == "DONE"
    assert [v.path for v in planner.views] == ["words.py"]  # the plan was not asked for again
    assert [e.file for e in resumed.events if isinstance(e, EditApplied)] == ["words.py"]
    assert not at.exists()
    replayed = subprocess.run([sys.executable, "-m", "labkit", "replay", str(path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 0 and "hash chain verified" in replayed.stdout
    assert "status: DONE" in replayed.stdout


def test_the_run_command_resumes_a_stopped_run_from_its_log(tmp_path, capsys):
    from labkit.cli import main
    from labkit.repoedit.planners import OraclePlanner

    path = tmp_path / "run.jsonl"
    with pytest.raises(KeyboardInterrupt):
        RepoEditRun(project_dir(WORDS), WORDS.requirement, OraclePlanner(WORDS), task_id=WORDS.id,
                    log=StopAfter(path, 7), copy_at=tmp_path / "run.jsonl.copy").run()
    assert (tmp_path / "run.jsonl.copy").is_dir()
    assert main(["repoedit", "run", WORDS.id, "--log", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"resuming the stopped run in {path}" in out and "RUN_TESTS --green--> DONE" in out
    assert not (tmp_path / "run.jsonl.copy").exists()
    events = load_events(path)
    assert sum(isinstance(e, RepoResumed) for e in events) == 1 and events[-1].dest == "DONE"  # type: ignore[attr-defined]
