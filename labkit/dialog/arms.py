"""The arms of the dialog comparison, each one declaration that ``labkit compare dialog --arms`` reads.

An arm is a bot (the machine or the prompt-only bot) plus its contract: for the machine, a set
of features from :mod:`labkit.dialog.features`; for the prompt-only bot, whether its claimed moves
are checked like the machine's (``needs`` and the script's moves).

- ``machine`` and ``prompt_only`` are the arms as first recorded (``data/dialog/runs``): their
  prompts and schemas are unchanged, so the old cassettes replay byte for byte. ``machine`` is
  also the third arm of the issue: the machine without the new features;
- ``prompt_only_checked`` is the prompt-only bot under the same validator and ``needs`` checks as
  the machine, so that a violation means the same thing in both arms;
- ``machine_plus`` has every feature but the candidates; ``machine_plus_no_<feature>`` each lack one (the
  ablation); ``machine_plus_next`` adds the candidate features (:data:`labkit.dialog.features.CANDIDATES`),
  designed on the dev users after the test recording.

Recording them (a live model; one folder per split and model, :mod:`labkit.dialog.comparison`)::

    # design and the ablation: dev users only
    labkit compare dialog --model qwen2.5-coder-1.5b --threads 2 --split dev \
        --out data/dialog/runs_dev/qwen2.5-coder-1.5b --arms machine_plus,prompt_only_checked,machine,\
        machine_plus_no_step_example,machine_plus_no_results_grammar,...
    # the report: test users, the three arms of the comparison (in stretches: --only a01,a02, then --resume)
    labkit compare dialog --model qwen2.5-coder-1.5b --threads 2 --split test \
        --out data/dialog/runs_test/qwen2.5-coder-1.5b --arms machine_plus,prompt_only_checked,machine

:func:`labkit.dialog.rescore.score_runs` then scores either folder from its logs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from labkit.core.errors import LabkitError
from labkit.core.store import EventLog
from labkit.dialog.engine import DialogBot, PromptOnlyBot
from labkit.dialog.features import CANDIDATES, FEATURES, PARTS, RECORDED, checked_parts
from labkit.dialog.features import checked as checked_features
from labkit.dialog.scenario import Scenario
from labkit.llm.backend import Backend


@dataclass(frozen=True)
class Arm:
    """One arm: which bot, which features (machine) or checks (prompt-only), and what it shows."""

    name: str
    bot: str  # "machine" | "prompt_only"
    features: frozenset[str] = frozenset()
    checked: bool = False
    about: str = ""
    without: frozenset[str] = frozenset()  # parts of its features switched off (labkit.dialog.features.PARTS)

    def __post_init__(self) -> None:
        """An arm is checked when it is declared: a misspelt feature or part is an error, never "off"."""
        if self.bot not in ("machine", "prompt_only"):
            raise LabkitError(f"dialog arm {self.name!r} names the bot {self.bot!r}",
                              "declare it with bot 'machine' or 'prompt_only'.")
        checked_features(self.features)
        checked_parts(self.without)
        if self.bot == "prompt_only" and (self.features or self.without):
            raise LabkitError(f"dialog arm {self.name!r} is a prompt-only arm with machine features",
                              "give features only to an arm of the bot 'machine'.")

    def make(self, scenario: Scenario, backend: Backend, *, log: EventLog | None = None,
             clock: Callable[[], float] | None = None) -> DialogBot | PromptOnlyBot:
        """This arm's bot on ``scenario`` (the old arms built exactly as they were recorded)."""
        kwargs = {} if clock is None else {"clock": clock}
        if self.bot == "prompt_only":
            if self.name == "prompt_only":
                return PromptOnlyBot(scenario, backend, log=log, **kwargs)
            return PromptOnlyBot(scenario, backend, log=log, checked=self.checked, arm=self.name, **kwargs)
        if self.name == "machine":
            return DialogBot(scenario, backend, log=log, **kwargs)
        return DialogBot(scenario, backend, log=log, features=self.features, arm=self.name, without=self.without,
                         **kwargs)


@dataclass(frozen=True)
class Round:
    """One design round on the dev users: its arm is the arm of the round before plus one candidate feature.

    Declared once, this table gives the round's arm, its ablation row (the arm against the one before),
    its dev recording's folder (``<model>-next…``) and label, and the report's pairs.
    """

    arm: str
    feature: str
    label: str  # the dev recording's label in the tables: "dev users, <label>"
    about: str
    features: frozenset[str] = frozenset()  # filled in by _rounds: every feature the arm runs with
    before: str = ""  # filled in by _rounds: the arm it is paired with

    @property
    def suffix(self) -> str:
        """The dev recording's folder is ``<model><suffix>`` (``machine_plus_next2`` -> ``-next2``)."""
        return "-" + self.arm.removeprefix("machine_plus_")


def _rounds(*rounds: Round) -> tuple[Round, ...]:
    """The rounds in order, each given the features of the one before plus its own."""
    done: list[Round] = []
    features, before = RECORDED, "machine_plus"
    for r in rounds:
        features = features | {r.feature}
        done.append(Round(r.arm, r.feature, r.label, r.about, features, before))
        before = r.arm
    return tuple(done)


