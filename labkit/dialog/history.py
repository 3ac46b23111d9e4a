"""The dialog machine's design rounds as data: every arm a committed recording names, as it was recorded.

Used only to read recordings made under the old names (a ``dialog.json`` without ``arm_names: "content"``):
each recorded name is built here with the features it ran with and writes the ``arm`` it wrote then, so
its cassettes and event logs replay. New recordings name their arms by content (:mod:`labkit.dialog.arms`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from labkit.core.errors import LabkitError
from labkit.dialog.arms import ARMS, Arm
from labkit.dialog.features import ALL, FEATURES


@dataclass(frozen=True)
class Recorded:
    """One arm as a recording names it: how it is built, what it added, and the commit that first recorded it."""

    arm: Arm  # arm.name is the name as recorded
    added: str
    commit: str
    feature: str = ""  # a design round: the feature it added to the arm before it (``before``)
    before: str = ""
    label: str = ""  # a design round: its dev recording's label ("dev users, <label>")

    @property
    def name(self) -> str:
        return self.arm.name

    @property
    def suffix(self) -> str:
        """A design round's dev recording is ``runs_dev/<model><suffix>`` (``machine_plus_next2`` -> ``-next2``)."""
        return "-" + self.name.removeprefix("machine_plus_")


# the candidates: features designed on the dev users after machine_plus's test recording, one per round
_ROUNDS = (("machine_plus_next", "results_first", "candidates", "e07c73e"),
           ("machine_plus_next2", "more_examples", "both candidates", "7bd29a0"),
           ("machine_plus_next3", "split_values", "three candidates", "a592008"),
           ("machine_plus_next4", "split_required", "four candidates", "e38cca9"),
           ("machine_plus_next5", "split_cut", "five candidates", "c468e05"),
           ("machine_plus_next6", "move_cues", "six candidates", "d683148"),
           ("machine_plus_next7", "correction_cues", "seven candidates", "d683148"),
           ("machine_plus_next8", "correction_question", "eight candidates", "d683148"),
           ("machine_plus_next9", "request_question", "nine candidates", "1cb6bc9"),
           ("machine_plus_next10", "correction_unseen", "ten candidates", "6aacf28"))
PLUS: frozenset[str] = frozenset({"step_example", "results_grammar", "vars_memory", "cancel_confirm", "corrections",
                                  "grounded_values", "step_question", "carry_over", "differing_reask"})
"""``machine_plus``: the features its recordings ran with (named, so a feature added later never joins it)."""
# the ablation of machine_plus: (feature or part, the commit that first recorded its arm)
_ABLATED = {"step_example": "a6f6646", "results_grammar": "a6f6646", "vars_memory": "a6f6646",
            "cancel_confirm": "a6f6646", "corrections": "a6f6646", "grounded_values": "fadfdcc",
            "step_question": "fadfdcc", "carry_over": "fadfdcc", "differing_reask": "fadfdcc",
            "refused_move_barred": "fadfdcc", "stay_keeps_needs": "fadfdcc"}


def _rounds() -> tuple[Recorded, ...]:
    done, features, before = [], PLUS, "machine_plus"
    for name, feature, label, commit in _ROUNDS:
        features = features | {feature}
        done.append(Recorded(Arm(name, "machine", features), f"{before} + {feature}", commit, feature, before, label))
        before = name
    return tuple(done)


