"""The tiny calc project the code comparison's tests run on: test_add fails, test_double passes."""

from __future__ import annotations

from pathlib import Path

CALC = "def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return 2 * x\n"
TESTS = ("from calc import add, double\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_double():\n    assert double(4) == 8\n")
TASKS_YAML = """format: 1
tasks:
  - id: calc-add
    project: calc
    split: test
    kind: bug
    requirement: add(a, b) must return the sum of a and b.
    failing: [tests/test_calc.py::test_add]
    oracle:
      - path: calc.py
        why: add subtracts
        edits:
          - search: '    return a - b'
            replace: '    return a + b'
"""
FIX = {"search": "    return a - b", "replace": "    return a + b"}


def write_calc_project(root: Path) -> Path:
    """The task file with its one task and the real two-file project under ``root / "repos"``."""
    (root / "repos" / "calc" / "tests").mkdir(parents=True)
    (root / "repos" / "calc" / "calc.py").write_text(CALC)
    (root / "repos" / "calc" / "tests" / "test_calc.py").write_text(TESTS)
    (root / "repos" / "tasks.yaml").write_text(TASKS_YAML)
    return root / "repos"
