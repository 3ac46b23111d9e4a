"""Splitting a list of items into pages."""


def page_count(n_items: int, per_page: int) -> int:
    """How many pages ``n_items`` need at ``per_page`` items a page."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    return n_items // per_page


def page(items: list, number: int, per_page: int) -> list:
    """The items on page ``number`` (pages count from 1)."""
    start = (number - 1) * per_page
    return items[start:start + per_page]
