"""Record the five lesson traces into data/traces/*.jsonl (same code, same bytes).

    .venv/bin/python scripts/make_traces.py [--out data/traces]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from labkit.runtime.traces import TRACE_SPECS, TRACES_DIR, record_trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TRACES_DIR)
    args = parser.parse_args()
    for spec in TRACE_SPECS:
        runtime = record_trace(spec, args.out)
        result = runtime.result()
        print(f"{spec.name:24} {result.status:10} {result.outcome:12} {result.events:3} events  ({spec.description})")


if __name__ == "__main__":
    main()
