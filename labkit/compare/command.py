"""``labkit compare reading|code|dialog``: one command records, resumes, replays and reports every comparison.

Each declares a :class:`ComparisonKind` (``COMPARISONS`` in ``registry.COMPARISON_MODULES``): a recording
is continued only with ``--resume``, ``--replay DIR`` exits 1 on any differing row, the model is built
in one place (:func:`live_model`)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.compare.runs import Answers, Row, clean_commit
from labkit.core.errors import LabkitError
from labkit.core.registry import COMPARISON_MODULES, declared

Say = Callable[[str], None] | None
SCRATCH = "workspaces"  # a recording's scratch folder (working copies): emptied by each stretch, never a result


@dataclass
class Plan:
    """What a live recording needs: whether it asks a model, with which context and kept prompt heads, and
    ``record(answers, out, resume, say)``, which runs it. ``after_build`` sees the model before the first call."""

    record: Callable[[Answers, Path, bool, Say], None]
    uses_model: bool = True
    n_ctx: int = 4096
    prefixes: tuple[str, ...] = ()
    after_build: Callable[[Any], None] | None = None


@dataclass(frozen=True)
class ComparisonKind:
    """One comparison as the command sees it: its own options, how a live run is planned from the parsed
    flags, how a recording is replayed (the differences) and how a recording is reported."""

    name: str
    about: str
    config_file: str  # the file a recording's folder always holds
    tasks_help: str
    arms_help: str
    options: Callable[[argparse.ArgumentParser], None]
    plan: Callable[[argparse.Namespace], Plan]
    replay: Callable[[Path, Path, Say], list[str]]
    report: Callable[[Path], str]


def kinds() -> dict[str, ComparisonKind]:
    """Every declared comparison, by name."""
    return declared(COMPARISON_MODULES, "COMPARISONS", "COMPARISON_MODULES")


def row_differences(recorded: Iterable[Row], replayed: Iterable[Row], key: Callable[[Row], tuple[Any, ...]],
                    ignored: Sequence[str] = ("wall_s", "model_s")) -> list[str]:
    """Every field (but ``ignored``, the times) in which a replayed row differs from its recording, one line each."""
    again = {key(row): row for row in replayed}
    problems = []
    for row in recorded:
        name = " ".join(str(part) for part in key(row))
        other = again.get(key(row))
        if other is None:
            problems.append(f"{name}: not replayed")
            continue
        problems += [f"{name}: {field} recorded {row.get(field)!r}, replayed {other.get(field)!r}"
                     for field in sorted(set(row) | set(other))
                     if field not in ignored and row.get(field) != other.get(field)]
    return problems


def recorded_model(args: argparse.Namespace) -> str:
    """The model name a recording's configuration stores: the server's model, or the in-process model's name."""
    from labkit.llm.models import DEFAULT_MODEL

    if args.server:
        return args.server_model or "server"
    return args.model or DEFAULT_MODEL


def split_list(value: str | None) -> list[str] | None:
    """A comma-separated flag as a list (None when not given)."""
    return [part.strip() for part in value.split(",") if part.strip()] if value else None


def live_model(args: argparse.Namespace, plan: Plan) -> Any:
    """The model a recording asks: the in-process model (with the plan's context and prompt heads), one server
    or a pool of servers and slots, and ``--reuse``'s recorded answers in front of it."""
    from labkit.llm.models import model_backend
    from labkit.llm.server_options import live_backend

    live = live_backend(args, lambda: model_backend(args.model, n_ctx=plan.n_ctx, threads=args.threads,
                                                    prefixes=plan.prefixes))
    if plan.after_build is not None:
        plan.after_build(live)
    if args.reuse:
        from labkit.llm.cassette import reusing

        live = reusing(live, Path(args.reuse), server=bool(args.server))
    return live


