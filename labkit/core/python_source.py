"""Thread-safe :func:`ast.parse`: CPython 3.11 keeps the AST constructor's recursion depth in shared state
(gh-106905), so parallel parses can raise ``SystemError`` on good code; :func:`parse` holds one lock."""

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
