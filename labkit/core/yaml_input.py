"""The one strict reader of user-written YAML: every mistake named at ``file:line:column``.

YAML 1.1 silently retypes ``yes``/``no``, numbers, dates and empty values and keeps the last of two equal
keys; :func:`parse_yaml` refuses those (and tabs in indentation), giving located mappings and lists."""

from __future__ import annotations

import datetime
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from labkit.core.errors import LabkitError

MAX_BYTES = 1 << 20
"""The largest input file read (1 MiB): the kit's largest scenario is a few KiB, so a bigger file is a mistake
(a log or a model passed by accident), and reading it whole would only be slow."""

_BOOLEAN_WORDS = "yes/no/on/off/true/false"


@dataclass(frozen=True)
class Where:
    """A place in a file (1-based line and column)."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"  # the form editors and terminals jump to


class Located(dict):  # type: ignore[type-arg]
    """A mapping that remembers where it, each of its keys and each of its values stand in the file.

    ``source`` holds each value's text as written (``yes`` for the boolean true), for messages."""

    where: Where
    key_where: dict[str, Where]
    value_where: dict[str, Where]
    source: dict[str, str]

    @classmethod
    def empty(cls, where: Where) -> Located:
        """A mapping with no keys, placed at ``where`` (an optional section left out)."""
        out = cls()
        out.where, out.key_where, out.value_where, out.source = where, {}, {}, {}
        return out


class LocatedList(list):  # type: ignore[type-arg]
    """A list that remembers where it and each of its items stand, and each item's text as written."""

    where: Where
    item_where: list[Where]
    source: list[str]


def _quoted(text: str) -> str:
    """``text`` as a YAML quoted scalar (single quotes unless it holds one)."""
    if "'" not in text:
        return f"'{text}'"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def not_text(value: Any, source: str, what: str, form: str = "- {}") -> str | None:
    """Why ``value`` is not the text expected as ``what`` (``source`` as written, ``form`` the fix in place);
    None when it is text."""
    if isinstance(value, str):
        return None
    shown = source.strip() or str(value)
    fix = f"quote it: {form.format(_quoted(shown))}"
    if isinstance(value, bool):
        return (f"{what} is the boolean {str(value).lower()}; YAML reads {_BOOLEAN_WORDS} as booleans; {fix}")
    if isinstance(value, int | float):
        return f"{what} is the number {shown}; YAML reads an unquoted number as a number; {fix}"
    if isinstance(value, datetime.date):
        return f"{what} is the date {shown}; YAML reads an unquoted date as a date; {fix}"
    if value is None:
        if not source.strip():
            return f"{what} is empty; write the text after {form.format('').strip() or 'it'}"
        return f"{what} is null; YAML reads ~ and null as nothing; {fix}"
    if isinstance(value, dict):
        return (f"{what} is a mapping, not text; YAML reads a word followed by ': ' as a key; "
                f"quote it: {form.format(_quoted(' '.join(shown.split())))}")
    if isinstance(value, list):
        return f"{what} is a list, not text; YAML reads [...] and '- ' lines as a list; write one line of text"
    return f"{what} is a {type(value).__name__}, not text; {fix}"


def expect_text(value: Any, where: Where, source: str, what: str, error: type[LabkitError] = LabkitError,
                form: str = "- {}") -> str:
    """``value`` if it is text; otherwise ``error`` at ``where`` saying what YAML read and how to quote it."""
    why = not_text(value, source, what, form)
    if why is None:
        return str(value)
    if value is None and not source.strip():
        raise error(f"{where}: {why}", "write the text there; YAML reads a value left empty as null.")
    raise error(f"{where}: {why}", "put quotes around a value that is text; YAML then reads it as written.")


def item_text(items: LocatedList, index: int, what: str, error: type[LabkitError] = LabkitError) -> str:
    """Item ``index`` of ``items`` as text (``what`` names it in the error, e.g. ``turn 3``)."""
    return expect_text(items[index], items.item_where[index], items.source[index], what, error)


def value_text(data: Located, key: str, what: str, error: type[LabkitError] = LabkitError) -> str:
    """``data[key]`` as text (``what`` names it in the error)."""
    return expect_text(data[key], data.value_where.get(key, data.key_where.get(key, data.where)),
                       data.source.get(key, ""), what, error, form=f"{key}: {{}}")


def check_keys(data: Located, allowed: Sequence[str] | set[str], what: str,
               error: type[LabkitError] = LabkitError) -> None:
    """Refuse a key of ``data`` not in ``allowed``, naming it and the known keys."""
    for key in data:
        if key not in allowed:
            raise error(f"{data.key_where[str(key)]}: unknown key '{key}' in {what}",
                        f"known keys: {', '.join(sorted(allowed))}.")


