"""Parsing Python source with :mod:`ast` safely from several threads at once.

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state, not per
thread (CPython issue gh-106905). When two threads build trees at the same time and one is
switched out mid-tree (a garbage collection that runs a ``__del__`` is enough), the other one's
count goes wrong and :func:`ast.parse` raises ``SystemError: AST constructor recursion depth
mismatch`` on perfectly good code. ``labkit grade`` checks learners' files on a thread pool and the
code comparison can run tasks on threads, so a right submission failed its row now and then.
Every parse in labkit goes through :func:`parse`, which holds one lock while the tree is built.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

_PARSING = threading.Lock()


@overload
def parse(source: str, filename: str = ..., mode: Literal["exec"] = ...) -> ast.Module: ...
@overload
def parse(source: str, filename: str = ..., *, mode: Literal["eval"]) -> ast.Expression: ...


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """:func:`ast.parse` under a process-wide lock (see the module's docstring for why)."""
    with _PARSING:
        return ast.parse(source, filename=filename, mode=mode)
