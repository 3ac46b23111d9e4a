"""Write the v2 task sets data/tasks/v2/dev.json and test.json (same seed, same bytes).

    .venv/bin/python scripts/make_tasks_v2.py [--seed 9] [--out data/tasks/v2]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from labkit.reading.generate import DEFAULT_SEED, generate_split, task_set_json

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "data" / "tasks" / "v2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for split in ("dev", "test"):
        data = generate_split(split, args.seed)
        target = args.out / f"{split}.json"
        target.write_bytes(task_set_json(data).encode("utf-8"))
        print(f"wrote {len(data['tasks'])} {split} tasks to {target}")


if __name__ == "__main__":
    main()
