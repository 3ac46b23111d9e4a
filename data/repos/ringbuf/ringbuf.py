"""A buffer that keeps only the newest items."""


class RingBuffer:
    """At most ``capacity`` items, oldest first."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._items: list = []

    def push(self, item: object) -> None:
        self._items.append(item)

    def items(self) -> list:
        return list(self._items)
