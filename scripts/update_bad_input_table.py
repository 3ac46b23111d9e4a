"""Write the bad-input table (tests/test_bad_input.py's ROWS, each with the error it gets) into docs/commands.md.

Run it after changing a row or an error message; tests/test_bad_input.py fails while the page shows another table.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import test_bad_input as table  # noqa: E402 - the table lives with its tests


def main() -> int:
    text = table.DOC.read_text(encoding="utf-8")
    start, end = text.find(table.BEGIN), text.find(table.END)
    if start < 0 or end < start:
        print(f"{table.DOC} lacks the {table.BEGIN} ... {table.END} markers", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as folder:
        block = table.doc_block(Path(folder))
    table.DOC.write_text(f"{text[:start]}{table.BEGIN}\n{block}\n{text[end:]}", encoding="utf-8")
    print(f"wrote {len(table.ROWS)} rows into {table.DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
