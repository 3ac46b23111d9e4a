from slug import slugify


def test_words():
    assert slugify("Hello World") == "hello-world"


def test_punctuation_inside():
    assert slugify("state, machines & you") == "state-machines-you"


def test_no_dashes_at_the_ends():
    assert slugify("  Hello, World!  ") == "hello-world"
