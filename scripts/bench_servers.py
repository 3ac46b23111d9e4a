"""Spreading runs over servers on a CPU: one server with every core, against two one-thread servers, against two
slots on one server — measured back to back, as ratios.

Issue 26 asks what spreading a comparison buys where there is no GPU. The runner (:mod:`labkit.compare.runs`) spreads
runs over every ``--server`` and over each server's ``--slots``; on a 2-core machine the choices are one server with 2
threads, two servers with 1 thread each, or one server taking 2 runs at once (``python -m llama_cpp.server`` answers
one request at a time, so its second slot only waits). The same jobs — the comparison v2's ``machine-model`` arm on
one task of each family of the test split, two seeds, the embedded model — run under each layout in the palindromic
order A B C C B A, so a drift in the machine's load falls on every layout alike; the record keeps every wall time, the
median per layout, the ratios to layout A, and whether every layout gave the rows of layout A (it must: greedy
decoding, one model).

    flock /tmp/llm.lock .venv/bin/python scripts/bench_servers.py [--out data/bench/servers-cpu.json]

About 10 minutes on 2 cores; the record names its commit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from labkit.compare.runs import Answers, read_rows
from labkit.core.provenance import git_commit, machine
from labkit.llm.http import OpenAICompatBackend
from labkit.llm.modelfile import embedded_model_path
from labkit.llm.pool import ServerPool
from labkit.llm.serve import serving
from labkit.reading.runner import ReadingConfig, run_reading

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "data" / "bench" / "servers-cpu.json"
LAYOUTS = {  # name: (server threads, one per server; slots per server)
    "A: one server, 2 threads": ((2,), 1),
    "B: two servers, 1 thread each": ((1, 1), 1),
    "C: one server, 2 threads, 2 slots": ((2,), 2),
}
ORDER = ("A", "B", "C", "C", "B", "A")


@contextlib.contextmanager
def layout(threads: tuple[int, ...], slots: int, scratch: Path) -> Iterator[Any]:
    """The servers of one layout, as the backend the runner spreads runs over."""
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(serving(embedded_model_path(), scratch / f"server-{i}-{time.time_ns()}.log",
                                            threads=t)) for i, t in enumerate(threads)]
        clients = [OpenAICompatBackend(url, timeout_s=300, cache_dir=scratch / "cache") for url in urls]
        yield clients[0] if len(clients) == 1 and slots == 1 else ServerPool(clients, slots=slots)


def rows_of(folder: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in read_rows(folder / "runs.jsonl")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    config = ReadingConfig(arms=["machine-model"], splits=["test"], seeds=[0, 1], per_family=1)
    scratch = Path(tempfile.mkdtemp(prefix="labkit-bench-servers-"))
    commit = git_commit(repo=REPO)
    at_start = machine()
    names = {name[0]: name for name in LAYOUTS}
    times: dict[str, list[float]] = {name: [] for name in LAYOUTS}
    same: dict[str, bool] = {}
    reference: list[dict[str, Any]] | None = None
    for n, key in enumerate(ORDER):
        name = names[key]
        threads, slots = LAYOUTS[name]
        with layout(threads, slots, scratch) as backend:
            out = scratch / f"run-{n}-{key}"
            started = time.perf_counter()
            run_reading(config, Answers(live=backend), out)
            times[name].append(round(time.perf_counter() - started, 2))
        rows = rows_of(out)
        reference = rows if reference is None else reference
        same[name] = same.get(name, True) and rows == reference
        print(f"{name}: {times[name][-1]} s ({len(rows)} runs)", flush=True)
    median = {name: statistics.median(t) for name, t in times.items()}
    base = median[names["A"]]
    record = {
        "about": "the same comparison jobs under three server layouts on this CPU, back to back "
                 "(scripts/bench_servers.py): wall seconds per pass, the median per layout, its ratio to layout A",
        "commit": commit, "machine": at_start, "model": embedded_model_path().name,
        "jobs": {"arms": config.arms, "splits": config.splits, "seeds": config.seeds, "per_family": 1,
                 "runs": len(reference or [])},
        "order": [names[k] for k in ORDER], "wall_s": times, "median_s": median,
        "ratio_to_A": {name: round(m / base, 3) for name, m in median.items()},
        "rows_same_as_A": same,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    for name in LAYOUTS:
        print(f"{name}: median {median[name]} s, {record['ratio_to_A'][name]}× layout A, rows the same: {same[name]}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