def _replay(kind: ComparisonKind, args: argparse.Namespace, say: Say) -> int:
    for flag, given in (("--resume", args.resume), ("--reuse", args.reuse)):
        if given:
            raise LabkitError(f"{flag} is for a live recording; a replay answers every call from its own cassettes",
                              f"drop {flag} (or --replay).")
    folder = Path(args.replay)
    if not (folder / kind.config_file).exists():
        raise LabkitError(f"{folder} is not a recorded {kind.name} comparison ({kind.config_file} is missing)",
                          f"pass a folder written by `labkit compare {kind.name}`.")
    if args.out and Path(args.out).resolve() == folder.resolve():
        raise LabkitError(f"--out {args.out} is the folder being replayed", "replay into a new folder (or leave "
                          "--out out).")
    with tempfile.TemporaryDirectory(prefix=f"labkit-replay-{kind.name}-") as scratch:
        problems = kind.replay(folder, Path(args.out) if args.out else Path(scratch), say)
    for line in problems:
        print(f"DIFFERS: {line}")
    print("every row reproduced (times aside)" if not problems else f"{len(problems)} difference(s)")
    if not problems:
        print(kind.report(folder), end="")
    return 0 if not problems else 1


def _cmd(args: argparse.Namespace) -> int:
    from labkit.llm.server_options import check_server_options

    kind = kinds()[args.kind]
    say = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    if args.replay:
        return _replay(kind, args, say)
    out = Path(args.out or f"results/{kind.name}")
    held = (out / kind.config_file).exists()
    if held and not args.resume:
        raise LabkitError(f"{out} already holds a {kind.name} recording",
                          "add --resume to continue it (its options must be the same), or give a new --out.")
    if not held and not args.resume and out.exists() and any(path.name != SCRATCH for path in out.iterdir()):
        raise LabkitError(f"{out} is not empty and holds no {kind.config_file}", "choose a new or empty --out.")
    check_server_options(args, several=True)
    plan = kind.plan(args)
    clean_commit(out)  # a recording into data/ names a commit, not a dirty tree
    live = None
    if plan.uses_model:
        live = live_model(args, plan)
    elif args.server:
        raise LabkitError("--server is given but no arm asks a model", "drop --server, or add a model arm.")
    elif args.reuse:
        raise LabkitError("--reuse is given but no arm asks a model", "drop --reuse, or add a model arm.")
    plan.record(Answers(live=live), out, held, say)
    if args.reuse:
        print(f"{live.hits} call(s) answered from {args.reuse}'s cassettes, {live.misses} by the model")
    print(kind.report(out), end="")
    print(f"\nthe recording is in {out}")
    return 0


def _add_common(p: argparse.ArgumentParser, kind: ComparisonKind) -> None:
    from labkit.llm.server_options import add_server_options, add_slots_option

    p.add_argument("--model", help="a registered model name (labkit models list) or a .gguf file (default: the "
                   "embedded model)")
    p.add_argument("--threads", type=int, help="llama.cpp threads for the in-process model (default: every core)")
    add_server_options(p, server_help="an OpenAI-compatible server's base URL instead of an in-process model; give "
                       "it once per server to spread the runs over several servers of one model")
    add_slots_option(p)
    p.add_argument("--tasks", help=kind.tasks_help)
    p.add_argument("--split", choices=("dev", "test", "all"), default="test",
                   help="dev (design), test (the report; default) or all")
    p.add_argument("--arms", help=kind.arms_help)
    p.add_argument("--only", help="comma-separated task ids: this recording runs only them (--resume adds others)")
    p.add_argument("--out", help=f"the recording's folder (default results/{kind.name})")
    p.add_argument("--resume", action="store_true", help="continue the recording in --out (the same options, or "
                   "more tasks with --only); its finished rows are kept. An empty --out is started")
    p.add_argument("--replay", metavar="DIR", help="re-run a recording from its cassettes (no model), check every "
                   "row against it and print its report")
    p.add_argument("--reuse", metavar="DIR", help="answer every call whose very request a recorded folder's "
                   "cassettes hold from there (marked replayed in the new cassette); the others go to the model")
    p.add_argument("--quiet", action="store_true", help="no per-run progress lines")


def register(commands: Any, bench: Any) -> None:
    """Add ``labkit compare KIND`` with one sub-command per declared comparison."""
    del bench
    group = commands.add_parser("compare", help="record, resume, replay or report a comparison of arms on tasks "
                                "(reading, code or dialog)")
    sub = group.add_subparsers(dest="kind", required=True, metavar="KIND")
    for kind in kinds().values():
        p = sub.add_parser(kind.name, help=kind.about)
        _add_common(p, kind)
        kind.options(p)
        p.set_defaults(func=_cmd)


__all__ = ["ComparisonKind", "Plan", "kinds", "live_model", "recorded_model", "row_differences", "split_list"]
