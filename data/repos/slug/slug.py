"""Turning titles into URL slugs."""

import re


def slugify(title: str) -> str:
    """Lower-case words joined by '-', with everything but letters and digits dropped."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower())
