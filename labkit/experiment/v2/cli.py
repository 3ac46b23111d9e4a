"""``labkit experiment``: the comparison v2 (task families, dev/test split, the ladder of arms), live or replayed."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.experiment.v2.equality import DEFAULT_RECORDING
from labkit.llm.server_options import add_server_options, add_slots_option, check_server_options


def _grammar_notes() -> dict[str, list[str]]:
    """The keywords of every schema the arms decode under that the grammar does not enforce."""
    from labkit.experiment.v2.answers import ActionAnswer, answer_schema, unenforced
    from labkit.experiment.v2.choosers import DECISION_KINDS
    from labkit.experiment.v2.free import action_names

    schemas = {kind: answer_schema(k.answer, {k.enum_field: ["x"]} if k.enum_field else None)
               for kind, k in DECISION_KINDS.items()}
    schemas["action"] = answer_schema(ActionAnswer, {"action": action_names(True)})
    return {name: unenforced(schema) for name, schema in schemas.items()}


def provenance_v2(backend: dict[str, Any], config: Any, mode: str, out: Path | None = None) -> dict[str, Any]:
    """Where the numbers come from (:func:`labkit.compare.runs.provenance` with the comparison's task files and arms);
    ``out``, the recording's own folder, does not make the commit dirty."""
    from labkit.compare.runs import provenance
    from labkit.experiment.v2.arms import ARMS
    from labkit.experiment.v2.taskfile import file_sha256

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


def _live_backend(args: argparse.Namespace, prefixes: tuple[str, ...] = ()) -> Any:
    """The in-process model (v2's context and declared prefixes), one server, or a pool of servers."""
    from labkit.experiment.v2.runner import N_CTX
    from labkit.llm.models import model_backend
    from labkit.llm.server_options import live_backend

    return live_backend(args, lambda: model_backend(args.model, n_ctx=N_CTX, threads=args.threads, prefixes=prefixes))


RECORDED = "data/experiment-v2"  # one folder per model name: the committed recordings


def default_config() -> Any:
    """What ``make experiment`` runs: every arm on the test split's headline ten, one seed, greedy."""
    from labkit.experiment.v2.runner import ConfigV2

    config = ConfigV2(splits=["test"])
    config.task_ids = list(config.task_sets()["test"].headline)
    return config


def _config(args: argparse.Namespace) -> Any:
    """The runs asked for: the headline ten by default, ``--full`` for every task, or a chosen subset."""
    from labkit.experiment.v2.choosers import Decoding
    from labkit.experiment.v2.runner import ConfigV2

    chosen = [name for name, given in (("--full", args.full), ("--task-ids", args.task_ids),
                                       ("--per-family", args.per_family)) if given]
    if len(chosen) > 1:
        raise LabkitError(f"{' and '.join(chosen)} choose tasks in different ways", "give one of them.")
    config = ConfigV2(arms=args.arms.split(",") if args.arms else ConfigV2().arms,
                      splits=(args.splits or "dev,test").split(","),
                      seeds=list(range(args.first_seed, args.first_seed + args.seeds)),
                      decoding=Decoding(temperature=args.temperature),
                      task_ids=args.task_ids.split(",") if args.task_ids else None, per_family=args.per_family)
    if not chosen:  # the default: the test split's headline set, the seed's "x/10 -> y/10" form
        if args.splits not in (None, "test"):
            raise LabkitError("the default task set is the test split's headline ten",
                              "use --full (every dev and test task), --task-ids or --per-family with --splits.")
        config.splits = ["test"]
        config.task_ids = list(default_config().task_ids)
    return config


def estimate_s(jobs: list[tuple[str, str, Any, int]], recorded: Path) -> float | None:
    """Seconds the jobs should take, from the median seconds per run of each arm in a recorded run."""
    import statistics

    from labkit.experiment.v2.runner import load_runs_v2

    seconds: dict[str, list[float]] = {}
    for _, run in load_runs_v2(recorded / "runs.jsonl"):
        seconds.setdefault(run.arm, []).append(run.wall_s)
    if not all(arm in seconds for arm, *_ in jobs):
        return None
    return sum(statistics.median(seconds[arm]) for arm, *_ in jobs)


def _say_estimate(jobs: list[tuple[str, str, Any, int]], model: str | None) -> None:
    from labkit.experiment.v2.runner import REPO

    name = model or "gemma3-270m"
    recorded = REPO / RECORDED / name
    guess = estimate_s(jobs, recorded)
    if guess is None:
        print(f"labkit: no recorded run of {name} with these arms to estimate the time from", file=sys.stderr)
    else:
        print(f"labkit: estimated {guess / 60:.0f} min (median seconds per run of each arm in {RECORDED}/{name}, "
              f"recorded on 2 cores; a busy or slower machine takes longer)", file=sys.stderr)


def _cmd(args: argparse.Namespace) -> int:
    from labkit.experiment.v2.report import markdown, write_report
    from labkit.experiment.v2.runner import (
        Backends,
        finished_runs,
        prepare_replay_v2,
        remaining_jobs,
        run_experiment_v2,
    )

    out = Path(args.out)
    if args.replay:
        if args.resume:
            raise LabkitError("--resume continues a live recording; a replay always runs whole",
                              "drop --resume (or --replay).")
        folder = Path(args.replay)
        if folder.resolve() == out.resolve():
            raise LabkitError(f"--out {out} is the folder being replayed", "write the replay elsewhere (--out).")
        config = prepare_replay_v2(folder)
        backends = Backends(replay=folder)
        recorded = folder / "provenance.json"
        prov = {**(json.loads(recorded.read_text(encoding="utf-8")) if recorded.exists() else {}),
                "mode": "replay", "replayed_from": str(folder)}
    else:
        check_server_options(args, several=True)
        config = _config(args)
        config.check()
        from labkit.compare.runs import clean_commit

        clean_commit(out)  # a recording into data/ names a commit, not a dirty tree
        if config.decoding.temperature <= 0 and len(config.seeds) > 1:
            print("labkit: greedy decoding with several seeds: the seeds vary the order of examples, queues, "
                  "messages and menu options (see provenance 'arms')", file=sys.stderr)
        from labkit.experiment.v2.arms import ARMS, declared_prefixes

        needs_model = any(ARMS[a].uses_model for a in config.arms)
        kept = finished_runs(config, out) if args.resume else []  # checked before a model loads
        if needs_model and not args.server:
            _say_estimate(remaining_jobs(config, kept), args.model)
        prefixes = declared_prefixes(config.arms, config.seeds, config.task_sets()["dev"].example_tasks())
        backends = Backends(live=_live_backend(args, prefixes) if needs_model else None)
        prov = with_segment(provenance_v2(backends.describe(), config, "live", out), out, resume=args.resume)
        out.mkdir(parents=True, exist_ok=True)  # this segment's provenance first: an interruption keeps it
        (out / "provenance.json").write_text(json.dumps(prov, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    started = time.perf_counter()
    say = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    runs = run_experiment_v2(config, backends, out, resume=args.resume, progress=say)
    if "segments" in prov:
        prov["segments"][-1]["wall_s"] = round(time.perf_counter() - started, 1)
        prov["wall_s"] = round(sum(seg["wall_s"] or 0 for seg in prov["segments"]), 1)
    else:
        prov["wall_s"] = round(time.perf_counter() - started, 1)
    summary = write_report(out, runs, config.arms, config.splits, config.task_sets()["test"], prov)
    print(markdown(summary["rows"], summary["paired"], summary["headline"]), end="")
    print(f"\n{len(runs)} runs, {prov['mode']}, wall time {prov['wall_s']:.0f} s; results, logs/ and cassettes/ "
          f"in {out}")
    return 0


def _task_arguments(p: argparse.ArgumentParser) -> None:
    """What to run and with which model: shared by ``labkit experiment`` and ``labkit bench experiment``."""
    from labkit.experiment.v2.arms import ARMS

    p.add_argument("--arms", help=f"comma-separated arms (default all: {', '.join(ARMS)})")
    p.add_argument("--full", action="store_true", help="every task of dev and test (default: the test split's "
                                                        "headline ten; prints an estimate of the time first)")
    p.add_argument("--splits", help="dev, test or dev,test, with --full, --task-ids or --per-family (default dev,test)")
    p.add_argument("--task-ids", help="comma-separated task ids")
    p.add_argument("--per-family", type=int, help="at most N tasks per family and split (a smoke run)")
    p.add_argument("--seeds", type=int, default=1, help="seeds per task and arm (default 1)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0: greedy)")
    p.add_argument("--model", help="a registered model name (labkit models list; a chat model is asked in its chat "
                                   "template) or a .gguf file, instead of the embedded model")
    p.add_argument("--threads", type=int, help="llama.cpp threads for an in-process model")


def _cmd_bench(args: argparse.Namespace) -> int:
    from labkit.experiment.v2.speed import bench_experiment_v2, render_experiment_speed, report_to

    config = _config(args)
    default = args.model is None and config.to_dict() == default_config().to_dict()
    result = bench_experiment_v2(config, model=args.model, threads=args.threads, repeats=args.repeats,
                                 default_configuration=default,
                                 say=None if args.quiet else (lambda line: print(line, file=sys.stderr)))
    report_to(args.out, result)
    print(render_experiment_speed(result))
    return 0 if result["identical"] else 1


def _cmd_bench_equality(args: argparse.Namespace) -> int:
    from pathlib import Path

    from labkit.experiment.v2.equality import bench_equality, render_equality

    result = bench_equality(Path(args.recording), arms=args.arms.split(",") if args.arms else None,
                            limit=args.limit, threads=args.threads, timing_rounds=args.timing_rounds,
                            progress=not args.quiet)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2) if args.json else render_equality(result))
    return 1 if result["default_problems"] else 0


def register(commands: Any, bench: Any) -> None:

    b = bench.add_parser("experiment", help="the comparison (as make experiment) with lazy grammar and prefix reuse "
                                            "off, then on, back to back; checks the runs are identical")
    _task_arguments(b)
    b.add_argument("--repeats", type=int, default=1, help="off/on pairs, alternating (default 1)")
    b.add_argument("--out", help="write the result as JSON here (e.g. data/bench/experiment-speed-v2.json)")
    b.add_argument("--quiet", action="store_true", help="no progress lines")
    b.set_defaults(func=_cmd_bench)

    e = bench.add_parser("equality", help="lazy grammar and prefix reuse against today's path, token by token")
    e.add_argument("--recording", default=DEFAULT_RECORDING,
                   help=f"a folder written by `labkit experiment` (default {DEFAULT_RECORDING})")
    e.add_argument("--arms", help="comma-separated arms (default: every arm with recorded calls)")
    e.add_argument("--limit", type=int, help="at most this many prompts per arm (default: all)")
    e.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    e.add_argument("--out", help="write the result as JSON here (e.g. data/bench/equality.json)")
    e.add_argument("--timing-rounds", type=int, default=0,
                   help="also time today's path against the optimised one in this many alternating blocks")
    e.add_argument("--quiet", action="store_true", help="no progress lines")
    e.add_argument("--json", action="store_true", help="print the result as JSON")
    e.set_defaults(func=_cmd_bench_equality)

    p = commands.add_parser("experiment", help="the comparison v2: task families, dev/test split, seven arms")
    _task_arguments(p)
    add_server_options(p, server_help="an OpenAI-compatible server's base URL instead of an in-process model "
                       "(plain completions, the prompts sent as they are, unless --server-kind says how to reach "
                       "a chat model's template). Give it once per server to spread the runs over several servers "
                       "of one model; the rows are one server's")
    add_slots_option(p)
    p.add_argument("--replay", metavar="DIR", help="replay a recorded v2 experiment from its cassettes")
    p.add_argument("--out", default="results", help="output folder (default results/)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted recording in --out (same "
                   "options and model): its finished runs are kept, the others run")
    p.add_argument("--quiet", action="store_true", help="no per-run progress lines")
    p.set_defaults(func=_cmd)