ROUNDS: tuple[Round, ...] = _rounds(
    Round("machine_plus_next", "results_first", "candidates", "machine_plus with the first candidate feature, "
          "results_first, designed on the dev users after the test recording"),
    Round("machine_plus_next2", "more_examples", "both candidates", "machine_plus_next with the second round's "
          "candidate, more_examples, designed on the dev users after machine_plus_next's recordings"),
    Round("machine_plus_next3", "split_values", "three candidates", "machine_plus_next2 with the third round's "
          "candidate, split_values, designed on the dev users after machine_plus_next2's recordings"),
    Round("machine_plus_next4", "split_required", "four candidates", "machine_plus_next3 with the fourth round's "
          "candidate, split_required, designed on the dev users after machine_plus_next3's recording"),
    Round("machine_plus_next5", "split_cut", "five candidates", "machine_plus_next4 with the fifth round's "
          "candidate, split_cut, designed on the dev users after machine_plus_next4's recording"),
    Round("machine_plus_next6", "move_cues", "six candidates", "machine_plus_next5 with the sixth round's "
          "candidate, move_cues, designed on the dev users after machine_plus_next5's recordings"),
    Round("machine_plus_next7", "correction_cues", "seven candidates", "machine_plus_next6 with the seventh "
          "round's candidate, correction_cues, designed on the dev users after machine_plus_next5's recordings"),
    Round("machine_plus_next8", "correction_question", "eight candidates", "machine_plus_next7 with the eighth "
          "round's candidate, correction_question, designed on the dev users after machine_plus_next6's recording"),
    Round("machine_plus_next9", "request_question", "nine candidates", "machine_plus_next8 with the ninth round's "
          "candidate, request_question, designed on the dev users after machine_plus_next8's recording"),
    Round("machine_plus_next10", "correction_unseen", "ten candidates", "machine_plus_next9 with the tenth round's "
          "candidate, correction_unseen, designed on the dev users after machine_plus_next8's recording"),
)
"""The design rounds, in the order they were recorded (:data:`labkit.dialog.features.CANDIDATES` are their
features)."""


ARMS: tuple[Arm, ...] = (
    Arm("machine", "machine", about="the machine as first recorded: no new feature (what the features buy is "
                                   "measured against it)"),
    Arm("prompt_only", "prompt_only", about="the whole script in one prompt, as first recorded (no needs check)"),
    Arm("prompt_only_checked", "prompt_only", checked=True,
        about="the whole script in one prompt, its claimed moves held to the script's moves and needs"),
    Arm("machine_plus", "machine", RECORDED, about="the machine with every feature but the candidates"),
    *(Arm(f"machine_plus_no_{f.name}", "machine", RECORDED - {f.name},
          about=f"machine_plus without {f.name}: {f.about}") for f in FEATURES if f.name in RECORDED),
    *(Arm(f"machine_plus_no_{p.name}", "machine", RECORDED, without=frozenset({p.name}),
          about=f"machine_plus with {p.of} but without its part {p.name}: {p.about}") for p in PARTS),
    *(Arm(r.arm, "machine", r.features, about=r.about) for r in ROUNDS),
)
BY_NAME: dict[str, Arm] = {a.name: a for a in ARMS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
ABLATION: tuple[str, ...] = ("machine_plus", *(f"machine_plus_no_{f.name}" for f in (*FEATURES, *PARTS)
                                               if f.name not in CANDIDATES))


@dataclass(frozen=True)
class Ablation:
    """What one feature (or one rule inside a feature) buys: the arm with it against the same arm without it."""

    feature: str
    with_arm: str
    without_arm: str


ABLATIONS: tuple[Ablation, ...] = (
    *(Ablation(name.removeprefix("machine_plus_no_"), "machine_plus", name) for name in ABLATION[1:]),
    # the candidates joined in design rounds, each on top of the arm before it
    *(Ablation(r.feature, r.arm, r.before) for r in ROUNDS),
)
"""Every feature and part with the pair of recorded arms that differ in it alone (read by
:func:`labkit.dialog.ablation.ablation_rows`)."""


def arm(name: str) -> Arm:
    """The declared arm ``name``; refused with the known names otherwise."""
    found = BY_NAME.get(name)
    if found is None:
        raise LabkitError(f"unknown dialog arm {name!r}", f"use one of: {', '.join(NAMES)}.")
    return found


def checked_arms(names: Iterable[str]) -> list[Arm]:
    """Every name in ``names`` as an arm, in order, refused if one is not declared."""
    return [arm(n) for n in names]


def declared_prefixes(names: Iterable[str], scenarios: Iterable[Scenario], backend: Backend) -> tuple[str, ...]:
    """The prompt heads the arms' bots declare on ``scenarios`` (each once): what a backend may keep.

    A bot is built on ``backend`` only to ask it (nothing is called); see
    :meth:`labkit.dialog.engine._Bot.declared_prefixes`.
    """
    scenarios = list(scenarios)
    heads = (head for a in checked_arms(names) for s in scenarios
             if a.bot == "prompt_only" or "corrections" not in a.features or s.corrections is not None
             for head in a.make(s, backend).declared_prefixes())
    return tuple(dict.fromkeys(heads))
