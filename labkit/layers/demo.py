"""Run the writing demo from the command line: scripted (for the crash test) or live (the recording).

``--db run.sqlite`` runs or resumes it with the scripted writer; ``--live DIR`` runs it once with the
embedded model, writing log, cassette and provenance (wrap in ``flock /tmp/labkit-live.lock``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from labkit.core.provenance import git_commit, machine
from labkit.core.store import EventLog, JsonlLog, SqliteLog
from labkit.layers.machine import LayeredMachine
from labkit.layers.writing import job_params, scripted_writer, writing_spec

TITLE = "The harbour light"
TOPICS = ("the storm arrives", "the keeper climbs the tower", "morning in the harbour")
LIVE_FILES = {"log": "live_run.jsonl", "cassette": "live_cassette.jsonl", "provenance": "provenance.json"}


def tick_clock() -> Callable[[], float]:
    """An injected clock (0, 1, 2, ...) so a replayed run writes byte-identical events."""
    ticks = iter(range(10**9))
    return lambda: float(next(ticks))


def run_demo(log: EventLog, model: Any, *, clock: Callable[[], float] | None = None,
             title: str = TITLE, topics: Sequence[str] = TOPICS, **switches: Any) -> LayeredMachine:
    """Run (or, on a log that holds one, resume) the demo; return the machine."""
    machine = LayeredMachine(writing_spec(), model=model, log=log, clock=clock or tick_clock(),
                             params=job_params(title, topics), **switches)
    machine.run()
    return machine


def record_live(out_dir: Path) -> dict[str, Any]:
    """One live run with the embedded model: log, cassette and provenance in ``out_dir``."""
    from labkit.llm import LlamaCppBackend, RecordingBackend

    commit = git_commit()  # the code that runs, taken before the previous recording is removed
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in LIVE_FILES.values():
        (out_dir / name).unlink(missing_ok=True)
    started = time.perf_counter()
    backend = LlamaCppBackend()  # loaded by this machine's route (no AMX repack where it crashes)
    model = RecordingBackend(backend, out_dir / LIVE_FILES["cassette"])
    run = run_demo(JsonlLog(out_dir / LIVE_FILES["log"]), model)
    provenance = {
        "what": "notebook 08's live run of the layered writing machine (labkit.layers.demo --live)",
        "backend": model.describe(), "model_sha256": model.model_id(),
        "weight_repacking": backend.load_plan.use_extra_bufts,
        "decoding": {"temperature": 0.0, "max_tokens": 48, "stop": ["\n\n", "Section"], "seed": 0},
        "job": {"title": TITLE, "topics": list(TOPICS)}, "clock": "tick clock 0, 1, 2, ...",
        "lifecycle": run.lifecycle, "events": len(run.events), "model_calls": run.state.model_calls,
        "tool_calls": run.state.tool_calls, "wall_seconds": round(time.perf_counter() - started, 2),
        "labkit_commit": commit, "machine": machine(),
        "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out_dir / LIVE_FILES["provenance"]).write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n",
                                                    encoding="utf-8")
    return provenance


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labkit.layers.demo", description=__doc__)
    parser.add_argument("--db", help="SQLite log to run or resume with the scripted writer")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per scripted model call")
    parser.add_argument("--live", metavar="DIR", help="record one live run with the embedded model into DIR")
    args = parser.parse_args(argv)
    if args.live:
        print(json.dumps(record_live(Path(args.live)), indent=2))
        return 0
    if not args.db:
        parser.error("give --db FILE (scripted run) or --live DIR")
    with SqliteLog(args.db) as log:
        print(run_demo(log, scripted_writer(delay=args.delay)).lifecycle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
