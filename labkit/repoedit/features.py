"""The code machine's optional features, each declared once: its name, what it does, and where it acts.

An arm is the machine plus a set of these names (validated when the arm is built), and the ablation arms
are generated from this table, one per feature. A run records its features in its params, so
``labkit replay`` and a resumed run see which contract the model was held to.

The machine reads a feature through :meth:`FeatureSet.on`, by its declared object or its name; an
unknown name is a :class:`~labkit.core.errors.LabkitError` that lists the known ones, never "off".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from labkit.compare.features import Feature, FeatureTable

HOOKS = ("plan", "grammar", "prompt", "check", "after_answer", "format", "tests")
"""Where a feature acts: who plans, the grammar the answer is held to, what the prompt shows, what the
machine refuses, what it does after a test run, which edit format it asks for, which tests it runs."""


@dataclass(frozen=True)
class CodeFeature(Feature):
    """A feature of the code machine: ``hook`` says where it acts; ``edit_format`` the format it selects."""

    hook: str = "prompt"
    edit_format: str | None = None


CODE_PLAN = CodeFeature("code_plan", "a project with one source file is planned by code: no model call, "
                        "no wrong file", "plan")
CLOSED_PLAN = CodeFeature("closed_plan", "the plan may name only the index's source files (an enum in the "
                          "grammar)", "grammar")
PLAN_REFERENCES = CodeFeature("plan_references", "the plan prompt says which other files' definitions each "
                              "file uses (a caller of a renamed method must change too)", "prompt")
PLAN_EXAMPLE = CodeFeature("plan_example", "the plan prompt shows one worked example (on a project that is "
                           "no task's)", "prompt")
FIRST_FAILURE = CodeFeature("first_failure", "the first edit is shown the failing tests' output, not only "
                            "their names", "prompt")
DEFINITION_EDIT = CodeFeature("definition_edit", "an edit replaces whole definitions named from the file's "
                              "own list (ast), the one the failure points at named first", "format",
                              edit_format="definitions")
TOLERANT_MATCH = CodeFeature("tolerant_match", "a search text is found up to quote style and indentation; "
                             "each normalisation is recorded with the edit", "check")
BLAMED_SKIP = CodeFeature("blamed_skip", "a 'skip' of the file the failure points at is refused, with the "
                          "reason", "check")
FOLLOW_TRACEBACK = CodeFeature("follow_traceback", "a red test run whose traceback blames a source file "
                               "outside the plan adds that file to the plan (recorded) and fixes it, instead "
                               "of rolling back", "after_answer")
REPAIR_FEEDBACK = CodeFeature("repair_feedback", "a retry is shown its previous answer and what became of it "
                              "(refusal or test output)", "prompt")
SAMPLED_REPAIR = CodeFeature("sampled_repair", "after a greedy answer failed, the next ones are sampled "
                             "(temperature and seed recorded), so a retry is not the same answer again",
                             "grammar")
TRACEBACK_PLAN = CodeFeature("traceback_plan", "when the index is too long for the plan prompt, the plan "
                              "chooses among the files the failing output names: the traceback's source files, "
                              "then the files defining the names it uses, then what the failing tests import",
                              "plan")
DEFINITION_VIEW = CodeFeature("definition_view", "a file too long to show is shown as an excerpt: the "
                              "definitions the failure points at and the ones they call; only those may be "
                              "rewritten", "prompt")
NO_REPEAT = CodeFeature("no_repeat", "an answer identical to one already tried for the file is refused "
                        "('repeated'), and after a repeat or a no-change answer the next prompt leaves the old "
                        "answer out and samples hotter", "check")
CHECKPOINT = CodeFeature("checkpoint", "a test run with fewer failures than any before (and none new) is "
                         "kept as a checkpoint; a repair that ends worse or spends its edit budget goes back to "
                         "the checkpoint and tries again while fix rounds are left, not to the baseline",
                         "after_answer")
SHORT_DOCSTRINGS = CodeFeature("short_docstrings", "an excerpt shows a docstring of more than one line as "
                               "'\"\"\"...\"\"\"', and a rewritten definition keeps that docstring: the answer is "
                               "code, not copied (or guessed) prose", "prompt")
UNCHANGED_MOVES_ON = CodeFeature("unchanged_moves_on", "an answer that leaves a planned file as it was is taken "
                                 "as a skip of it when the plan holds another file and the failure does not point "
                                 "at this one: the model saw no bug there, and more tries would spend the edit "
                                 "budget on it", "check")
RELEVANT_TESTS = CodeFeature("relevant_tests", "in a suite of many test files, a check first runs only the "
                             "files of the failing tests; the whole suite runs once they pass", "tests")

FEATURES: tuple[CodeFeature, ...] = (CODE_PLAN, CLOSED_PLAN, PLAN_REFERENCES, PLAN_EXAMPLE, FIRST_FAILURE,
                                     DEFINITION_EDIT, TOLERANT_MATCH, BLAMED_SKIP, FOLLOW_TRACEBACK,
                                     REPAIR_FEEDBACK, SAMPLED_REPAIR, TRACEBACK_PLAN, DEFINITION_VIEW,
                                     NO_REPEAT, CHECKPOINT, RELEVANT_TESTS, SHORT_DOCSTRINGS, UNCHANGED_MOVES_ON)
TABLE = FeatureTable("code machine", FEATURES)
ALL: frozenset[str] = TABLE.all
checked = TABLE.checked
about = TABLE.about
DEFAULT_FORMAT = "search_replace"


@dataclass(frozen=True)
class FeatureSet:
    """The features one run has on, checked against :data:`FEATURES` when it is built."""

    names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, names: Iterable[str]) -> FeatureSet:
        return cls(checked(names))

    def on(self, feature: CodeFeature | str) -> bool:
        """Whether ``feature`` is on; a name that is not declared is refused, not read as off."""
        name = feature.name if isinstance(feature, Feature) else feature
        checked([name])
        return name in self.names

    def edit_format(self) -> str:
        """The edit format the features ask for (the default one if none selects another)."""
        chosen = [f.edit_format for f in FEATURES if f.edit_format and f.name in self.names]
        return chosen[0] if chosen else DEFAULT_FORMAT

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self.names))

    def __bool__(self) -> bool:
        return bool(self.names)
