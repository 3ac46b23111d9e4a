"""Measure labkit's load route against llama.cpp's default, on two builds, back to back.

Why a script and not a test: it times real runs. Each configuration is one ``labkit bench inference
--json`` in its own child process (so a native crash is recorded as a crash, not suffered), with
``LABKIT_EXTRA_BUFTS`` choosing the route:

* ``on``   = llama.cpp's own default (extra buffer types on): the load before the fix;
* ``auto`` = labkit's decision (:func:`labkit.llm.native.decide_load_plan`);
* ``off``  = extra buffer types off everywhere (the simpler fix labkit did not choose).

``--alt-build DIR`` names a folder holding another ``llama_cpp`` build (``pip install --target DIR``),
put first on ``PYTHONPATH`` for its runs: a build compiled with ``-mno-amx-int8 -mno-amx-tile
-mno-amx-bf16`` has no AMX code, which is what llama.cpp compiles on a CPU without AMX. Rounds
alternate the order of configurations; ratios are taken within a round, so a busy machine slows
both sides of a ratio alike.

    .venv/bin/python scripts/bench_load_route.py --alt-build /tmp/noamx --rounds 2 --out data/bench/load-route.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from labkit.core.provenance import git_commit

ROUTES = ("on", "auto", "off")
MEASURES = ("prompt_tokens_per_s", "gen_tokens_per_s", "gen_grammar_tokens_per_s", "load_s")


def run_one(build: str, alt: str | None, route: str, runs: int) -> dict[str, Any]:
    env = {**os.environ, "LABKIT_EXTRA_BUFTS": route}
    if alt:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (alt, env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "labkit", "bench", "inference", "--json", "--runs", str(runs)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    row: dict[str, Any] = {"build": build, "route": route}
    if proc.returncode != 0:
        crashed = signal.Signals(-proc.returncode).name if proc.returncode < 0 else None
        row["outcome"] = f"crashed ({crashed})" if crashed else f"failed (exit {proc.returncode})"
        row["stderr_tail"] = proc.stderr[-400:]
        return row
    result = json.loads(proc.stdout)
    row["outcome"] = "ok"
    row.update({k: result[k] for k in (*MEASURES, "load_route", "cpu_amx", "build_amx", "llama_system_info",
                                       "llama_cpp_python", "model_sha256", "threads")})
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--alt-build", help="folder with another llama_cpp build (e.g. compiled without AMX)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per benchmark (after one warm-up)")
    parser.add_argument("--out", help="write the results here as JSON")
    args = parser.parse_args()
    builds = [("default", None)] + ([("no-AMX", args.alt_build)] if args.alt_build else [])
    configs = [(b, alt, r) for b, alt in builds for r in ROUTES]
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rows: list[dict[str, Any]] = []
    for round_no in range(args.rounds):
        order = configs if round_no % 2 == 0 else list(reversed(configs))
        for build, alt, route in order:
            row = run_one(build, alt, route, args.runs)
            row["round"] = round_no
            rows.append(row)
            shown = row.get("gen_tokens_per_s")
            print(f"round {round_no} {build:<8} {route:<4} {row['outcome']}"
                  + (f"  pp {row['prompt_tokens_per_s']:.1f} tok/s, gen {shown:.1f} tok/s, "
                     f"grammar {row['gen_grammar_tokens_per_s']:.1f} tok/s" if shown else ""), flush=True)
    ratios: dict[str, dict[str, float]] = {}
    for build, _, _ in configs[::len(ROUTES)]:
        for a, b in (("auto", "on"), ("off", "on"), ("auto", "off")):
            per_round = []
            for r in range(args.rounds):
                x = next(x for x in rows if (x["build"], x["route"], x["round"]) == (build, a, r))
                y = next(y for y in rows if (y["build"], y["route"], y["round"]) == (build, b, r))
                if x["outcome"] == y["outcome"] == "ok":
                    per_round.append({m: x[m] / y[m] for m in MEASURES})
            if per_round:
                ratios[f"{build}: {a}/{b}"] = {m: round(statistics.median(p[m] for p in per_round), 3)
                                               for m in MEASURES}
    out = {"benchmark": "scripts/bench_load_route.py", "started_utc": started, "git_commit": git_commit(),
           "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
           "python": platform.python_version(), "rounds": args.rounds, "runs_per_benchmark": args.runs,
           "alt_build": "llama-cpp-python compiled with -mno-amx-int8 -mno-amx-tile -mno-amx-bf16"
           if args.alt_build else None, "rows": rows, "ratios_median_per_round": ratios}
    print(json.dumps(ratios, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
