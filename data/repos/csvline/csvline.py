"""Reading one line of comma-separated values."""


def split_line(line: str, sep: str = ";") -> list[str]:
    """The fields of ``line``, stripped of surrounding spaces."""
    return [field.strip() for field in line.rstrip("\n").split(sep)]


def to_numbers(fields: list[str]) -> list[float]:
    return [float(f) for f in fields]
