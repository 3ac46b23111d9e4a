from intervals import merge, total_length


def test_empty():
    assert merge([]) == []


def test_overlapping_intervals_merge():
    assert merge([(1, 4), (2, 6), (8, 10)]) == [(1, 6), (8, 10)]


def test_input_order_does_not_matter():
    assert merge([(8, 10), (2, 6), (1, 4)]) == [(1, 6), (8, 10)]


def test_contained_interval_disappears():
    assert merge([(1, 10), (3, 4)]) == [(1, 10)]


def test_disjoint_intervals_stay_apart():
    assert merge([(1, 2), (4, 5)]) == [(1, 2), (4, 5)]


def test_touching_intervals_merge():
    assert merge([(1, 3), (3, 5)]) == [(1, 5)]
    assert merge([(5, 7), (1, 3), (3, 5)]) == [(1, 7)]


def test_total_length_counts_overlaps_once():
    assert total_length([(1, 4), (2, 6)]) == 5
    assert total_length([(0, 2), (2, 4)]) == 4
