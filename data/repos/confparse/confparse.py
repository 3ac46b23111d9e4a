"""Reading ``key = value`` configuration text with ``[section]`` headers and ``#`` comments."""


def parse_config(text: str, strip_inline_comments: bool = False) -> dict[str, dict[str, str]]:
    """Sections of key/value pairs; keys before any header go to section ``""``.

    Blank lines and lines starting with ``#`` are skipped. With ``strip_inline_comments`` (the
    default) a ``#`` after a value ends it: ``port = 80  # http`` gives ``"80"``.
    """
    sections: dict[str, dict[str, str]] = {"": {}}
    current = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
            sections.setdefault(current, {})
            continue
        if "=" not in line:
            raise ValueError(f"line {number}: expected 'key = value', got {raw!r}")
        key, value = line.split("=", 1)
        if strip_inline_comments and "#" in value:
            value = value.split("#", 1)[0]
        sections[current][key.strip()] = value.strip()
    return sections
