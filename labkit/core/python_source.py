"""Parsing Python source with :mod:`ast` safely from several threads at once.

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state (gh-106905), so
two threads parsing at once can make :func:`ast.parse` raise ``SystemError: AST constructor
recursion depth mismatch`` on good code. Grading and the code comparison parse on threads, so every
parse in labkit goes through :func:`parse`, which holds one lock while the tree is built.
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
