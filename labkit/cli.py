"""The ``labkit`` command line: core commands here; larger parts add theirs through ``register(commands,
bench)`` in the ``cli`` modules named in ``labkit.core.registry.COMMAND_MODULES``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from labkit.core import catalog, registry
from labkit.core.diagram import to_mermaid
from labkit.core.dispatch import dispatch
from labkit.core.errors import LabkitError
from labkit.core.events import Event, RunStarted
from labkit.core.reducer import replay
from labkit.core.store import load_events, read_jsonl


def _cmd_diagram(args: argparse.Namespace) -> int:
    table = catalog.resolve_table(args.table)
    if args.drawio:
        from labkit.core.drawio import to_drawio

        Path(args.drawio).write_text(to_drawio(table), encoding="utf-8")
    print(to_mermaid(table, current=args.current), end="")
    if args.unhandled:
        pairs = table.unhandled()
        print(f"%% {len(pairs)} unhandled (state, event) pair(s)")
        for state, event in pairs:
            print(f"%%   {state} + {event}")
    return 0


def _cmd_paths(args: argparse.Namespace) -> int:
    from labkit.core.paths import build_suite, tables_of

    suites = [build_suite(table, args.cover) for table in tables_of(catalog.resolve_table(args.table))]
    if args.json:
        print(json.dumps(suites[0].to_dict() if len(suites) == 1 else [s.to_dict() for s in suites], indent=2))
    else:
        print("\n\n".join(suite.render() for suite in suites))
    return 0


def _replay_tableless(args: argparse.Namespace, events: Sequence[Event]) -> int:
    """A verified log with no table behind it: print what its declared kind says it records."""
    from labkit.core import log_kinds

    kind = log_kinds.recognise(events)
    if kind is None:
        raise LabkitError(f"{args.file} does not begin with a run_started event, and it is no other kind of "
                          f"labkit log ({', '.join(log_kinds.names())})",
                          "replay logs written by labkit's machines or the experiment's loops.")
    summary = kind.summarize(events)
    head = {"seq": events[-1].seq, "hash": events[-1].hash}
    torn = read_jsonl(args.file).torn_tail if Path(args.file).suffix == ".jsonl" else None
    if args.json:
        print(json.dumps({"kind": kind.name, "events": len(events), "head": head, "summary": summary,
                          "torn_tail_bytes": torn.size if torn else 0}, default=str, indent=2))
    else:
        print(f"{kind.name} log, {len(events)} events, hash chain verified; head seq {head['seq']} {head['hash']}")
        print("\n".join(log_kinds.render(summary)))
    if torn:
        print(f"labkit: line {torn.line} is an unfinished append ({torn.size} bytes, skipped): the writer "
              "stopped mid-write; every complete event above was read", file=sys.stderr)
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    events = load_events(args.file, run_id=args.run)
    if not events:
        raise LabkitError(f"{args.file} holds no events", "replay a log written by labkit.")
    if not isinstance(events[0], RunStarted):
        return _replay_tableless(args, events)
    name = events[0].table
    entry = catalog.lookup(name)
    if entry is None:
        print(f"labkit: table '{name}' is not in the catalog; replaying with the core reducer only",
              file=sys.stderr)
        result = replay(events)
    else:
        result = replay(events, entry.reduce, entry.empty(), list(entry.invariants()), entry.table(),
                        entry.guards())
    torn = read_jsonl(args.file).torn_tail if Path(args.file).suffix == ".jsonl" else None
    state = result.state
    fields = getattr(state, "__dataclass_fields__", None)
    as_dict = {key: getattr(state, key) for key in fields} if fields else dict(vars(state))
    head = {"seq": events[-1].seq, "hash": events[-1].hash}
    if args.json:
        print(json.dumps({"table": name, "events": len(events), "head": head, "state": as_dict,
                          "torn_tail_bytes": torn.size if torn else 0,
                          "unrecorded_violations": [list(v) for v in result.violations]},
                         default=str, indent=2, sort_keys=True))
    else:
        print(f"table {name}, {len(events)} events, hash chain verified; head seq {head['seq']} {head['hash']}")
        for key, value in as_dict.items():
            print(f"  {key}: {value}")
    if torn:
        print(f"labkit: line {torn.line} is an unfinished append ({torn.size} bytes, skipped): the writer "
              "stopped mid-write; every complete event above was replayed", file=sys.stderr)
    for seq, invariant, detail in result.violations:
        print(f"labkit: invariant '{invariant}' fails after seq {seq} and the log does not record it: {detail}",
              file=sys.stderr)
    return 1 if result.violations else 0


def _cmd_check(args: argparse.Namespace) -> int:
    from labkit.course.exercises import run_check

    report = run_check(args.exercise, args.file, solution=args.solution)
    print(report.render())
    return 0 if report.passed else 1


def _cmd_grade(args: argparse.Namespace) -> int:
    from pathlib import Path

    from labkit.core.sandbox import sandbox_fix, sandbox_mode, sandbox_reason
    from labkit.course.grade import grade, render, write_csv

    if sandbox_mode() != "bwrap":  # said before grading: a teacher should know what a hostile file could reach
        print(f"labkit grade: the sandbox is limits-only here ({sandbox_reason()}): each file runs with time and "
              f"memory limits, but could read and write your files and reach the network. Fix: {sandbox_fix()}",
              file=sys.stderr)
    rows = grade(Path(args.submissions), args.exercise, timeout=args.timeout, workers=args.workers)
    print(render(rows, args.exercise))
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as out:
            write_csv(rows, out)
    return 0


def _cmd_bench_grade(args: argparse.Namespace) -> int:
    from labkit.course.grade_bench import bench_grade

    result = bench_grade(count=args.count, exercise=args.exercise, workers=args.workers)
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)
            out.write("\n")
    return 0 if result["all_rows_right"] else 1


def _cmd_bench_core(args: argparse.Namespace) -> int:
    from labkit.core.bench import bench_core, render_core

    result = bench_core(events=args.events, transitions=args.transitions, rounds=args.rounds)
    print(json.dumps(result, indent=2) if args.json else render_core(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="labkit", description=(
        "Small local language models as dependable workers inside explicit state machines."))
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = commands.add_parser("diagram", help="print a table as a Mermaid state diagram")
    p.add_argument("table", help=f"catalog name ({', '.join(catalog.names())}), a .json file, or module:attr")
    p.add_argument("--current", help="highlight this state")
    p.add_argument("--unhandled", action="store_true", help="also list (state, event) pairs nobody handles")
    p.add_argument("--drawio", metavar="FILE", help="also write the diagram as a draw.io file")
    p.set_defaults(func=_cmd_diagram)

    p = commands.add_parser("paths", help="event sequences that cover every row of a table (model-based tests)")
    p.add_argument("table", help="catalog name, a .json file, or module:attr")
    p.add_argument("--cover", choices=["transitions", "pairs"], default="transitions",
                   help="pairs: also every (state, event) the machine must refuse")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_paths)

    p = commands.add_parser("replay", help="verify an event log and print the state it rebuilds (a machine's "
                            "log) or what it records (an experiment's free loop)")
    p.add_argument("file", help="a .jsonl trace or a .sqlite run file")
    p.add_argument("--run", help="run id inside a SQLite file that holds several")
    p.add_argument("--json", action="store_true", help="print the state as JSON")
    p.set_defaults(func=_cmd_replay)

    p = commands.add_parser("check", help="check an exercise (the student file unless --file/--solution)")
    p.add_argument("exercise", help="exercise number, e.g. 01a (notebook 01, its first exercise)")
    p.add_argument("--file", help="check this file instead of the exercise's student file")
    p.add_argument("--solution", action="store_true", help="check the reference solution")
    p.set_defaults(func=_cmd_check)

    p = commands.add_parser("grade", help="check every learner's file of an exercise, one row per learner")
    p.add_argument("submissions", help="a folder with one .py file per learner (the file's name is the learner)")
    p.add_argument("--exercise", required=True, help="exercise number, e.g. 01a (notebook 01, its first exercise)")
    p.add_argument("--csv", metavar="FILE", help="also write the rows to this CSV file")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds for one learner's file (default 30)")
    p.add_argument("--workers", type=int, default=2, help="files checked at once (default 2)")
    p.set_defaults(func=_cmd_grade)

    p = commands.add_parser("bench", help="benchmarks (printed as tables)")
    bench = p.add_subparsers(dest="bench", metavar="WHAT", required=True)
    b = bench.add_parser("core", help="per-transition overhead and replay throughput")
    b.add_argument("--events", type=int, default=100_000, help="events to replay (default 100000)")
    b.add_argument("--transitions", type=int, default=20_000, help="transitions to time (default 20000)")
    b.add_argument("--rounds", type=int, default=1, help="repeat the step comparison; record each round (default 1)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_cmd_bench_core)
    b = bench.add_parser("grade", help="grade a generated class of 30 submissions (right, wrong, crashing, "
                                       "looping, hostile) and time it")
    b.add_argument("--count", type=int, default=30, help="submissions to generate (default 30)")
    b.add_argument("--exercise", default="09a", help="the exercise (default 09a)")
    b.add_argument("--workers", type=int, default=2, help="files checked at once (default 2)")
    b.add_argument("--out", metavar="FILE", help="also write the JSON result here")
    b.set_defaults(func=_cmd_bench_grade)

    for module in registry.load(registry.COMMAND_MODULES):  # parts missing from this checkout are skipped
        module.register(commands, bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
