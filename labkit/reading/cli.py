"""The reading comparison as ``labkit compare reading`` declares it, and its benches (``labkit bench experiment``,
``labkit bench equality``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from labkit.compare.command import ComparisonKind
from labkit.core.errors import LabkitError
from labkit.reading.equality import DEFAULT_RECORDING


def _grammar_notes() -> dict[str, list[str]]:
    """The keywords of every schema the arms decode under that the grammar does not enforce."""
    from labkit.reading.answers import ActionAnswer, answer_schema, unenforced
    from labkit.reading.choosers import DECISION_KINDS
    from labkit.reading.free import action_names

    schemas = {kind: answer_schema(k.answer, {k.enum_field: ["x"]} if k.enum_field else None)
               for kind, k in DECISION_KINDS.items()}
    schemas["action"] = answer_schema(ActionAnswer, {"action": action_names(True)})
    return {name: unenforced(schema) for name, schema in schemas.items()}


def reading_provenance(backend: dict[str, Any], config: Any, mode: str, out: Path | None = None) -> dict[str, Any]:
    """Where the numbers come from (:func:`labkit.compare.runs.provenance` with the comparison's task files and arms);
    ``out``, the recording's own folder, does not make the commit dirty."""
    from labkit.compare.runs import provenance
    from labkit.reading.arms import ARMS
    from labkit.reading.taskfile import file_sha256

    tasks = config.tasks_folder()
    return provenance(
        backend, mode, out, config=config.to_dict(),
        task_files={s: {"path": f"{config.tasks_dir}/{s}.json", "sha256": file_sha256(tasks / f"{s}.json")}
                    for s in ("dev", "test")},
        arms={a.name: {"label": a.label, "shape": a.shape.name, "decides": a.decides, "seed_varies": a.seed_varies}
              for a in ARMS.values() if a.name in config.arms},
        grammar_unenforced=_grammar_notes())


def with_segment(prov: dict[str, Any], out: Path, *, resume: bool) -> dict[str, Any]:
    """``prov`` with one segment per stretch of recording; a resume must keep the model file and the task files."""
    from labkit.compare.runs import with_segment as segmented

    return segmented(prov, out, resume=resume, same=[("task_files", "task files")])


RECORDED = "data/experiment-v2"  # one folder per model name: the committed recordings


def default_config() -> Any:
    """What ``make experiment`` runs: every arm on the test split's headline ten, one seed, greedy."""
    from labkit.reading.runner import ReadingConfig

    config = ReadingConfig(splits=["test"])
    config.task_ids = list(config.task_sets()["test"].headline)
    return config


def _config(args: argparse.Namespace) -> Any:
    """The runs asked for: the test split's headline ten by default, ``--full`` for every task of the split(s),
    ``--only`` some task ids or ``--per-family`` a few of each family."""
    from labkit.compare.command import split_list
    from labkit.reading.choosers import Decoding
    from labkit.reading.runner import READING_TASKS, ReadingConfig

    chosen = [name for name, given in (("--full", args.full), ("--only", args.only),
                                       ("--per-family", args.per_family)) if given]
    if len(chosen) > 1:
        raise LabkitError(f"{' and '.join(chosen)} choose tasks in different ways", "give one of them.")
    config = ReadingConfig(arms=split_list(args.arms) or ReadingConfig().arms,
                      splits=["dev", "test"] if args.split == "all" else [args.split],
                      seeds=list(range(args.first_seed, args.first_seed + args.seeds)),
                      decoding=Decoding(temperature=args.temperature), task_ids=split_list(args.only),
                      per_family=args.per_family, tasks_dir=args.tasks or READING_TASKS)
    if not chosen:  # the default: the test split's headline set, the seed's "x/10 -> y/10" form
        if args.split != "test":
            raise LabkitError("the default task set is the test split's headline ten",
                              "use --full (every task of the split), --only or --per-family with --split.")
        config.task_ids = list(default_config().task_ids)
    return config


def estimate_s(jobs: list[tuple[str, str, Any, int]], recorded: Path) -> float | None:
    """Seconds the jobs should take, from the median seconds per run of each arm in a recorded run."""
    import statistics

    from labkit.reading.runner import load_reading_runs

    seconds: dict[str, list[float]] = {}
    for _, run in load_reading_runs(recorded / "runs.jsonl"):
        seconds.setdefault(run.arm, []).append(run.wall_s)
    if not all(arm in seconds for arm, *_ in jobs):
        return None
    return sum(statistics.median(seconds[arm]) for arm, *_ in jobs)


def _say_estimate(jobs: list[tuple[str, str, Any, int]], model: str | None) -> None:
    from labkit.reading.runner import REPO

    name = model or "gemma3-270m"
    recorded = REPO / RECORDED / name
    guess = estimate_s(jobs, recorded)
    if guess is None:
        print(f"labkit: no recorded run of {name} with these arms to estimate the time from", file=sys.stderr)
    else:
        print(f"labkit: estimated {guess / 60:.0f} min (median seconds per run of each arm in {RECORDED}/{name}, "
              f"recorded on 2 cores; a busy or slower machine takes longer)", file=sys.stderr)


def _plan(args: argparse.Namespace) -> Any:
    """A live recording of the reading comparison: its provenance in segments, its rows, its report files."""
    from labkit.compare.command import Plan
    from labkit.reading.arms import ARMS, declared_prefixes
    from labkit.reading.report import write_report
    from labkit.reading.runner import N_CTX, finished_runs, remaining_jobs, run_reading

    config = _config(args)
    config.check()
    if config.decoding.temperature <= 0 and len(config.seeds) > 1:
        print("labkit: greedy decoding with several seeds: the seeds vary the order of examples, queues, "
              "messages and menu options (see provenance 'arms')", file=sys.stderr)
    needs_model = any(ARMS[a].uses_model for a in config.arms)

    def record(answers: Any, out: Path, resume: bool, say: Any) -> None:
        kept = finished_runs(config, out) if resume else []
        if needs_model and not args.server:
            _say_estimate(remaining_jobs(config, kept), args.model)
        prov = with_segment(reading_provenance(answers.describe(), config, "live", out), out, resume=resume)
        out.mkdir(parents=True, exist_ok=True)  # this segment's provenance first: an interruption keeps it
        (out / "provenance.json").write_text(json.dumps(prov, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        started = time.perf_counter()
        runs = run_reading(config, answers, out, resume=resume, progress=say)
        prov["segments"][-1]["wall_s"] = round(time.perf_counter() - started, 1)
        prov["wall_s"] = round(sum(seg["wall_s"] or 0 for seg in prov["segments"]), 1)
        write_report(out, runs, config.arms, config.splits, config.task_sets()["test"], prov)

    prefixes = declared_prefixes(config.arms, config.seeds, config.task_sets()["dev"].example_tasks())
    return Plan(record, uses_model=needs_model, n_ctx=N_CTX, prefixes=prefixes)


def _replay(folder: Path, out: Path, say: Any) -> list[str]:
    from labkit.compare.command import row_differences
    from labkit.compare.runs import Answers, read_rows
    from labkit.reading.runner import prepare_reading_replay, run_reading

    run_reading(prepare_reading_replay(folder), Answers(replay=folder), out, progress=say)
    return row_differences(read_rows(folder / "runs.jsonl"), read_rows(out / "runs.jsonl"),
                           key=lambda r: (r["arm"], r["split"], r["task"], r["seed"]))


def _report(folder: Path) -> str:
    """The reading comparison's tables, computed from the recording's rows."""
    from labkit.reading.report import headline, markdown, paired_rows, summary_rows
    from labkit.reading.runner import load_reading_runs, prepare_reading_replay

    config = prepare_reading_replay(folder)
    runs = load_reading_runs(folder / "runs.jsonl")
    head = headline(runs, config.task_sets()["test"]) if "test" in config.splits else None
    return markdown(summary_rows(runs, config.arms, config.splits), paired_rows(runs, config.splits), head)


def _reading_options(p: argparse.ArgumentParser) -> None:
    """The reading comparison's own options (``labkit compare reading`` and ``labkit bench experiment``)."""
    p.add_argument("--full", action="store_true", help="every task of the split (default: the test split's "
                                                        "headline ten; prints an estimate of the time first)")
    p.add_argument("--per-family", type=int, help="at most N tasks per family and split (a smoke run)")
    p.add_argument("--seeds", type=int, default=1, help="seeds per task and arm (default 1)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0: greedy)")


def _arms_help() -> str:
    from labkit.reading.arms import ARMS

    return f"comma-separated arms (default all: {', '.join(ARMS)})"


def _cmd_bench(args: argparse.Namespace) -> int:
    from labkit.reading.speed import bench_reading, render_experiment_speed, report_to

    config = _config(args)
    default = args.model is None and config.to_dict() == default_config().to_dict()
    result = bench_reading(config, model=args.model, threads=args.threads, repeats=args.repeats,
                                 default_configuration=default,
                                 say=None if args.quiet else (lambda line: print(line, file=sys.stderr)))
    report_to(args.out, result)
    print(render_experiment_speed(result))
    return 0 if result["identical"] else 1


def _cmd_bench_equality(args: argparse.Namespace) -> int:
    from pathlib import Path

    from labkit.reading.equality import bench_equality, render_equality

    result = bench_equality(Path(args.recording), arms=args.arms.split(",") if args.arms else None,
                            limit=args.limit, threads=args.threads, timing_rounds=args.timing_rounds,
                            progress=not args.quiet)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2) if args.json else render_equality(result))
    return 1 if result["default_problems"] else 0


def _bench_task_options(p: argparse.ArgumentParser) -> None:
    """``labkit bench experiment`` chooses its runs with ``labkit compare reading``'s flags."""
    p.add_argument("--model", help="a registered model name or a .gguf file (default: the embedded model)")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: every core)")
    p.add_argument("--tasks", help="the task folder (dev.json, test.json; default data/tasks/v2)")
    p.add_argument("--split", choices=("dev", "test", "all"), default="test")
    p.add_argument("--arms", help=_arms_help())
    p.add_argument("--only", help="comma-separated task ids")
    _reading_options(p)


