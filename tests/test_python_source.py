"""`labkit.core.python_source.parse`: good code parses from two threads at once (CPython 3.11's AST race)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import labkit.course.exercises
from labkit.core.python_source import parse


class _Cycle:
    """Garbage only the cyclic collector frees; its ``__del__`` runs Python code mid-parse, so threads switch."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        for _ in range(20):
            pass


def test_two_threads_parsing_with_garbage_collection_between_get_no_system_error() -> None:
    source = Path(labkit.course.exercises.__file__).read_text(encoding="utf-8") * 3
    expected = len(parse(source).body)
    errors: list[str] = []

    def work() -> None:
        for _ in range(60):
            for _ in range(200):
                _Cycle()
            try:
                assert len(parse(source).body) == expected
            except SystemError as exc:  # what ast.parse raised here without the lock
                errors.append(str(exc))
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
