"""The dialog machine's optional features: each declared once, with what it does and the hooks it acts in.

An arm is the machine plus a set of these names (:mod:`labkit.dialog.arms`); the ablation arms are generated
from this table. An undeclared name is an error wherever it is used. A :class:`~labkit.compare.features.Part`
is one rule inside a feature that an ablation switches off while the feature stays on; ``RunStarted`` records
the features and the parts off, so a log says which contract the model was held to.
"""

from __future__ import annotations

from labkit.compare.features import Feature, FeatureTable, Part

HOOKS: dict[str, str] = {
    "contract": "the step the model answers under (its results and signals)",
    "schema": "the grammar the answer is decoded under",
    "prompt": "the step prompt",
    "check": "the check of a decoded answer (a refusal leads to the one re-ask)",
    "reask": "the corrective re-ask's prompt",
    "results": "how the answer's values are recorded",
    "after_answer": "what the bot says and where it moves after a kept answer",
}
"""Where a feature acts in :class:`~labkit.dialog.engine.DialogBot`."""

FEATURES: tuple[Feature, ...] = (
    Feature("step_example", "the step prompt shows one worked example answer (declared, else built from the "
                            "step's schema)", ("prompt", "reask")),
    Feature("results_grammar", "each signal gets its own results schema: the values it needs are required, typed "
                               "and non-empty", ("schema",)),
    Feature("vars_memory", "the model may record values given for later steps; a step entered with its needs "
                           "known moves on without asking", ("contract", "prompt", "results", "after_answer")),
    Feature("cancel_confirm", "a 'cancel' first asks the user to confirm; only a second cancel ends the "
                              "conversation", ("after_answer",)),
    Feature("corrections", "the scenario's correction signal changes an earlier value without moving",
            ("contract", "schema", "check", "results", "after_answer")),
    Feature("grounded_values", "a free-text value holding words the user never said is dropped; a move that "
                               "needed it is refused once", ("check",)),
    Feature("step_question", "while a step still needs something, the model's questions are replaced by the "
                             "step's declared question", ("after_answer",)),
    Feature("carry_over", "a message that gave the step nothing new is read again, in the same turn, by the step "
                          "the machine moved to", ("after_answer",)),
    Feature("differing_reask", "a re-ask names the violation, shows the previous answer and says what to change",
            ("reask",)),
    Feature("results_first", "the answer writes its results before its signal and message, and a value a move "
                             "needs is written only under a signal that needs it", ("schema", "prompt")),
    Feature("more_examples", "the step prompt also shows the scenario's further worked answers (several values "
                             "split, a correction)", ("prompt",)),
    Feature("split_values", "a free-text value whose later part holds another variable's declared cue is refused "
                            "once, naming each part (labkit.dialog.splitting)", ("check",)),
    Feature("split_required", "with split_values: the re-ask's grammar requires the named unknown variables, "
                              "first in results", ("schema",)),
    Feature("split_cut", "with split_values: code cuts the named parts out of the value and asks again only for "
                         "the values still unknown", ("check",)),
    Feature("move_cues", "a signal with declared move_cues is offered only when the user's message holds one of "
                         "them", ("schema",)),
    Feature("correction_cues", "with corrections: a message holding a correction cue and the cue of exactly one "
                               "earlier value is answered under the correction alone", ("schema",)),
    Feature("correction_question", "with step_question: a correction that changed a value ends with the step's "
                                   "declared question", ("after_answer",)),
    Feature("request_question", "with step_question: a sentence that opens with one of the scenario's "
                                "request_openers ('Please provide ...') counts as a question", ("after_answer",)),
    Feature("correction_unseen", "with correction_cues: a forced correction's prompt shows the corrected value as "
                                 "being corrected, not its old value", ("prompt",)),
)
PARTS: tuple[Part, ...] = (
    Part("refused_move_barred", "grounded_values", "the re-ask after an ungrounded move may not take that move "
                                                   "again"),
    Part("stay_keeps_needs", "results_grammar", "a signal that stays in the step cannot write a value that a move "
                                                "on needs"),
)
TABLE = FeatureTable("dialog machine", FEATURES, PARTS)
ALL: frozenset[str] = TABLE.all
checked = TABLE.checked
about = TABLE.about
checked_parts = TABLE.checked_parts
