"""The dialog measurement on the one runner: record, resume after a kill mid-conversation, add arms, replay.

The model is a scripted stand-in that echoes the user's latest words into the step's first value:
the runner's logic (rows, logs, cassettes, resume, replay) is what is tested, not a model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import echo

from labkit.compare.runs import Answers, read_rows
from labkit.core.errors import LabkitError
from labkit.dialog.comparison import DialogComparison, DialogConfig, log_path, read_config, record, replay
from labkit.dialog.rescore import score_folder
from labkit.dialog.simulate import load_scenarios
from labkit.dialog.users import load_user_scripts
from labkit.llm.backend import Request
from labkit.llm.cassette import reuse_counts, reusing
from labkit.llm.fake import ScriptedBackend

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "dialog"
USERS = ["a01", "a02", "s01"]


class Killed(Exception):
    """Stands in for Ctrl-C or a lost machine, raised at a chosen call."""


def killing_at(n: int):
    calls = {"n": 0}

    def answer(request: Request) -> str:
        calls["n"] += 1
        if calls["n"] == n:
            raise Killed
        return echo(request)

    return answer


def settings(*arms: str) -> DialogConfig:
    return DialogConfig(model="scripted", arms=arms, split="dev", scenarios=str(DATA), users_dir=str(DATA / "users"))


def logs(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted((folder / "logs").rglob("*.jsonl"))}


def test_a_recording_resumed_after_a_kill_mid_conversation_equals_one_made_at_once(tmp_path: Path) -> None:
    once = tmp_path / "once"
    rows = record(settings("machine", "bare_machine"), Answers(live=ScriptedBackend(echo)), once, only=USERS)
    assert [(r["arm"], r["task"]) for r in rows] == [(arm, u) for arm in ("machine", "bare_machine")
                                                     for u in ("a01_happy", "a02_offtopic", "s01_happy")]
    assert all(set(r["parts"]) == {"end_step", "values", "no_invented", "moves", "asks"} for r in rows)
    assert all(r["passed"] == all(r["parts"].values()) for r in rows)
    killed = tmp_path / "killed"
    with pytest.raises(Killed):  # the 9th call is in a01's third message, machine arm
        record(settings("machine", "bare_machine"), Answers(live=ScriptedBackend(killing_at(9))), killed, only=USERS)
    assert read_rows(killed / "runs.jsonl") == rows[:1]  # a01 finished; a02 was cut off mid-conversation
    record(settings("machine", "bare_machine"), Answers(live=ScriptedBackend(echo)), killed, only=USERS, resume=True)
    assert read_rows(killed / "runs.jsonl") == rows and logs(killed) == logs(once)


def test_a_stretch_adds_users_then_an_arm_and_the_recording_replays(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    record(settings("machine"), Answers(live=ScriptedBackend(echo)), out, only=["a01"])
    record(settings("machine"), Answers(live=ScriptedBackend(echo)), out, only=USERS, resume=True)
    record(settings("machine", "prompt_only_checked"), Answers(live=ScriptedBackend(echo)), out,
           only=USERS[:2], resume=True)
    rows = read_rows(out / "runs.jsonl")
    assert [(r["arm"], r["task"][:3]) for r in rows] == [("machine", "a01"), ("machine", "a02"),
                                                         ("machine", "s01"), ("prompt_only_checked", "a01"),
                                                         ("prompt_only_checked", "a02")]
    assert len((out / "provenance.jsonl").read_text().splitlines()) == 3  # one line per stretch
    assert read_config(out).arms == ("machine", "prompt_only_checked")
    assert replay(out, tmp_path / "again") == []
    scores = score_folder(out, load_scenarios(DATA), load_user_scripts(DATA / "users"))
    assert [len(s) for s in scores.values()] == [3, 2]
    assert [s.adhered for s in scores["machine"]] == [r["passed"] for r in rows[:3]]


def test_a_recording_reuses_the_answers_another_one_holds_and_still_replays(tmp_path: Path) -> None:
    # --reuse: a design round's conversations whose prompts its new rule leaves unchanged come from the round
    # before; here every prompt is the same, so the model (a backend that fails) is never asked
    first, second = tmp_path / "first", tmp_path / "second"
    record(settings("machine"), Answers(live=ScriptedBackend(echo)), first, only=USERS)
    never = ScriptedBackend(lambda request: (_ for _ in ()).throw(AssertionError("the model was asked")))
    live = reusing(never, first, server=False)
    record(settings("machine"), Answers(live=live), second, only=USERS)
    assert live.misses == 0 and live.hits == sum(r["calls"] for r in read_rows(first / "runs.jsonl"))
    assert [{**r, "seconds": 0} for r in read_rows(second / "runs.jsonl")] == \
        [{**r, "seconds": 0} for r in read_rows(first / "runs.jsonl")]
    assert "reusing" in (second / "provenance.jsonl").read_text()  # the provenance names the reused folder
    assert reuse_counts(second / "cassettes" / "machine.jsonl") == (live.hits, 0)
    assert reuse_counts(first / "cassettes" / "machine.jsonl") == (0, live.hits)
    assert replay(second, tmp_path / "again") == []


def test_a_replay_finds_a_changed_row_or_log(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    record(settings("machine"), Answers(live=ScriptedBackend(echo)), out, only=["a01"])
    rows = read_rows(out / "runs.jsonl")
    (out / "runs.jsonl").write_text(json.dumps({**rows[0], "calls": 99}) + "\n")
    path = log_path(out, "machine", "a01_happy")
    path.write_text(path.read_text().splitlines()[0] + "\n")
    problems = replay(out, tmp_path / "again")
    assert any("calls recorded 99" in p for p in problems) and any("event log differs" in p for p in problems)


def test_bad_input_is_refused_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    with pytest.raises(LabkitError, match="names no user"):
        DialogComparison(settings("machine"), only=["zz9"])
    with pytest.raises(LabkitError, match="unknown dialog arm"):
        DialogComparison(settings("machine_pluss"))
    record(settings("machine"), Answers(live=ScriptedBackend(echo)), out, only=["a01"])
    with pytest.raises(LabkitError, match="already holds a recording"):
        record(settings("machine"), Answers(live=ScriptedBackend(echo)), out, only=["a01"])
    other = DialogConfig(model="scripted", arms=("machine",), split="test", scenarios=str(DATA),
                         users_dir=str(DATA / "users"))
    with pytest.raises(LabkitError, match="another configuration"):
        record(other, Answers(live=ScriptedBackend(echo)), out, resume=True)
    with pytest.raises(LabkitError, match="nothing to resume"):
        record(settings("machine"), Answers(live=ScriptedBackend(echo)), tmp_path / "new", resume=True)
    assert len(read_rows(out / "runs.jsonl")) == 1  # nothing recorded was lost


@pytest.mark.parametrize("folder", sorted(p for split in ("runs_test", "runs_dev") for p in (DATA / split).glob("*")
                                         if (p / "dialog.json").exists()),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_committed_test_and_dev_recordings_replay_row_for_row(folder: Path, tmp_path: Path) -> None:
    assert replay(folder, tmp_path / "again") == []
    rows = read_rows(folder / "runs.jsonl")
    assert {r["split"] for r in rows} == {folder.parent.name.removeprefix("runs_")} and rows


def test_the_recordings_table_has_a_row_per_arm_with_its_counts() -> None:
    from labkit.dialog.rescore import recordings_table

    table = recordings_table({"first": DATA / "runs" / "gemma3-270m"}, load_scenarios(DATA),
                             load_user_scripts(DATA / "users")).splitlines()
    assert len(table) == 4 and table[2].startswith("| first | gemma3-270m | machine | 22 | 5 | 4 | 19 | 22 | 6 | 0 (")
    assert table[2].endswith("| 3 | 1.029 |")  # three false completions (cancels), 105 calls for 102 messages
