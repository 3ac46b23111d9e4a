"""README.md stays a front page a newcomer reads in minutes, and no link of the documentation leads nowhere.

The front page says what the kit is, the two commands, where a learner starts (the course map) and what the kit
measured, and links to docs/ for the rest. Every relative link in README.md and docs/*.md must name a file of the
repository, and a link to a heading of a Markdown file must name a heading that file has (GitHub's anchors).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MOST_LINES = 150
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def prose(path: Path) -> str:
    """The page without its fenced code blocks (a '# comment' there is no heading, a '](' no link)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces as hyphens, -1 on a
    repeat."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", prose(path), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def test_the_readme_is_short_and_names_the_two_commands_and_the_course_map() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= MOST_LINES, f"README.md has {lines} lines; move reference material to docs/ (at most {MOST_LINES})"
    for command in ("make experiment", "make test", "make lab", "labkit check 01a"):
        assert command in text, f"README.md no longer says {command!r}"
    assert "](docs/course.md)" in text, "README.md must link the course map, docs/course.md"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    wrong = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        name, _, anchor = target.partition("#")
        linked = (page.parent / name).resolve() if name else page
        if not linked.exists():
            wrong.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            wrong.append(f"{target} (no such heading in {linked.relative_to(ROOT)})")
    assert not wrong, f"{page.relative_to(ROOT)}: {wrong}"
