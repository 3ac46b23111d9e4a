import pytest

from lru import LRUCache
from memo import memoize


def test_put_and_get():
    cache = LRUCache(2)
    cache.put("a", 1)
    assert cache.get("a") == 1
    assert cache.get("b") is None and cache.get("b", 0) == 0


def test_evicts_the_oldest_when_full():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert "a" not in cache and len(cache) == 2


def test_put_of_a_known_key_updates_it_and_refreshes_it():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    cache.put("c", 3)
    assert cache.get("a") == 10 and "b" not in cache


def test_get_refreshes_recency():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert "a" in cache and "b" not in cache


def test_capacity_must_be_positive():
    with pytest.raises(ValueError):
        LRUCache(0)


def test_memoize_calls_once_per_argument():
    calls = []

    @memoize(2)
    def square(x):
        calls.append(x)
        return x * x

    assert [square(3), square(3), square(4)] == [9, 9, 16]
    assert calls == [3, 4]


def test_memoize_keeps_a_result_in_use():
    calls = []

    @memoize(2)
    def double(x):
        calls.append(x)
        return 2 * x

    double(1)
    double(2)
    double(1)   # 1 was used last: 2 is the one to go
    double(3)
    double(1)
    assert calls == [1, 2, 3]