ROUNDS: tuple[Recorded, ...] = _rounds()
"""The design rounds on the dev users, in order: each round's arm is the one before plus one feature."""
TABLE: tuple[Recorded, ...] = (
    Recorded(Arm("machine", "machine", recorded_as=""), "the engine as first recorded: the step's own prompt, the "
             "four-field contract, one re-ask", "2c69b7b"),
    Recorded(Arm("prompt_only", "prompt_only", recorded_as=""), "the whole script in one prompt, no needs check",
             "2c69b7b"),
    Recorded(Arm("prompt_only_checked", "prompt_only", checked=True), "the prompt-only bot's claimed moves held "
             "to the script's moves and needs", "eec3c1b"),
    Recorded(Arm("machine_plus", "machine", PLUS), "the machine with " + ", ".join(f.name for f in FEATURES
                                                                                     if f.name in PLUS), "eec3c1b"),
    *(Recorded(Arm(f"machine_plus_no_{name}", "machine", PLUS - {name}) if name in ALL else
               Arm(f"machine_plus_no_{name}", "machine", PLUS, without=frozenset({name})),
               f"machine_plus without {name} (the ablation)", commit, name, "machine_plus")
      for name, commit in _ABLATED.items()),
    *ROUNDS,
)
"""Every arm name a committed recording holds, with how it was built."""
BY_NAME: dict[str, Recorded] = {r.name: r for r in TABLE}


def recorded_arm(name: str) -> Arm:
    """The arm a recording made under the old names calls ``name``, built as it was recorded."""
    found = BY_NAME.get(name)
    if found is None:
        raise LabkitError(f"no recorded dialog arm is called {name!r}",
                          f"a recording without arm_names 'content' names some of: {', '.join(BY_NAME)}.")
    return found.arm


def content_name(name: str) -> str | None:
    """Today's arm with the same contract as the recorded arm ``name`` (``machine_plus_next10`` -> ``machine``)."""
    old = recorded_arm(name)
    return next((a.name for a in ARMS if (a.bot, a.features, a.checked, a.without)
                 == (old.bot, old.features, old.checked, old.without)), None)


ROUND_OF: dict[str, Recorded] = {r.name: r for r in ROUNDS}
"""Each :data:`ROUNDS` arm by the name its recordings hold."""
T = TypeVar("T")


def label(name: str) -> str:
    """What a learner reads for the recorded arm ``name``: a :data:`ROUNDS` arm by the feature it added to the one
    before (``+ split_values``), so no round number reaches a notebook; any other arm as recorded."""
    found = ROUND_OF.get(name)
    return f"+ {found.feature}" if found else name


def without_rounds(arms: Mapping[str, T]) -> dict[str, T]:
    """``arms`` (anything keyed by recorded arm name) without the :data:`ROUNDS` arms, which
    :func:`labkit.dialog.ablation.round_rows` shows one by one."""
    return {name: value for name, value in arms.items() if name not in ROUND_OF}


ABLATIONS: tuple[tuple[str, str, str], ...] = tuple((r.feature, r.before, r.name) if not r.label
                                                    else (r.feature, r.name, r.before) for r in TABLE if r.feature)
"""(feature, arm with it, arm without it) for every recorded pair that differs in one feature or part."""
PAIRS: tuple[tuple[str, str], ...] = (("machine", "prompt_only"), ("machine_plus", "prompt_only_checked"),
                                      ("machine_plus", "machine"),
                                      *((r.name, p) for r in ROUNDS for p in (r.before, "prompt_only_checked")))
"""The paired comparisons a report of an old-name recording makes, where it holds both arms."""
HEADLINE: tuple[str, str] = ("machine_plus", "prompt_only_checked")
"""The two arms an old-name test recording's headline compares."""


def rounds_table() -> str:
    """The recorded arms as a Markdown table (docs/results.md shows it, generated)."""
    lines = ["| arm as recorded | today's arm | features | what it added | first recorded in |",
             "|---|---|---|---|---|"]
    for r in TABLE:
        a = r.arm
        features = ("(prompt-only" + (", checked)" if a.checked else ")") if a.bot == "prompt_only"
                    else "none" if not a.features else "all" if a.features == ALL and not a.without
                    else f"{len(a.features)}" + (f", without {', '.join(sorted(a.without))}" if a.without else ""))
        lines.append(f"| `{r.name}` | {content_name(r.name) or '—'} | {features} | {r.added} | {r.commit} |")
    return "\n".join(lines)
