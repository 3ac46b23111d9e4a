"""A least-recently-used cache of fixed capacity."""

from collections import OrderedDict


class LRUCache:
    """Maps keys to values; when full, a put evicts the entry used least recently (by get or put)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._data: OrderedDict[object, object] = OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: object, default: object = None) -> object:
        if key not in self._data:
            return default
        return self._data[key]

    def put(self, key: object, value: object) -> None:
        if key in self._data:
            self._data.move_to_end(key)
        self._data[key] = value
        if len(self._data) > self.capacity:
            self._data.popitem(last=False)
