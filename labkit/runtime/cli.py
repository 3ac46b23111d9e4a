"""``labkit run``, ``show``, ``decide``, ``faults`` and ``free-loop``: the runtime on the command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from labkit.core.dispatch import dispatch
from labkit.core.errors import LabkitError
from labkit.core.events import RunStarted
from labkit.core.store import SqliteLog, load_events, sqlite_runs


def _drafts_path(db: Path, given: str | None) -> Path:
    return Path(given) if given else db.with_name(db.stem + ".drafts.sqlite")


def _print_result(result: Any, db: Path) -> None:
    print(f"run {result.run_id}: {result.status} ({result.outcome}) after {result.events} events, "
          f"{result.planner_calls} planner calls, {result.tool_calls} tool calls")
    if result.reason:
        print(f"  reason: {result.reason}")
    if result.outcome == "paused":
        print(f"  waiting for a human: labkit decide {db} --run {result.run_id} approve|refuse")


def _cmd_run(args: argparse.Namespace) -> int:
    from labkit.runtime.faults import FaultPlan
    from labkit.runtime.loop import Runtime
    from labkit.runtime.task import resolve_task
    from labkit.runtime.tools import World
    from labkit.runtime.validator import secret_from_env

    db = Path(args.db)
    if db.suffix not in (".sqlite", ".db", ".sqlite3"):
        raise LabkitError(f"--db {db} must end in .sqlite, .db or .sqlite3", "name the SQLite file, e.g. runs.sqlite.")
    task = resolve_task(args.task)
    if args.set:
        from labkit.runtime.fuzz import apply_overrides

        task = apply_overrides(task, dict(_setting(item) for item in args.set))
    if args.planner:
        task = task.model_copy(update={"planner": args.planner})
    if args.faults and args.seed is not None:
        raise LabkitError("give either --faults or --seed, not both", "--seed draws a random fault schedule.")
    plan = FaultPlan.random(args.seed) if args.seed is not None else FaultPlan.parse(args.faults or "none")
    run_id = args.run_id or f"{task.id}-{time.strftime('%Y%m%d-%H%M%S')}"
    world = World.open(_drafts_path(db, args.drafts), area=run_id, latency=args.latency)
    with SqliteLog(db, run_id) as log:
        resuming = len(log) > 0
        runtime = Runtime(task, None, world, log=log, faults=None if resuming else plan, secret=secret_from_env())
        if resuming:
            print(f"resuming run {run_id} from event {len(log) - 1} ({runtime.state.status})")
        result = runtime.run()
        if result.outcome == "paused" and (args.approve or args.refuse):
            result = runtime.decide(bool(args.approve), by="cli", note="decided on the command line")
    _print_result(result, db)
    return 0 if result.outcome in ("succeeded", "paused") else 1


def _setting(item: str) -> tuple[str, object]:
    """``FIELD=VALUE`` from ``--set``: the value is read as JSON when it is JSON, else as text."""
    import json

    key, sep, text = item.partition("=")
    if not sep or not key:
        raise LabkitError(f"--set {item!r} is not FIELD=VALUE", "write e.g. --set budget.max_retries=1.")
    try:
        return key, json.loads(text)
    except json.JSONDecodeError:
        return key, text


def _cmd_decide(args: argparse.Namespace) -> int:
    from labkit.runtime.loop import Runtime
    from labkit.runtime.tools import World
    from labkit.runtime.validator import secret_from_env

    db = Path(args.file)
    if args.run not in sqlite_runs(db):
        raise LabkitError(f"{db} holds no run {args.run!r}", f"runs there: {', '.join(sqlite_runs(db)) or 'none'}.")
    world = World.open(_drafts_path(db, args.drafts), area=args.run)
    with SqliteLog(db, args.run) as log:
        runtime = Runtime(None, None, world, log=log, secret=secret_from_env())
        result = runtime.decide(args.decision == "approve", by=args.by, note=args.note)
    _print_result(result, db)
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from labkit.runtime.report import render_trace

    path = Path(args.file)
    if path.suffix in (".sqlite", ".db", ".sqlite3") and args.run is None:
        runs = sqlite_runs(path)
        if len(runs) > 1:
            print(f"{path} holds {len(runs)} runs; showing each (pick one with --run ID)")
            for run_id in runs:
                print(f"\n== run {run_id}")
                print(render_trace(load_events(path, run_id)))
            return 0
    events = load_events(path, run_id=args.run)
    if events and isinstance(events[0], RunStarted):
        print(f"== run {events[0].run_id} ({len(events)} events, hash chain verified)")
    print(render_trace(events))
    return 0


def _cmd_faults(args: argparse.Namespace) -> int:
    from labkit.runtime.batch import coverage

    print(coverage(range(args.seed, args.seed + args.runs)).render())
    return 0


def _cmd_free_loop(args: argparse.Namespace) -> int:
    from labkit.runtime.free_loop import compare

    print(compare(range(args.seed, args.seed + args.runs)).render())
    return 0


def _cmd_bench_fuzz(args: argparse.Namespace) -> int:
    import json

    from labkit.runtime.bench import bench_fuzz, render_fuzz

    result = bench_fuzz(args.schedules, seed=args.seed)
    print(json.dumps(result, indent=2) if args.json else render_fuzz(result))
    return 1 if result["violations"] else 0


def _cmd_bench_crash(args: argparse.Namespace) -> int:
    import json

    from labkit.runtime.bench import bench_crash, render_crash

    result = bench_crash(args.trials, seed=args.seed)
    print(json.dumps(result, indent=2) if args.json else render_crash(result))
    return 1 if result["failures"] else 0


def register(commands: Any, bench: Any) -> None:
    """Add the runtime's subcommands to the ``labkit`` parser."""
    p = commands.add_parser("run", help="run a planner-executor task with a fault schedule into a SQLite file")
    p.add_argument("task", help="a built-in task (diff3, diff3-restricted) or a task .json file")
    p.add_argument("--db", required=True, help="SQLite file for the event log (created if missing)")
    p.add_argument("--faults", help="e.g. read_timeout@2,write_timeout@1:lost,denied@1 (default: none)")
    p.add_argument("--seed", type=int, help="draw a random fault schedule with this seed instead")
    p.add_argument("--run-id", help="run id (an existing one is resumed)")
    p.add_argument("--drafts", help="draft-area SQLite file (default: <db>.drafts.sqlite)")
    p.add_argument("--planner", help="registered planner name (default: the task's)")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE",
                   help="set a task field (JSON value), e.g. budget.max_retries=1 or escalate_denials=false")
    p.add_argument("--latency", type=float, default=0.0, help="seconds each tool call takes (default 0)")
    decision = p.add_mutually_exclusive_group()
    decision.add_argument("--approve", action="store_true", help="approve if the run pauses for a human")
    decision.add_argument("--refuse", action="store_true", help="refuse if the run pauses for a human")
    p.set_defaults(func=_cmd_run)

    p = commands.add_parser("show", help="print a run's trace as readable text")
    p.add_argument("file", help="a .jsonl trace or a .sqlite run file")
    p.add_argument("--run", help="run id inside a SQLite file")
    p.set_defaults(func=_cmd_show)

    p = commands.add_parser("decide", help="approve or refuse the action a paused run waits on, and resume it")
    p.add_argument("file", help="the run's SQLite file")
    p.add_argument("--run", required=True, help="run id")
    p.add_argument("decision", choices=["approve", "refuse"])
    p.add_argument("--by", default="human", help="who decides (recorded)")
    p.add_argument("--note", default="", help="a short note (recorded, redacted)")
    p.add_argument("--drafts", help="draft-area SQLite file (default: <db>.drafts.sqlite)")
    p.set_defaults(func=_cmd_decide)

    p = commands.add_parser("faults", help="fault x state coverage matrix over a batch of seeded runs")
    p.add_argument("--runs", type=int, default=40, help="seeds (each runs every built-in task)")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.set_defaults(func=_cmd_faults)

    p = commands.add_parser("free-loop", help="the machine vs the free agent loop under the same seeded faults")
    p.add_argument("--runs", type=int, default=30, help="seeds")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.set_defaults(func=_cmd_free_loop)

    if bench is None:
        return
    b = bench.add_parser("fuzz", help="seeded random schedules (faults, crashes, budgets) with every check")
    b.add_argument("--schedules", type=int, default=1000, help="how many schedules (default 1000; goal 10000)")
    b.add_argument("--seed", type=int, default=0, help="first seed")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_cmd_bench_fuzz)
    b = bench.add_parser("crash", help="runner processes killed with SIGKILL at random points, then resumed")
    b.add_argument("--trials", type=int, default=100, help="kill-and-resume trials (default 100)")
    b.add_argument("--seed", type=int, default=2026)
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_cmd_bench_crash)


def main(argv: list[str] | None = None) -> int:
    """The runtime's commands alone (``python -m labkit.runtime.cli run ...``): used by the crash
    tests, which start and kill real runner processes, so that nothing else loads on start-up."""
    parser = argparse.ArgumentParser(prog="python -m labkit.runtime.cli")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    register(commands, None)
    return dispatch(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
