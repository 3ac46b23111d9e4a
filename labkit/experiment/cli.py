"""``labkit experiment-v1``: the first comparison, live (embedded model, a GGUF file, a server) or replayed."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError
from labkit.llm.server_options import add_server_options


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise LabkitError(f"cannot read {path}: {exc}", "replay a folder written by `labkit experiment-v1`.") from None


def _set_previous_aside(out: Path) -> None:
    """A new run starts in an empty folder; the last one is moved to ``<out>.previous``, never wiped first.

    Without this a re-run that fails early (a bad option, Ctrl-C, a dead server) would already have
    emptied the earlier, complete results.
    """
    if out.exists() and not out.is_dir():
        raise LabkitError(f"--out {out} is a file, not a folder", "name a folder for the results.")
    if out.exists() and any(out.iterdir()):
        previous = out.with_name(out.name + ".previous")
        if previous.exists():
            shutil.rmtree(previous)
        out.rename(previous)
        print(f"labkit: the previous results in {out} were moved to {previous}", file=sys.stderr)

def _concurrency(args: argparse.Namespace) -> int:
    """Runs at once: as asked, else one per server (one in process)."""
    if args.concurrency is not None:
        return int(args.concurrency)
    return len(args.server) if args.server else 1


def _backend(args: argparse.Namespace) -> Any:
    from labkit.llm.server_options import connect_servers

    concurrency = _concurrency(args)
    if args.server and args.model:
        raise LabkitError("give either --model or --server, not both", "one model per experiment.")
    if concurrency > 1 and not args.server:
        raise LabkitError("--concurrency needs --server",
                          "in-process llama.cpp runs one call at a time; serve the model and pass --server URL.")
    servers = connect_servers(args, several=True)
    if servers:
        from labkit.llm.pool import SerialCalls, ServerPool

        lent = [SerialCalls(server) if concurrency > 1 else server for server in servers]
        if len(lent) > 1:
            return ServerPool(lent)  # refuses servers that do not serve the same model alike
        return lent[0]
    from labkit.experiment.prompts import REUSED_PREFIXES
    from labkit.llm.llamacpp import LlamaCppBackend

    return LlamaCppBackend(args.model, n_threads=args.threads, prefixes=REUSED_PREFIXES)


def _cmd_experiment(args: argparse.Namespace) -> int:
    from labkit.experiment.metrics import summarize
    from labkit.experiment.planners import Decoding
    from labkit.experiment.report import provenance, text_table, write_outputs
    from labkit.experiment.runner import (
        BackendSource,
        ExperimentConfig,
        load_runs,
        prepare_replay,
        reset_cassettes,
        run_experiment,
        select_tasks,
        with_recorded_timings,
    )
    from labkit.experiment.tasks import load_tasks

    out = Path(args.out)
    if args.regrade and not args.replay:
        raise LabkitError("--regrade needs --replay DIR", "re-grade a recorded experiment: --replay DIR --regrade.")
    recorded_wall: float | None = None
    if args.replay:
        folder = Path(args.replay)
        config, tasks = prepare_replay(folder)
        if folder.resolve() == out.resolve():
            raise LabkitError(f"--out {out} is the folder being replayed", "write the replay elsewhere (--out).")
        source = BackendSource(replay_dir=folder)
        recorded = _read_json(folder / "provenance.json") if (folder / "provenance.json").exists() else {}
        _set_previous_aside(out)
        prov = {**recorded, "mode": "replay", "replayed_from": str(folder),
                "recorded_mode": recorded.get("mode")}
        if args.regrade:
            prov = regrade_provenance(recorded, folder)
            summary_path = folder / "summary.json"
            if summary_path.exists():
                recorded_wall = json.loads(summary_path.read_text(encoding="utf-8")).get("wall_s")
    else:
        tasks = select_tasks(load_tasks(args.tasks), args.task_ids.split(",") if args.task_ids else None)
        arms = args.arms.split(",") if args.arms else None
        config = ExperimentConfig(seeds=list(range(args.first_seed, args.first_seed + args.seeds)),
                                  task_ids=[t.id for t in tasks],
                                  decoding=Decoding(temperature=args.temperature),
                                  concurrency=_concurrency(args))
        if arms:
            config.arms = arms
        config.check()
        backend = _backend(args)
        _set_previous_aside(out)
        reset_cassettes(out)
        source = BackendSource(live=backend, record_to=out)
        prov = provenance(source.describe(), config.to_dict(), mode="live")
    started = time.perf_counter()
    try:
        records = run_experiment(config, tasks, source, out, progress=not args.no_progress)
    except (LabkitError, KeyboardInterrupt) as exc:
        done = load_runs(out / "runs.jsonl")
        rows = summarize(done, config.arms)
        write_outputs(out, done, rows, prov, wall_s=time.perf_counter() - started, plots=False, partial=True)
        print(f"labkit: the experiment stopped after {len(done)} finished run(s); they are kept in "
              f"{out / 'runs.jsonl'} and summarised in {out / 'summary.md'}", file=sys.stderr)
        if isinstance(exc, KeyboardInterrupt):
            return 130
        raise
    wall = time.perf_counter() - started
    how = prov["mode"]
    if args.regrade:
        live = load_runs(Path(args.replay) / "runs.jsonl")
        records = with_recorded_timings(records, live)
        at = {(r.arm, r.task, r.seed): n for n, r in enumerate(live)}  # the recording's line order
        lines = [json.dumps(r.to_dict(), ensure_ascii=False) + "\n"
                 for r in sorted(records, key=lambda r: at[(r.arm, r.task, r.seed)])]
        (out / "runs.jsonl").write_text("".join(lines), encoding="utf-8")
        how = f"{prov['mode']} recording re-graded by replay in {wall:.0f} s; recorded"
        wall = recorded_wall if recorded_wall is not None else wall
    rows = summarize(records, config.arms)
    files = write_outputs(out, records, rows, prov, wall_s=wall, plots=not args.no_plots)
    print(text_table(rows))
    print(f"\n{len(records)} runs ({len(tasks)} tasks x {len(config.seeds)} seeds x {len(config.arms)} arms), "
          f"{how}, wall time {wall:.0f} s")
    print("files: " + ", ".join(str(f) for f in files) + ("" if args.replay else f", {out / 'cassettes'}/"))
    return 0


def regrade_provenance(recorded: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The recording's provenance, plus a note that this code re-graded it by replaying its cassettes.

    The mode stays the recording's (the model's answers and the seconds are still the live run's);
    ``regraded`` lists every re-grade, newest last, with the commit whose code graded it.
    """
    from labkit.experiment.report import git_commit

    note = {"by": "replay of the recorded cassettes (`labkit experiment-v1 --replay DIR --regrade`)",
            "labkit_commit": git_commit(), "at_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "replayed_from": str(folder),
            "kept_from_the_recording": "the model's outputs; each run's wall_s, model_s and server; the experiment's "
                                       "wall time; backend, machine, decoding, seeds, started_utc",
            "from_the_replay": "passed, failed checks, failure sources, terminations, reasons, traces and every "
                               "count (calls, tokens, retries, planner and tool calls)"}
    return {**recorded, "regraded": [*recorded.get("regraded", []), note]}