def where_of(data: Any, path: Sequence[Any], default: Where) -> Where:
    """The place of the value at ``path`` (keys and list indexes, e.g. a pydantic error's ``loc``) in
    data from :func:`parse_yaml`: the deepest step of it that the file has, else ``default``."""
    where = getattr(data, "where", default)
    node = data
    for step in path:
        if isinstance(node, Located) and str(step) in node:
            where = node.value_where.get(str(step), node.key_where[str(step)])
            node = node[str(step)]
        elif isinstance(node, LocatedList) and isinstance(step, int) and 0 <= step < len(node):
            where = node.item_where[step]
            node = node[step]
        else:
            break
    return where


def source_at(data: Any, path: Sequence[Any]) -> str:
    """The text as written of the value at ``path`` ("" when the path leaves the file's data)."""
    node, source = data, ""
    for step in path:
        if isinstance(node, Located) and str(step) in node:
            source, node = node.source.get(str(step), ""), node[str(step)]
        elif isinstance(node, LocatedList) and isinstance(step, int) and 0 <= step < len(node):
            source, node = node.source[step], node[step]
        else:
            return ""
    return source


# --------------------------------------------------------------------------- reading
def read_input(path: str | Path, what: str, error: type[LabkitError] = LabkitError, *,
               max_bytes: int = MAX_BYTES, hint: str = "check the path.") -> str:
    """The text of the file a user gave as ``what`` (e.g. ``user script``): refused when it cannot be
    read, is a folder, is larger than ``max_bytes``, holds NUL bytes (a binary file), is not UTF-8 or is
    empty. ``hint`` is what to do when the file cannot be read at all."""
    p = Path(path)
    start = Where(str(p), 1, 1)
    if p.is_dir():
        raise error(f"{p} is a folder, not a {what}", f"give the path of the {what} file inside it.")
    try:
        with p.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror or exc}", hint) from None
    if len(data) > max_bytes:
        raise error(f"{start}: the {what} is larger than {max_bytes:,} bytes (the most a {what} may hold)",
                    f"give the {what} itself, not another file; a {what} is a short text file.")
    return decode_input(data, str(p), what, error)


def decode_input(data: bytes, file: str, what: str, error: type[LabkitError] = LabkitError) -> str:
    """``data`` as UTF-8 text; refused when it is binary, not UTF-8, or empty (see :func:`read_input`)."""
    if b"\0" in data:
        where = _place(data, data.index(b"\0"), file)
        raise error(f"{where}: the {what} is a binary file (it holds NUL bytes), not text",
                    f"give the {what} as a text file (YAML or JSON saved by an editor), not a binary or archive.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = _place(data, exc.start, file)
        raise error(f"{where}: the {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} there cannot start "
                    "a UTF-8 character)", "save the file as UTF-8 (most editors offer it under 'encoding').") from None
    if not text.strip():
        raise error(f"{Where(file, 1, 1)}: the {what} is empty", f"write the {what}'s content; see its format "
                    "in docs/commands.md (Bad input) and the module that reads it.")
    return text


def _place(data: bytes, index: int, file: str) -> Where:
    """The line and column (in bytes) of byte ``index`` of ``data``."""
    line_start = data.rfind(b"\n", 0, index) + 1
    return Where(file, data.count(b"\n", 0, index) + 1, index - line_start + 1)


def load_yaml(path: str | Path, what: str, error: type[LabkitError] = LabkitError, *,
              max_bytes: int = MAX_BYTES, hint: str = "check the path.") -> Any:
    """:func:`read_input` then :func:`parse_yaml`: a user's YAML file, strictly."""
    return parse_yaml(read_input(path, what, error, max_bytes=max_bytes, hint=hint), str(path), what, error)


def parse_yaml(text: str, file: str, what: str = "file", error: type[LabkitError] = LabkitError) -> Any:
    """YAML ``text`` as :class:`Located` mappings, :class:`LocatedList` lists and scalars; refuses invalid
    YAML, tab indentation, repeated or non-text keys, self-containing aliases, and no data."""
    if not text.strip():
        raise error(f"{Where(file, 1, 1)}: the {what} is empty", f"write the {what}'s content.")
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:  # a control character: PyYAML refuses it before parsing
        before = text[: exc.position]
        where = Where(file, before.count("\n") + 1, exc.position - before.rfind("\n"))
        raise error(f"{where}: the {what} holds the control character U+{int(exc.character):04X}, which YAML does not "
                    "allow", "remove it (it is often pasted in by accident; an editor can show it).") from None
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Where(file, mark.line + 1, mark.column + 1) if mark else Where(file, 1, 1)
        _refuse_tabs(text, file, error, only_lines={where.line - 1, where.line})
        raise error(f"{where}: not valid YAML: {exc.problem or exc.context}",
                    "fix the indentation or quoting there (YAML is indentation-sensitive).") from None
    finally:
        loader.dispose()
    if node is None:
        raise error(f"{Where(file, 1, 1)}: the {what} holds no YAML data (only comments or blank lines)",
                    f"write the {what}'s content.")
    _refuse_tabs(text, file, error, blocks=_block_scalar_lines(node))
    return _Builder(text, file, error, loader).build(node)


def _refuse_tabs(text: str, file: str, error: type[LabkitError], *, only_lines: Collection[int] | None = None,
                 blocks: Collection[int] = ()) -> None:
    """Refuse a tab in the indentation of a line (of ``only_lines`` when given; never inside ``blocks``,
    the lines of literal and folded text, where a tab is text)."""
    for number, line in enumerate(text.splitlines(), 1):
        if (only_lines is not None and number not in only_lines) or number in blocks:
            continue
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent and line.strip():
            raise error(f"{Where(file, number, indent.index(chr(9)) + 1)}: a tab in the indentation; YAML "
                        "indents with spaces only", "replace the tab with spaces (most editors can show tabs).")


def _block_scalar_lines(node: yaml.Node) -> set[int]:
    """The 1-based line numbers inside literal (``|``) and folded (``>``) scalars of ``node``."""
    lines: set[int] = set()
    stack, seen = [node], set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, yaml.ScalarNode):
            if current.style in ("|", ">"):
                lines.update(range(current.start_mark.line + 2, current.end_mark.line + 2))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, yaml.MappingNode):
            stack.extend(v for pair in current.value for v in pair)
    return lines


