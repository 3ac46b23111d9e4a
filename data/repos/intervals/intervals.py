"""Merging closed intervals ``(start, end)``, both ends included."""


def merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of ``intervals`` as sorted, non-overlapping intervals.

    Intervals are closed: (1, 3) and (3, 5) share the point 3 and merge into (1, 5).
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start < merged[-1][1]:
            last_start, last_end = merged[-1]
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def total_length(intervals: list[tuple[int, int]]) -> int:
    """How much of the line the intervals cover (overlaps counted once)."""
    return sum(end - start for start, end in merge(intervals))
