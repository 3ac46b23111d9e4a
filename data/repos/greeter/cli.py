"""Greeting everybody on a list."""

from greet import hello


def greet_all(names: list[str], lang: str = "en") -> list[str]:
    return [hello(name, lang) for name in names]
