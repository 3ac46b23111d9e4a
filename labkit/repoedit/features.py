"""The machine's optional features, each one declaration that an arm switches on and the ablation switches off.

The first recorded comparison showed where a small model failed under the machine, and each feature
answers one of those failures. Because every feature is a name in :data:`FEATURES`, an arm is the
machine plus a set of names, and the ablation arms are generated from this table (the full set
minus one feature each), so the report can say how many tasks each feature buys.

A run records its features in its params: ``labkit replay`` and a resumed run see which contract the
model was held to. The machine with no feature is the machine as first recorded (its prompts are
unchanged, so the old recordings still replay).
"""

from __future__ import annotations

from labkit.compare.features import Feature, FeatureTable

FEATURES: tuple[Feature, ...] = (
    Feature("code_plan", "a project with one source file is planned by code: no model call, no wrong file"),
    Feature("closed_plan", "the plan may name only the index's source files (an enum in the grammar)"),
    Feature("plan_references", "the plan prompt says which other files' definitions each file uses (a caller "
                               "of a renamed method must change too)"),
    Feature("plan_example", "the plan prompt shows one worked example (on a project that is no task's)"),
    Feature("first_failure", "the first edit is shown the failing tests' output, not only their names"),
    Feature("definition_edit", "an edit replaces whole definitions named from the file's own list (ast), "
                               "the one the failure points at named first"),
    Feature("tolerant_match", "a search text is found up to quote style and indentation; each normalisation "
                              "is recorded with the edit"),
    Feature("blamed_skip", "a 'skip' of the file the failure points at is refused, with the reason"),
    Feature("follow_traceback", "a red test run whose traceback blames a source file outside the plan adds that "
                                "file to the plan (recorded) and fixes it, instead of rolling back"),
    Feature("repair_feedback", "a retry is shown its previous answer and what became of it (refusal or test output)"),
    Feature("sampled_repair", "after a greedy answer failed, the next ones are sampled (temperature and seed "
                              "recorded), so a retry is not the same answer again"),
)
TABLE = FeatureTable("machine", FEATURES)
ALL: frozenset[str] = TABLE.all
checked = TABLE.checked
about = TABLE.about
