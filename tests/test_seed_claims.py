"""Every lesson that teaches a seed states the seed's claim beside the kit's figure, and the kit's figure is computed.

Each notebook below has a section "What the seed claimed, and what the kit measured", before its quiz, naming the
seed it draws on. The section's prose may quote the seed's own figures and setting (declared here, per notebook)
but no other number: every figure of the kit's comes out of a code cell of the section, computed from the
recordings or from a run the notebook makes. Notebook 06's "What it means" is held to the same rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
HEADING = re.compile(r"(?m)^# #+ .*What the seed claimed")

# notebook: (the seed it draws on, as the section names it, and the seed's own figures and setting its prose may
# quote). Notebook 05's section, written first, names its seed as "the seed material".
SEED_000 = ("2/10", "10/10", "~13.8 GB", "7–13B", "4 or 5 bits", "12 GB")
SEEDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "02_failure_traces": ("(004)", ()),
    "03_invariants_and_replay": ("(004)", ()),
    "04_stop_recover_redact": ("(004)", ()),
    "05_dialog_machines": ("The seed material", ("1.03",)),
    "06_small_model_comparison": ("(000)", SEED_000),
    "08_machines_in_layers": ("(001)", ()),
    "09_editing_code": ("(000)", SEED_000),
}
# Other sections held to the rule: (notebook, a words of the heading).
ALSO = [("06_small_model_comparison", "What it means")]

# Numbers that are names, not figures: seed ids, a section's own number, references to sections, notebooks,
# exercises and issues, model names (270M, 1.5B), and the level of an interval.
NOT_FIGURES = [r"^# #+ \d+\.", r"\b00[0-4]\b", r"§\d+", r"\bissue \d+", r"\bnotebooks? \d\d\b",
               r"\bexercises? \d\d[a-z]?\b", r"\b\d+(\.\d+)?[BM]\b", r"\b95%",
               r"\b[a-z_]+_[a-z]+\d+\b"]  # a name with a digit in it (the arm machine_plus_next2) is no figure


def cells(path: Path) -> list[tuple[str, str]]:
    """The py:percent source as (kind, text) cells, kind "markdown" or "code"."""
    out = []
    for chunk in re.split(r"(?m)^(?=# %%)", path.read_text(encoding="utf-8")):
        if chunk.startswith("# %%"):
            header, _, body = chunk.partition("\n")
            out.append(("markdown" if "[markdown]" in header else "code", body))
    return out


def section(path: Path, words: str) -> list[tuple[str, str]]:
    """The cells from the markdown cell whose heading holds ``words`` up to the next heading."""
    found = cells(path)
    start = next((i for i, (kind, text) in enumerate(found)
                  if kind == "markdown" and re.search(rf"(?m)^# #+ .*{re.escape(words)}", text)), None)
    assert start is not None, f"{path.name}: no heading with {words!r}"
    out = [found[start]]
    for kind, text in found[start + 1:]:
        if kind == "markdown" and re.search(r"(?m)^# #+ ", text):
            break
        out.append((kind, text))
    return out


def typed_numbers(markdown: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """The numbers left in Markdown once the allowed figures and the names in :data:`NOT_FIGURES` are taken out."""
    for figure in allowed:
        markdown = markdown.replace(figure, " ")
    for pattern in NOT_FIGURES:
        markdown = re.sub(pattern, " ", markdown, flags=re.MULTILINE | re.IGNORECASE)
    return re.findall(r"\d+(?:[.,/]\d+)*", markdown)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_the_seed_claim_section_names_its_seed_comes_before_the_quiz_and_computes_the_kits_figures(name: str) -> None:
    seed, allowed = SEEDS[name]
    path = NOTEBOOKS / f"{name}.py"
    text = path.read_text(encoding="utf-8")
    heading = HEADING.search(text)
    assert heading, f"{name}: no section 'What the seed claimed, and what the kit measured'"
    assert heading.start() < text.index("Wrap-up quiz"), f"{name}: the seed's claim comes after the quiz"
    cells_ = section(path, "What the seed claimed")
    prose = "\n".join(body for kind, body in cells_ if kind == "markdown")
    assert seed in prose, f"{name}: the section does not name its seed as {seed}"
    for figure in allowed:
        assert figure in prose, f"{name}: the seed's figure {figure!r} is declared here but not stated"
    assert any(kind == "code" and body.strip() for kind, body in cells_), f"{name}: no code cell computes a figure"
    assert typed_numbers(prose, allowed) == [], f"{name}: numbers typed into the seed section's prose"


@pytest.mark.parametrize(("name", "words"), ALSO)
def test_other_sections_held_to_the_rule_type_no_figure(name: str, words: str) -> None:
    cells_ = section(NOTEBOOKS / f"{name}.py", words)
    prose = "\n".join(body for kind, body in cells_ if kind == "markdown")
    assert any(kind == "code" for kind, _ in cells_)
    assert typed_numbers(prose) == [], f"{name}, {words!r}: numbers typed into the prose"


def test_the_check_finds_a_typed_figure_and_lets_the_seeds_own_pass() -> None:
    typed = "# and 23 against 4 with the 1.5B chat model (20 to 1, p ≈ 0.00002); the seed's 2/10 → 10/10"
    assert typed_numbers(typed, ("2/10", "10/10")) == ["23", "4", "20", "1", "0.00002"]
    assert typed_numbers("# ## 9. What the seed (004) claimed, with a 270M model (§8, issue 24)") == []
    assert typed_numbers("# `machine_plus_next2` adhered in 15/30") == ["15/30"]
