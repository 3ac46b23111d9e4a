"""Write README.md's comparison table from the committed recordings (data/experiment-v2/<model>/summary.json).

Run it after a new recording; tests/test_readme_comparison.py fails while the README shows another table.
"""

from __future__ import annotations

import json
from pathlib import Path

from labkit.experiment.v2.report import models_table

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("gemma3-270m", "qwen2.5-coder-1.5b")
BEGIN, END = "<!-- comparison-table: begin -->", "<!-- comparison-table: end -->"


def recorded_summaries(root: Path = ROOT) -> dict[str, dict]:
    folder = root / "data" / "experiment-v2"
    return {m: json.loads((folder / m / "summary.json").read_text(encoding="utf-8"))
            for m in MODELS if (folder / m / "summary.json").exists()}


def table_block(root: Path = ROOT) -> str:
    return models_table(recorded_summaries(root)).strip()


def main() -> None:
    path = ROOT / "README.md"
    readme = path.read_text(encoding="utf-8")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{table_block()}\n{END}{tail}", encoding="utf-8")
    print(f"wrote the comparison table of {', '.join(recorded_summaries())} into {path}")


if __name__ == "__main__":
    main()
