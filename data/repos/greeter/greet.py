"""Greetings in a few languages."""

GREETINGS = {"en": "Hello", "de": "Hallo", "fr": "Bonjour"}


def hello(name: str, lang: str = "en") -> str:
    """A greeting for ``name`` in language ``lang``."""
    return f"{GREETINGS[lang]}, {name}!"
