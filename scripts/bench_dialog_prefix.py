"""Prefix reuse across turns in the dialog measure: what keeping each step's prompt head buys, and what it changes.

Issue 24 asks for the seed's cache reads: the machine's fixed head per step is a declared prefix
(:meth:`labkit.dialog.engine._Bot.declared_prefixes`), and the recording reports the prompt tokens read
from the cache per user message. With ``--prefix-cache`` a prompt that starts with a head is evaluated
as two batches, [head][rest]; the head's KV state is kept between calls, which by construction
changes only the time (:mod:`labkit.llm.prefix_cache`). This script measures it on the real model,
with the runner that records the comparison (``labkit compare dialog``), on dev users:

- **F**: two batches, the head evaluated afresh on every call (the reference for K);
- **K**: two batches, the head's state kept (what ``--prefix-cache`` does),

in the order F K K F, so a drift in the machine's load falls on both alike. The record keeps each
pass's wall time, the median per way and K's ratio to F, the prompt tokens and the tokens read from
the cache per user message, whether K gave F's rows (it must), and whether either gave the rows of the
committed dev recording, made in one batch per call (the two-batch cut can change a greedy answer:
``data/bench/equality.json`` found it does on some prompts of the comparison v2).

    flock /tmp/llm.lock .venv/bin/python scripts/bench_dialog_prefix.py [--users a01] [--model qwen2.5-coder-1.5b]

About 10 minutes on 2 cores for one user; the record names its commit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from labkit.compare.runs import Answers, read_rows
from labkit.core.provenance import git_commit, machine
from labkit.dialog import comparison
from labkit.dialog.arms import declared_prefixes
from labkit.dialog.simulate import load_scenarios
from labkit.llm.models import model_backend

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "data" / "bench" / "dialog-prefix.json"
RECORDED = REPO / "data" / "dialog" / "runs_dev"
ARMS = ("machine", "prompt_only_checked")
WAYS = {"F": "two batches, the head evaluated afresh each call", "K": "two batches, the head's KV state kept"}
ORDER = ("F", "K", "K", "F")


def compared(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as a replay compares them (comparison.ROW_FIELDS), in one order."""
    return sorted(({k: r.get(k) for k in comparison.ROW_FIELDS} for r in rows), key=lambda r: (r["arm"], r["task"]))


def per_message(rows: list[dict[str, Any]], field: str) -> float:
    messages = sum(r["user_messages"] for r in rows)
    total = sum(sum(r[field]) if isinstance(r[field], list) else r[field] for r in rows)
    return round(total / messages, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--users", default="a01", help="comma-separated dev users (default a01)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    users = args.users.split(",")
    settings = comparison.DialogConfig(model=args.model, arms=ARMS, split="dev")
    backend = model_backend(args.model, threads=args.threads)
    scenarios = load_scenarios(comparison.repo_path(settings.scenarios)).values()
    backend.prefixes = declared_prefixes(ARMS, scenarios, backend)
    scratch = Path(tempfile.mkdtemp(prefix="labkit-bench-dialog-prefix-"))
    commit, at_start = git_commit(repo=REPO), machine()
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    rows: dict[str, list[dict[str, Any]]] = {}
    for n, way in enumerate(ORDER):
        backend.prefix_reuse = way == "K"
        backend.forget_kept_prefix()
        out = scratch / f"pass-{n}-{way}"
        started = time.perf_counter()
        got = comparison.record(settings, Answers(live=backend), out, only=users)
        times[way].append(round(time.perf_counter() - started, 2))
        rows.setdefault(way, got)
        if compared(got) != compared(rows[way]):
            raise SystemExit(f"pass {n} ({way}) gave other rows than the first {way} pass: greedy decoding must not")
        print(f"{way} ({WAYS[way]}): {times[way][-1]} s, {len(got)} conversations", flush=True)
    model_dir = RECORDED / args.model  # a recording's folder is named after its registered model
    recorded = [r for r in read_rows(model_dir / "runs.jsonl") if r["task"].split("_")[0] in users
                and r["arm"] in ARMS] if (model_dir / "runs.jsonl").exists() else []
    median = {way: statistics.median(t) for way, t in times.items()}
    record = {
        "about": "the dialog measure's runner on dev users with each step's prompt head declared "
                 "(scripts/bench_dialog_prefix.py): wall seconds per pass in the order F K K F, the median per way, "
                 "prompt tokens and tokens read from the cache per user message, and whether the rows agree",
        "commit": commit, "machine": at_start, "model": args.model, "threads": args.threads,
        "backend": backend.describe(), "arms": list(ARMS), "users": sorted({r["task"] for r in rows["F"]}),
        "conversations": len(rows["F"]), "user_messages": sum(r["user_messages"] for r in rows["F"]),
        "ways": WAYS, "order": list(ORDER), "wall_s": times, "median_s": median,
        "ratio_K_to_F": round(median["K"] / median["F"], 3),
        "prompt_tokens_per_message": per_message(rows["K"], "prompt_tokens"),
        "cached_tokens_per_message": {way: per_message(rows[way], "cached_tokens") for way in WAYS},
        "cached_tokens_per_message_by_arm": {arm: per_message([r for r in rows["K"] if r["arm"] == arm],
                                                              "cached_tokens") for arm in ARMS},
        "rows_K_same_as_F": compared(rows["K"]) == compared(rows["F"]),
        "recorded_in_one_batch": model_dir.relative_to(REPO).as_posix() if recorded else None,
        "rows_same_as_recorded": (compared(rows["F"]) == compared(recorded)) if recorded else None,
        "differs_from_recorded": sorted(f"{r['arm']} {r['task']}" for r, o in zip(compared(rows["F"]),
                                        compared(recorded), strict=False) if r != o) if recorded else None,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: record[k] for k in ("median_s", "ratio_K_to_F", "prompt_tokens_per_message",
                                              "cached_tokens_per_message", "rows_K_same_as_F",
                                              "rows_same_as_recorded", "differs_from_recorded")}))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
