"""Seeded bugs (labkit.repoedit.seeded): one-expression mutants inside one definition's span, kept only when
the project's own tests, run for real in the sandbox, catch them; the bug report never shows the mutation."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from labkit.repoedit.seeded import OPERATORS, bug_report, definition_mutants, keep, machine_independent, sample
from labkit.repoedit.workspace import Workspace

SOURCE = '''"""Prices — with a note in UTF-8: naïve café."""


class Cart:
    def total(self, items, discount=False):
        s = sum(p * n for p, n in items)
        if discount and s > 100:
            return s - 10
        return s

    def count(self, items):
        def one(item):
            return item[1]
        return max(0, sum(one(i) for i in items))


def clamp(x, low, high):
    moved = False
    while x < low:
        x = x + 1
    return min(high, x)
'''


def test_every_operator_changes_one_span_of_one_definition_and_the_file_still_parses() -> None:
    found = definition_mutants(SOURCE, "prices.py")
    assert {m.operator for m in found} == set(OPERATORS)
    for m in found:
        ast.parse(m.text)
        assert m.text != SOURCE and m.original in SOURCE and m.mutated in m.text
        before, after = SOURCE.splitlines(), m.text.splitlines()
        k, j, at = m.original.count("\n") + 1, m.mutated.count("\n") + 1, m.line - 1
        assert "\n".join(before[at:at + k]) == m.original and "\n".join(after[at:at + j]) == m.mutated
        assert before[:at] == after[:at] and before[at + k:] == after[at + j:]  # nothing else in the file changed
    by = {(m.definition, m.operator, m.mutated.strip()) for m in found}
    assert ("Cart.total", "comparison", "if discount and s >= 100:") in by
    assert ("Cart.total", "condition_dropped", "if discount:") in by
    assert ("Cart.total", "condition_negated", "if not (discount and s > 100):") in by
    assert ("Cart.total", "operator", "return s + 10") in by
    assert ("Cart.total", "return_value", "return None") in by
    assert ("Cart.count", "arguments_swapped", "return max(sum(one(i) for i in items), 0)") in by
    assert ("Cart.count.one", "constant", "return item[2]") in by  # a nested definition is its own
    assert ("clamp", "boolean", "moved = True") in by
    assert ("clamp", "constant", "x = x + 2") in by and ("clamp", "constant", "x = x + 0") in by
    assert not any(m.definition == "Cart.count" and "item[" in m.mutated for m in found)


def test_sampling_spreads_over_definitions_and_repeats_with_its_seed() -> None:
    found = definition_mutants(SOURCE, "prices.py")
    first = sample(found, 4, seed=3)
    assert len({m.definition for m in first}) == 4 and first == sample(found, 4, seed=3)


@pytest.fixture(scope="module")
def wordcount(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    import shutil

    root = tmp_path_factory.mktemp("wordcount")
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "repos" / "wordcount", root, dirs_exist_ok=True)
    words = root / "words.py"
    words.write_text(words.read_text().replace('split(" ")', "split()"), encoding="utf-8")  # the known fix
    with Workspace(root) as ws:
        original = ws.run_tests()
    assert original.outcome == "passed"
    return root, original


def test_a_mutant_the_tests_catch_is_kept_and_its_report_names_the_tests_not_the_change(wordcount) -> None:
    root, original = wordcount
    text = (root / "words.py").read_text()
    mutant = next(m for m in definition_mutants(text, "words.py")
                  if m.definition == "longest_word" and m.operator == "condition_negated")
    verdict = keep(mutant, root, original)
    assert verdict.kept and verdict.broken and set(verdict.broken) <= set(original.passed)
    report = bug_report(verdict, "wordcount")
    assert verdict.broken[0] in report
    assert mutant.mutated.strip() not in report and mutant.original.strip() not in report
    assert (root / "words.py").read_text() == text  # the mutant ran in a copy


def test_a_mutant_no_test_catches_or_too_many_tests_catch_is_dropped(wordcount) -> None:
    root, original = wordcount
    text = (root / "words.py").read_text()
    mutants = definition_mutants(text, "words.py")
    # `len(word) > len(best)` -> `>=`: a tie goes to the later word, which no test of this project has
    silent = next(m for m in mutants if m.definition == "longest_word" and m.operator == "comparison")
    assert keep(silent, root, original).why == "no test catches it"
    loud = next(m for m in mutants if m.definition == "count_words" and m.operator == "return_value"
                and "len" in m.original)
    verdict = keep(loud, root, original, bound=0)
    assert not verdict.kept and "more than 0" in verdict.why


def test_a_report_leaves_out_what_differs_from_machine_to_machine() -> None:
    message = ("AssertionError: assert <Token 'x' at 0x7F3A2B1C4D50> == None\n"
               "FileNotFoundError: '/tmp/pytest-of-root/pytest-3/test_dump0/out.txt'\n"
               "assert 0x7f == 127")
    assert machine_independent(message) == ("AssertionError: assert <Token 'x' at 0x...> == None\n"
                                            "FileNotFoundError: '<tmp>/test_dump0/out.txt'\n"
                                            "assert 0x7f == 127")
