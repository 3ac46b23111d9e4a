import pytest

from calc import evaluate
from lexer import tokenize


def test_tokens():
    assert tokenize("12 + 3*4") == ["12", "+", "3", "*", "4"]
    assert tokenize("(1+2)") == ["(", "1", "+", "2", ")"]


def test_unknown_character_is_an_error():
    with pytest.raises(ValueError, match="unexpected character"):
        tokenize("2 ^ 3")


def test_precedence():
    assert evaluate("2 + 3 * 4") == 14
    assert evaluate("10 - 4 - 3") == 3
    assert evaluate("7 / 2") == 3


def test_parentheses():
    assert evaluate("(2 + 3) * 4") == 20


def test_modulo():
    assert tokenize("7 % 3") == ["7", "%", "3"]
    assert evaluate("7 % 3") == 1


def test_modulo_binds_like_times():
    assert evaluate("1 + 7 % 4") == 4
    assert evaluate("2 * 7 % 4") == 2
    assert evaluate("(1 + 7) % 5") == 3