COMPARISONS = {"reading": ComparisonKind(
    name="reading", about="the reading tasks: task families, dev/test split, the ladder of arms",
    config_file="experiment.json",
    tasks_help="a folder holding dev.json and test.json (default data/tasks/v2)", arms_help=_arms_help(),
    options=_reading_options, plan=_plan, replay=_replay, report=_report)}


def register(commands: Any, bench: Any) -> None:
    del commands
    b = bench.add_parser("experiment", help="the reading comparison (as make experiment) with lazy grammar and "
                                            "prefix reuse off, then on, back to back; checks the runs are identical")
    _bench_task_options(b)
    b.add_argument("--repeats", type=int, default=1, help="off/on pairs, alternating (default 1)")
    b.add_argument("--out", help="write the result as JSON here (e.g. data/bench/experiment-speed-v2.json)")
    b.add_argument("--quiet", action="store_true", help="no progress lines")
    b.set_defaults(func=_cmd_bench)

    e = bench.add_parser("equality", help="lazy grammar and prefix reuse against today's path, token by token")
    e.add_argument("--recording", default=DEFAULT_RECORDING,
                   help=f"a folder written by `labkit compare reading` (default {DEFAULT_RECORDING})")
    e.add_argument("--arms", help="comma-separated arms (default: every arm with recorded calls)")
    e.add_argument("--limit", type=int, help="at most this many prompts per arm (default: all)")
    e.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    e.add_argument("--out", help="write the result as JSON here (e.g. data/bench/equality.json)")
    e.add_argument("--timing-rounds", type=int, default=0,
                   help="also time today's path against the optimised one in this many alternating blocks")
    e.add_argument("--quiet", action="store_true", help="no progress lines")
    e.add_argument("--json", action="store_true", help="print the result as JSON")
    e.set_defaults(func=_cmd_bench_equality)
