"""Splitting an arithmetic expression into tokens: integers, operators and parentheses."""

OPERATORS = "+-*/"


def tokenize(text: str) -> list[str]:
    """``"12 + 3*4"`` -> ``["12", "+", "3", "*", "4"]``; any other character is a ValueError."""
    tokens: list[str] = []
    number = ""
    for char in text:
        if char.isdigit():
            number += char
            continue
        if number:
            tokens.append(number)
            number = ""
        if char.isspace():
            continue
        if char in OPERATORS or char in "()":
            tokens.append(char)
        else:
            raise ValueError(f"unexpected character {char!r}")
    if number:
        tokens.append(number)
    return tokens
