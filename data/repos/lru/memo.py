"""Memoising a one-argument function in an LRU cache."""

from collections.abc import Callable

from lru import LRUCache

_MISSING = object()


def memoize(capacity: int) -> Callable[[Callable], Callable]:
    """Decorator: remember the last ``capacity`` results of a one-argument function."""

    def wrap(func: Callable) -> Callable:
        cache = LRUCache(capacity)

        def inner(arg):
            found = cache.get(arg, _MISSING)
            if found is _MISSING:
                found = func(arg)
                cache.put(arg, found)
            return found

        inner.cache = cache
        return inner

    return wrap
