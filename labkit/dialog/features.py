"""The dialog machine's optional features, each one declaration that an arm switches on and the ablation off.

The first recording (``data/dialog/runs``) showed where a small model failed under the machine
(issue 24): no example answer in the step prompt, empty ``results`` for a ``next`` refused by the
``needs`` check, a re-ask that repeats the same greedy answer, values given early asked for again,
a ``cancel`` on the first message, corrections the script had no way to record. Each feature below
answers one of those failures. Because every feature is a name in :data:`FEATURES`, an arm is the
machine plus a set of names (:mod:`labkit.dialog.arms`), and the ablation arms are generated from
this table (the full set minus one feature each).

Two rules inside features have ablations of their own (:data:`PARTS`, ``machine_plus_no_<part>``): the re-ask
that may not repeat a refused move (inside ``grounded_values``) and the stay rule (inside ``results_grammar``).

A conversation records its features in its ``RunStarted`` params, so a replayed or resumed log
says which contract the model was held to. The machine with no feature is the machine as first
recorded: its prompts and schemas are unchanged, so the old cassettes still replay.
"""

from __future__ import annotations

from labkit.compare.features import Feature, FeatureTable, Part

FEATURES: tuple[Feature, ...] = (
    Feature("step_example", "every step prompt shows one worked example answer (the step's declared example, "
                            "else one built from its schema), on a conversation that is no user's"),
    Feature("results_grammar", "the grammar gives each signal its own results schema: the values a signal needs "
                               "are required, typed and non-empty, so an empty result for a 'next' cannot be "
                               "decoded at all"),
    Feature("vars_memory", "the model may record values the user gives for later steps (a VariableChanged by "
                           "'memory'); a step entered with its needs already known moves on without asking"),
    Feature("cancel_confirm", "a 'cancel' first asks the user to confirm (CancelRequested); only a second cancel "
                              "ends the conversation, anything else withdraws it"),
    Feature("corrections", "the scenario's declared correction signal changes an earlier variable through a "
                           "VariableChanged by 'correction', without moving"),
    Feature("grounded_values", "a free-text value whose words the user never said is dropped (ValuesDropped) and "
                               "a move that needed it stays in the step (the model copied examples into "
                               "results: 'me and my accountant')"),
    Feature("step_question", "while a step still needs something, the model's questions are replaced by the "
                             "step's declared question (the model asked the last step's question); a message "
                             "that asks nothing stays as it is, unless the model moved into a step that still "
                             "needs something"),
    Feature("carry_over", "a message that gave the step nothing new is read again by the step the machine moved "
                          "to, in the same turn: when the value a move recorded holds words of earlier messages "
                          "but not of the latest one (the model recorded the last answer one turn late), the "
                          "latest message is the next step's (one more call)"),
    Feature("differing_reask", "a re-ask names the violation, shows the previous answer and says what to change, "
                               "so greedy decoding does not repeat itself"),
    Feature("results_first", "the answer writes its results before its signal and message, so a value the user "
                             "gave decides the move (on the test users the model chose 'stay' first and then "
                             "could not write the issue the support step needed: 9 of 15 never recorded it); a "
                             "value a move on needs is then written only under a signal that needs it"),
    Feature("more_examples", "the step prompt shows the scenario's further worked answers after the step's example: "
                             "a message that gives later steps' values too, split into each of them, and a "
                             "correction (on the dev users the model wrote a whole message holding four values "
                             "as the issue, and took 2 of the 4 dev users' corrections)"),
    Feature("split_values", "a free-text value whose later part holds another variable's declared cue (the "
                            "scenario's cues: 'for me' for the users, 'Friday' for the deadline) is refused once, "
                            "naming each part and whose it is, for the re-ask to split them (on the dev users, with "
                            "the worked example of a split in the prompt, the model still wrote 'a tool that plans "
                            "my running training, just for me' as the goal; labkit.dialog.splitting). Measured on "
                            "the dev users: the re-ask wrote the same results again in 4 of 4"),
    Feature("split_required", "with split_values: the re-ask's grammar requires each named variable that is still "
                              "unknown, non-empty and first in results, so the model writes the other variable's "
                              "own value before the one it was mixed into (a refusal alone moved nothing: the "
                              "greedy re-ask repeated its answer in 4 of 4 on the dev users)"),
    Feature("split_cut", "with split_values: code cuts the named parts out of the value (ValuesCut) and keeps the "
                         "answer; only while a variable named is still unknown is the model asked again, for those "
                         "values alone, merged into the cut answer (on the dev users the required re-ask wrote the "
                         "other variable's value and then stayed, leaving the step's own value unwritten)"),
    Feature("move_cues", "a signal the scenario declares move_cues for is offered by the grammar only when the "
                         "user's message holds one of them (on the dev users 'Hmm, wait, not yet.' at the support "
                         "bot's confirmation was read as 'back', and the bot asked for the email again)"),
    Feature("correction_cues", "with corrections: a message holding one of the correction's declared cues and the "
                               "cue of exactly one earlier value (the scenario's cues) is answered under the "
                               "correction signal alone, that value required (on the dev users 'Sorry, not the whole "
                               "team, only the two team leads will use it.' was written as a must-have)"),
    Feature("correction_question", "with step_question: a correction that changed a value ends with the step's "
                                   "declared question, as a move into a step that still needs something does (on "
                                   "the dev users, with move_cues, 'Email updated to lena@example.com.' ended the "
                                   "turn at the confirmation and asked nothing)"),
    Feature("request_question", "with step_question: a sentence that opens as a request ('Please provide ...', "
                                "'Tell me ...') is a question too, replaced by the step's declared one (on the dev "
                                "users, with move_cues, the model at the confirmation wrote 'Please provide the email "
                                "address you want to use for the ticket.' for an email it had, and never asked about "
                                "filing)"),
    Feature("correction_unseen", "with correction_cues: the prompt of a correction the cues force shows the "
                                 "corrected variable as being corrected, not its old value, and leaves out the "
                                 "summary of the step that recorded it (on the dev users, forced to correct the "
                                 "users, the model wrote back 'my team at work', the value the prompt showed)"),
)
CANDIDATES: frozenset[str] = frozenset({"results_first", "more_examples", "split_values", "split_required",
                                        "split_cut", "move_cues", "correction_cues", "correction_question",
                                        "request_question", "correction_unseen"})
