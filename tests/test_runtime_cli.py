"""``labkit run / show / decide / faults / compare`` on real SQLite files.

Most tests call the runtime's own command table (``labkit.runtime.cli.main``); the last one goes
through the full ``labkit`` command line, to check the commands are registered there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.cli import main as labkit_main
from labkit.core.store import load_events
from labkit.runtime.cli import main
from labkit.runtime.events import Validation
from labkit.runtime.traces import TRACES_DIR
from labkit.runtime.validator import DEFAULT_SECRET, Signer, secret_from_env


def test_run_show_and_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.sqlite"
    assert main(["run", "diff3", "--db", str(db), "--run-id", "r1", "--faults", "write_timeout@1:lost"]) == 0
    out = capsys.readouterr().out
    assert "SUCCEEDED (succeeded)" in out
    assert (tmp_path / "runs.drafts.sqlite").exists()
    assert main(["show", str(db), "--run", "r1"]) == 0
    out = capsys.readouterr().out
    assert "EXECUTING --timeout--> UNKNOWN" in out and "status query for draft" in out


def test_pause_then_decide_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.sqlite"
    assert main(["run", "diff3-restricted", "--db", str(db), "--run-id", "p"]) == 0
    assert "labkit decide" in capsys.readouterr().out
    assert main(["decide", str(db), "--run", "p", "refuse", "--note", "not today"]) == 0
    out = capsys.readouterr().out
    assert "FAILED (failed)" in out and "refused" in out
    assert main(["run", "diff3-restricted", "--db", str(db), "--run-id", "q", "--approve"]) == 0
    assert "SUCCEEDED" in capsys.readouterr().out
    assert main(["show", str(db)]) == 0
    assert "holds 2 runs" in capsys.readouterr().out


def test_run_and_decide_sign_with_the_key_from_the_environment(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "runs.sqlite"
    monkeypatch.setenv("LABKIT_TOKEN_SECRET", "a key kept out of the source")
    assert main(["run", "diff3-restricted", "--db", str(db), "--run-id", "s"]) == 0  # pauses
    assert main(["decide", str(db), "--run", "s", "approve"]) == 0
    allowed = [e for e in load_events(db, "s") if isinstance(e, Validation) and e.verdict == "allowed"]
    assert len(allowed) == 5 and any(v.human_grant for v in allowed)

    def signed_with(key: bytes, v: Validation) -> bool:
        return Signer(key).token("s", v.action_id, v.tool, v.args_sha256, v.policy_version, v.human_grant) == v.token

    assert all(signed_with(b"a key kept out of the source", v) for v in allowed)
    assert not any(signed_with(DEFAULT_SECRET, v) for v in allowed)
    assert secret_from_env({}) == DEFAULT_SECRET == secret_from_env({"LABKIT_TOKEN_SECRET": ""})


def test_show_a_trace_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(TRACES_DIR / "permission_denied.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "WAITING_HUMAN --refused--> FAILED" in out


def test_bad_input_gets_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "diff3", "--db", str(tmp_path / "x.txt")]) == 2
    assert main(["run", "no-such-task", "--db", str(tmp_path / "x.sqlite")]) == 2
    assert main(["run", "diff3", "--db", str(tmp_path / "x.sqlite"), "--faults", "oops"]) == 2
    assert main(["decide", str(tmp_path / "x.sqlite"), "--run", "zz", "approve"]) == 2
    err = capsys.readouterr().err
    assert err.count("what to do") == 4


def test_faults_and_compare_print_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["faults", "--runs", "6"]) == 0
    assert "fault \\ state" in capsys.readouterr().out
    assert main(["free-loop", "--runs", "4"]) == 0
    assert "free loop (retry)" in capsys.readouterr().out


def test_the_commands_are_registered_in_the_labkit_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.sqlite"
    assert labkit_main(["run", "diff3", "--db", str(db), "--run-id", "r1", "--faults", "read_timeout@1"]) == 0
    assert labkit_main(["show", str(db)]) == 0
    assert "EXECUTING --timeout--> EXECUTING" in capsys.readouterr().out
    assert labkit_main(["replay", str(db), "--run", "r1"]) == 0
    assert "status: SUCCEEDED" in capsys.readouterr().out
