"""Counting words in short texts."""


def count_words(text: str) -> int:
    """Number of words in ``text``; words are separated by whitespace."""
    if not text:
        return 0
    return len(text.split(" "))


def longest_word(text: str) -> str:
    """The longest word (the first one on a tie); empty text gives ''."""
    best = ""
    for word in text.split():
        if len(word) > len(best):
            best = word
    return best
