"""Write the synthetic record set to data/records.json (same seed, same bytes).

    .venv/bin/python scripts/make_records.py [--seed 4] [--count 40] [--out data/records.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from labkit.runtime.records import DEFAULT_COUNT, DEFAULT_SEED, RECORDS_PATH, generate_records, records_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--out", type=Path, default=RECORDS_PATH)
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(records_json(generate_records(args.seed, args.count)).encode("utf-8"))
    print(f"wrote {args.count} records to {args.out}")


if __name__ == "__main__":
    main()
