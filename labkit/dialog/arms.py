"""The arms of the dialog comparison, named by what they contain; ``labkit compare dialog --arms`` reads them.

An arm is a bot plus its contract: ``machine`` (every feature of :mod:`labkit.dialog.features`),
``machine_without_<feature>`` (one feature or part off: the ablation), ``bare_machine`` (no feature),
``prompt_only`` (the whole script in one prompt) and ``prompt_only_checked`` (its claimed moves held to the
script's moves and needs). Older recordings' names are read through :mod:`labkit.dialog.history`. To record::

    labkit compare dialog --model qwen2.5-coder-1.5b --threads 2 --split test \
        --out data/dialog/runs_test/qwen2.5-coder-1.5b --arms machine,prompt_only_checked,bare_machine
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from labkit.core.errors import LabkitError
from labkit.core.store import EventLog
from labkit.dialog.engine import DialogBot, PromptOnlyBot
from labkit.dialog.features import ALL, FEATURES, PARTS, checked_parts
from labkit.dialog.features import checked as checked_features
from labkit.dialog.scenario import Scenario
from labkit.llm.backend import Backend


@dataclass(frozen=True)
class Arm:
    """One arm: which bot, which features (machine) or checks (prompt-only), and what it shows.

    ``recorded_as``: the ``arm`` its conversations write into their logs (default its name; ``""`` writes none,
    as the first recordings did).
    """

    name: str
    bot: str  # "machine" | "prompt_only"
    features: frozenset[str] = frozenset()
    checked: bool = False
    about: str = ""
    without: frozenset[str] = frozenset()  # parts of its features switched off (labkit.dialog.features.PARTS)
    recorded_as: str | None = None

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
        """This arm's bot on ``scenario``."""
        kwargs = {} if clock is None else {"clock": clock}
        label = self.name if self.recorded_as is None else self.recorded_as
        if self.bot == "prompt_only":
            return PromptOnlyBot(scenario, backend, log=log, checked=self.checked, arm=label, **kwargs)
        return DialogBot(scenario, backend, log=log, features=self.features, arm=label, without=self.without,
                         **kwargs)


ARMS: tuple[Arm, ...] = (
    Arm("machine", "machine", ALL, about="the machine with every feature"),
    Arm("prompt_only_checked", "prompt_only", checked=True,
        about="the whole script in one prompt, its claimed moves held to the script's moves and needs"),
    Arm("bare_machine", "machine", about="the machine with no feature: the step's own prompt, the contract, one "
                                         "re-ask"),
    Arm("prompt_only", "prompt_only", about="the whole script in one prompt, no needs check"),
    *(Arm(f"machine_without_{f.name}", "machine", ALL - {f.name}, about=f"machine without {f.name}: {f.about}")
      for f in FEATURES),
    *(Arm(f"machine_without_{p.name}", "machine", ALL, without=frozenset({p.name}),
          about=f"machine with {p.of} but without its part {p.name}: {p.about}") for p in PARTS),
)
BY_NAME: dict[str, Arm] = {a.name: a for a in ARMS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
ABLATION: tuple[str, ...] = ("machine", *(f"machine_without_{f.name}" for f in (*FEATURES, *PARTS)))
"""The dev ablation's arms: the machine, and the machine without each feature and each part."""


@dataclass(frozen=True)
class Ablation:
    """What one feature (or one rule inside a feature) buys: the arm with it against the same arm without it."""

    feature: str
    with_arm: str
    without_arm: str


ABLATIONS: tuple[Ablation, ...] = tuple(Ablation(name.removeprefix("machine_without_"), "machine", name)
                                        for name in ABLATION[1:])
"""Every feature and part with the pair of arms that differ in it alone (:func:`labkit.dialog.ablation.ablation_rows`
adds the recorded pairs of :mod:`labkit.dialog.history`)."""


def arm(name: str) -> Arm:
    """The declared arm ``name``; refused with the known names otherwise."""
    found = BY_NAME.get(name)
    if found is None:
        raise LabkitError(f"unknown dialog arm {name!r}", f"use one of: {', '.join(NAMES)}.")
    return found


def declared_prefixes(names: Iterable[str | Arm], scenarios: Iterable[Scenario], backend: Backend) -> tuple[str, ...]:
    """The prompt heads the arms' bots declare on ``scenarios`` (each once): what a backend may keep.

    ``names``: declared arm names, or arms themselves (a recorded arm of :mod:`labkit.dialog.history`).
    A bot is built on ``backend`` only to ask it (nothing is called); see
    :meth:`labkit.dialog.engine._Bot.declared_prefixes`.
    """
    scenarios = list(scenarios)
    arms = [n if isinstance(n, Arm) else arm(n) for n in names]
    heads = (head for a in arms for s in scenarios
             if a.bot == "prompt_only" or "corrections" not in a.features or s.corrections is not None
             for head in a.make(s, backend).declared_prefixes())
    return tuple(dict.fromkeys(heads))