"""Features designed on the dev users *after* the test users were recorded with ``machine_plus``:
``results_first`` is in the arm ``machine_plus_next``, it and ``more_examples`` are in ``machine_plus_next2``,
``split_values`` joins in ``machine_plus_next3``, ``split_required`` in ``machine_plus_next4``, ``split_cut`` in
``machine_plus_next5``, ``move_cues`` in ``machine_plus_next6``, ``correction_cues`` in ``machine_plus_next7``,
``correction_question`` in ``machine_plus_next8``, ``request_question`` in ``machine_plus_next9`` and
``correction_unseen`` in ``machine_plus_next10`` (:data:`labkit.dialog.arms.ROUNDS`); they join
``machine_plus`` when its test users are recorded again (a recording names the features its arm ran with, so
adding one to a recorded arm would make its recordings unreplayable)."""
PARTS: tuple[Part, ...] = (
    Part("refused_move_barred", "grounded_values", "the re-ask after an ungrounded move may not take that move "
                                                   "again (live, on the dev users, 3 of 3 re-asks had repeated it)"),
    Part("stay_keeps_needs", "results_grammar", "a signal that stays in the step cannot write a value that a move on "
                                                "needs (live, the model recorded the deadline, stayed, and asked "
                                                "for it again)"),
)
TABLE = FeatureTable("dialog machine", FEATURES, PARTS)
ALL: frozenset[str] = TABLE.all
RECORDED: frozenset[str] = ALL - CANDIDATES
"""``machine_plus``: every feature but the candidates (what its recordings ran with)."""
checked = TABLE.checked
about = TABLE.about
checked_parts = TABLE.checked_parts
