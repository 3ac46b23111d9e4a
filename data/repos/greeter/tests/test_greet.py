import greet
from cli import greet_all


def test_greeting_is_called_greeting():
    assert greet.greeting("Ada") == "Hello, Ada!"
    assert greet.greeting("Ada", "de") == "Hallo, Ada!"
    assert not hasattr(greet, "hello")


def test_greet_all():
    assert greet_all(["A", "B"], "fr") == ["Bonjour, A!", "Bonjour, B!"]
