"""The recording on the seeded bugs in real packages: test packages only, one build, a clean commit.

Replaying it needs the test split's tasks built (many minutes of package test suites), so it is checked here
from its rows and provenance only; `labkit compare code --replay` replays it where the tasks are built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.core.provenance import read_provenance
from labkit.llm.models import get_model
from labkit.repoedit.compare import load_rows, read_config
from labkit.repoedit.pypi_seeded import PINNED, load_digests, load_manifest

DATA = Path(__file__).resolve().parents[1] / "data" / "repoedit" / "pypi-seeded"
FOLDERS = sorted(p for p in DATA.glob("*") if (p / "compare.json").exists())


def test_the_seeded_benchmark_is_recorded():
    assert FOLDERS, f"no recording under {DATA}"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_recording_holds_the_test_packages_only(folder):
    config = read_config(folder)
    assert config.tasks_file == "pypi:seeded:test" and config.split == "test"
    test_packages = {p.name for p in load_manifest().packages if p.split == "test"}
    assert len(config.task_ids) >= 150
    assert {t.rsplit("-", 1)[0] for t in config.task_ids} <= test_packages
    rows = load_rows(folder / "runs.jsonl")
    assert rows and len({r.key() for r in rows}) == len(rows)
    assert {r.task for r in rows} <= set(config.task_ids) and {r.split for r in rows} == {"test"}


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_a_seeded_row_is_fixed_exactly_when_the_verifier_says_so(folder):
    for r in load_rows(folder / "runs.jsonl"):
        assert r.fixed == (r.outcome == "passed" and not r.tests_changed and not r.outside_written
                           and r.hidden_passed is not False), (r.arm, r.task)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_recording_was_made_live_on_a_clean_commit_from_the_pinned_build(folder):
    config = read_config(folder)
    sessions = read_provenance(folder)
    assert sessions and all(s.mode == "live" and "dirty" not in s.commit for s in sessions)
    assert {s.model_sha256 for s in sessions} == {get_model(config.model).sha256}
    pinned = load_digests(PINNED)
    for s in sessions:  # each task a stretch ran, as the pinned build shows it
        assert all(pinned.get(t) == d for t, d in (s.facts.get("task_digests") or {}).items()), s.started_utc
    # the stretches recorded before the digests were kept ran on one build (replaying checks it against the
    # build here: labkit.repoedit.compare.recording_tasks_differences)
    assert len({s.facts["tasks_sha256"] for s in sessions if "task_digests" not in s.facts}) <= 1


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_issues_targets_are_judged_from_the_recordings_own_counts(folder):
    from labkit.repoedit.compare_report import summarize
    from labkit.repoedit.targets import seeded_targets

    arms = {r["arm"]: r for r in summarize(folder)["arms"]}
    found = seeded_targets(folder)
    assert f"({arms['machine']['tasks_solved']}/{arms['machine']['tasks']}," in found[0].what
    assert f"against {arms['prompt_excerpt']['tasks_solved']}:" in found[1].what
    assert found[4].met == (arms["machine"]["broken_trees"] == 0)