def _cmd_bench_experiment(args: argparse.Namespace) -> int:
    from labkit.experiment.speed import bench_experiment, render_experiment_speed

    result = bench_experiment(tasks_path=args.tasks, seeds=args.seeds, temperature=args.temperature,
                              arms=args.arms.split(",") if args.arms else None,
                              task_ids=args.task_ids.split(",") if args.task_ids else None,
                              repeats=args.repeats, threads=args.threads, progress=not args.no_progress)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(render_experiment_speed(result))
    return 0 if result["identical"] else 1


def register(commands: Any, bench: Any) -> None:
    b = bench.add_parser("experiment-v1", help="the first comparison with lazy grammar and prefix reuse off, then on")
    b.add_argument("--tasks", help="task file or folder (default data/tasks/comparison.json)")
    b.add_argument("--task-ids", help="comma-separated subset of the file's task ids (default: all)")
    b.add_argument("--arms", help="comma-separated arms (default: all, as make experiment)")
    b.add_argument("--seeds", type=int, default=5, help="seeds per task and arm (default 5, as make experiment)")
    b.add_argument("--temperature", type=float, default=0.5, help="sampling temperature (default 0.5)")
    b.add_argument("--repeats", type=int, default=1, help="off/on pairs, alternating (default 1)")
    b.add_argument("--threads", type=int, help="llama.cpp threads (default: all cores)")
    b.add_argument("--out", help="write the result as JSON here (e.g. data/bench/experiment-speed.json)")
    b.add_argument("--no-progress", action="store_true", help="no progress bars")
    b.set_defaults(func=_cmd_bench_experiment)

    p = commands.add_parser("experiment-v1", help="the first comparison (one compare family, six arms), kept "
                                              "for its recording data/experiment and the speed benchmarks")
    p.add_argument("--tasks", help="task file (one task or a list) or folder (default data/tasks/comparison.json)")
    p.add_argument("--task-ids", help="comma-separated subset of the file's task ids")
    p.add_argument("--arms", help="comma-separated arms (default: all: prompt-only, prompt-grammar, "
                                  "machine-model, machine-random, machine-rule, machine-oracle)")
    p.add_argument("--seeds", type=int, default=5, help="seeds per task and arm (default 5)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.5, help="sampling temperature (default 0.5)")
    p.add_argument("--model", help="a .gguf file instead of the embedded model")
    p.add_argument("--threads", type=int, help="llama.cpp threads for an in-process model (default: all cores)")
    add_server_options(p, server_help="an OpenAI-compatible server's base URL instead of an in-process model; "
                       "repeat it to spread the runs over several servers of the same model (each run stays on one)")
    p.add_argument("--concurrency", type=int,
                   help="parallel runs against --server (default: 1 per server)")
    p.add_argument("--replay", metavar="DIR", help="replay a recorded experiment (e.g. data/experiment)")
    p.add_argument("--regrade", action="store_true",
                   help="with --replay: grade the recording with this code, keeping its live provenance and "
                        "seconds (the outputs say so in provenance 'regraded')")
    p.add_argument("--out", default="results", help="output folder (default results/)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-plots", action="store_true", help="no PNG plots")
    p.set_defaults(func=_cmd_experiment)
