"""A column of numbers from CSV lines."""

from csvline import split_line, to_numbers


def column(lines: list[str], index: int) -> list[float]:
    return to_numbers([split_line(line)[index] for line in lines])