class _Builder:
    """Turns a composed node tree into Located data (one object per node, so an alias costs nothing)."""

    def __init__(self, text: str, file: str, error: type[LabkitError], loader: yaml.SafeLoader) -> None:
        self.text, self.file, self.error, self.loader = text, file, error, loader
        self.built: dict[int, Any] = {}
        self.open: set[int] = set()

    def where(self, node: yaml.Node) -> Where:
        return Where(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def source(self, node: yaml.Node) -> str:
        return self.text[node.start_mark.index:node.end_mark.index]

    def build(self, node: yaml.Node) -> Any:
        if id(node) in self.built:
            return self.built[id(node)]
        if id(node) in self.open:
            raise self.error(f"{self.where(node)}: an alias (*name) that contains itself",
                             "give the value itself instead of the alias.")
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                value: Any = self.mapping(node)
            elif isinstance(node, yaml.SequenceNode):
                value = self.sequence(node)
            else:
                value = self.scalar(node)
        finally:
            self.open.discard(id(node))
        self.built[id(node)] = value
        return value

    def scalar(self, node: yaml.Node) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise self.error(f"{self.where(node)}: {exc.problem}", "write the value as plain text, quoted.") from None

    def sequence(self, node: yaml.SequenceNode) -> LocatedList:
        out = LocatedList(self.build(item) for item in node.value)
        out.where = self.where(node)
        out.item_where = [self.where(item) for item in node.value]
        out.source = [self.source(item) for item in node.value]
        return out

    def mapping(self, node: yaml.MappingNode) -> Located:
        own = {id(key) for key, _ in node.value}  # before flattening: the keys written in this mapping
        try:
            self.loader.flatten_mapping(node)  # merge keys (<<: *defaults) become ordinary keys
        except yaml.constructor.ConstructorError as exc:
            raise self.error(f"{self.where(node)}: {exc.problem}", "merge (<<) only mappings.") from None
        out = Located.empty(self.where(node))
        written: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error(f"{self.where(key_node)}: a key that is a list or a mapping",
                                 "a key is one word or phrase; write it as text.")
            key = str(key_node.value)
            if key in written and id(key_node) in own:
                raise self.error(f"{self.where(key_node)}: the key '{key}' is given twice in one mapping "
                                 f"(first at line {out.key_where[key].line})",
                                 "keep one of them; YAML would silently keep only the last.")
            if id(key_node) in own:
                written.add(key)
            out[key] = self.build(value_node)
            out.key_where[key] = self.where(key_node)
            out.value_where[key] = self.where(value_node)
            out.source[key] = self.source(value_node)
        return out


def refuse_scalar(value: Any, where: Where, source: str, what: str, error: type[LabkitError] = LabkitError,
                  form: str = "- {}") -> None:
    """Refuse a boolean, number, date or null where text is expected (a list or mapping is left to the
    caller's own message), naming what YAML read and how to quote it."""
    if not isinstance(value, str | list | dict):
        expect_text(value, where, source, what, error, form)
