import pytest

from ringbuf import RingBuffer


def test_keeps_items_in_order():
    buf = RingBuffer(3)
    for i in range(2):
        buf.push(i)
    assert buf.items() == [0, 1]


def test_drops_the_oldest_when_full():
    buf = RingBuffer(3)
    for i in range(5):
        buf.push(i)
    assert buf.items() == [2, 3, 4]


def test_capacity_checked():
    with pytest.raises(ValueError):
        RingBuffer(0)
