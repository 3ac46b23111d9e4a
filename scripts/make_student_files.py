"""Write each exercise's student.py from its solution.py (the regions between solution markers are stripped).

Run after editing a solution: ``python scripts/make_student_files.py``. ``--check`` only lists stale
student files and exits 1 if there are any (tests/test_exercises_generated.py does the same in CI).
See :func:`labkit.course.exercises.student_text` for the markers.
"""

from __future__ import annotations

import argparse
import sys

from labkit.course.exercises import stale_student_files, write_student_files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="list stale student files, write nothing")
    args = parser.parse_args()
    if args.check:
        stale = stale_student_files()
        for path in stale:
            print(f"stale: {path} (run: python scripts/make_student_files.py)")
        return 1 if stale else 0
    for path in write_student_files():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
