from notes import make_note, search
from store import NoteStore


def make_store():
    store = NoteStore()
    store.add("Shopping", "Buy Milk and bread #home")
    store.add("Work", "Call Anna about the milk order. #Work #urgent,")
    store.add("Ideas", "A garden #home")
    return store


def test_tags_are_lower_case_without_punctuation():
    assert make_note("x", "see #Work #urgent, now").tags == {"work", "urgent"}


def test_tagged():
    assert make_store().tagged("home") == ["Shopping", "Ideas"]
    assert make_store().tagged("WORK") == ["Work"]


def test_search_finds_an_exact_word():
    notes = [make_note("a", "milk"), make_note("b", "bread")]
    assert [n.title for n in search(notes, "milk")] == ["a"]


def test_search_ignores_case():
    assert make_store().find("milk") == ["Shopping", "Work"]
    assert make_store().find("MILK") == ["Shopping", "Work"]
    assert make_store().find("anna") == ["Work"]


def test_search_looks_at_titles():
    assert make_store().find("Ideas") == ["Ideas"]


def test_no_match():
    assert make_store().find("cheese") == []
