from words import count_words, longest_word


def test_simple():
    assert count_words("one two three") == 3


def test_empty():
    assert count_words("") == 0


def test_many_spaces():
    assert count_words("one   two\tthree\n") == 3


def test_longest():
    assert longest_word("a bee cats") == "cats"
