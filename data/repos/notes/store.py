"""Keeping notes in memory and finding them by tag or word."""

from notes import Note, make_note, search


class NoteStore:
    def __init__(self) -> None:
        self._notes: list[Note] = []

    def add(self, title: str, body: str) -> Note:
        note = make_note(title, body)
        self._notes.append(note)
        return note

    def tagged(self, tag: str) -> list[str]:
        """Titles of the notes tagged ``tag``."""
        return [n.title for n in self._notes if tag.lower() in n.tags]

    def find(self, word: str) -> list[str]:
        """Titles of the notes that mention ``word`` (any case)."""
        return [n.title for n in search(self._notes, word)]
