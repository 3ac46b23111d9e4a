"""Kill a layered run with SIGKILL in the middle of a model call; the restart continues where its layers say.

A real subprocess writes a real SQLite log. After the kill, the log's lifecycle still reads
"running" (nobody recorded a stop: the process died); a restart recomputes everything from the
persisted layers, resets the transient graph position to ``load``, and the load router — reading
only the phase, the flow and the memo — sends the run to the node that was interrupted.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labkit.core.store import EventLog, SqliteLog, read_sqlite
from labkit.layers import LayerMoved, LoopStarted, ModelCalled, ToolCalled
from labkit.layers.demo import run_demo
from labkit.layers.writing import scripted_writer

ROOT = Path(__file__).resolve().parents[1]


def _model_calls(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05) as conn:
            row = conn.execute("SELECT COUNT(*) FROM events WHERE type = 'node_model_called'").fetchone()
            return int(row[0])
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_a_killed_run_resumes_at_the_node_its_persisted_layers_imply(tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "labkit.layers.demo", "--db", str(db), "--delay", "0.4"],
                             cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while _model_calls(db) < 3 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)  # well inside the fourth call (0.4 s)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, child.stderr.read() if child.stderr else ""

    before = read_sqlite(db, "run-0")
    interrupted = [e for e in before if isinstance(e, LayerMoved) and e.layer == "writing"][-1].dest
    assert interrupted in {"draft", "rewrite"}  # the kill landed in a model call

    with SqliteLog(db) as log:
        from labkit.layers import LayeredMachine
        from labkit.layers.writing import writing_spec

        stale = LayeredMachine(writing_spec(), log=log)
        assert stale.lifecycle == "running"  # the dead process never recorded a stop
        resumed = run_demo(log, scripted_writer())
        assert resumed.lifecycle == "completed"
        after = list(log.events)[len(before):]

    assert isinstance(after[0], LoopStarted) and after[0].resumed
    first_move = next(e for e in after if isinstance(e, LayerMoved) and e.layer == "writing")
    assert (first_move.source, first_move.dest) == ("load", interrupted)

    reference = run_demo(EventLog(), scripted_writer())
    assert resumed.state.memo["sections"] == reference.state.memo["sections"]
    saves = [e.args["index"] for e in log.events if isinstance(e, ToolCalled) and e.tool == "save_section"]
    assert saves == [0, 1, 2]  # no section saved twice
    # the interrupted call is asked again, once: the killed run never recorded its answer
    assert sum(isinstance(e, ModelCalled) for e in log.events) == reference.state.model_calls
