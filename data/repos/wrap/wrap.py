"""Wrapping text into lines of at most ``width`` characters."""


def wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap; a word longer than ``width`` gets a line of its own."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= width + 1:
            current = candidate
        else:
            if current:
                lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines
