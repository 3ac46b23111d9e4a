"""Evaluating integer arithmetic with the usual precedence (shunting-yard)."""

from lexer import tokenize

PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
APPLY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a // b,
}


def _reduce(values: list[int], ops: list[str]) -> None:
    op = ops.pop()
    right, left = values.pop(), values.pop()
    values.append(APPLY[op](left, right))


def evaluate(text: str) -> int:
    """The value of ``text``; ``/`` is integer division."""
    values: list[int] = []
    ops: list[str] = []
    for token in tokenize(text):
        if token.isdigit():
            values.append(int(token))
        elif token == "(":
            ops.append(token)
        elif token == ")":
            while ops[-1] != "(":
                _reduce(values, ops)
            ops.pop()
        else:
            while ops and ops[-1] != "(" and PRECEDENCE[ops[-1]] >= PRECEDENCE[token]:
                _reduce(values, ops)
            ops.append(token)
    while ops:
        _reduce(values, ops)
    return values[0]
