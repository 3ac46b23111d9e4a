"""Reading a small CSV text into rows of strings."""


def read_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """The header and the data rows of comma-separated ``text`` (blank lines skipped)."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = [cell.strip() for cell in lines[0].split(",")]
    rows = [[cell.strip() for cell in line.split(",")] for line in lines[1:]]
    return header, rows
