"""Scripted users, one conversation (:func:`run_user`), and the legacy adherence check.

A user script (:mod:`labkit.dialog.users`) names its scenario, messages and expected end state; recording is
:mod:`labkit.dialog.comparison`. :func:`adherence` checks the end step and the words each value must contain
(case-insensitive substrings; a list's items joined): the recorded runs were made with it, so replaying one
gives its recorded verdicts. :mod:`labkit.dialog.measure` is the measure a do-nothing bot cannot pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.dialog.engine import DialogBot, PromptOnlyBot, current_step
from labkit.dialog.events import ModelCalled
from labkit.dialog.users import UserScript, load_user_script, load_user_scripts

__all__ = ["ConversationResult", "UserScript", "adherence", "load_scenarios", "load_user_script",
           "load_user_scripts", "result_from_dict", "run_user", "summarize"]


def _text(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value).lower()
    return "" if value is None else str(value).lower()


def adherence(script: UserScript, end_step: str, variables: dict[str, Any]) -> list[str]:
    """Every way the end state misses the script's expectation; empty means the bot adhered."""
    misses: list[str] = []
    if script.expect_step is not None and end_step != script.expect_step:
        misses.append(f"ended in step '{end_step}', expected '{script.expect_step}'")
    for name, words in script.expect_variables.items():
        value = _text(variables.get(name))
        absent = [w for w in words if w.lower() not in value]
        if absent:
            misses.append(f"{name}={variables.get(name)!r} lacks {', '.join(absent)}")
    return misses


@dataclass(frozen=True)
class ConversationResult:
    """One simulated conversation's counts and verdict."""

    user: str
    scenario: str
    arm: str
    end_step: str
    variables: dict[str, Any]
    user_messages: int
    calls: int
    reasks: int
    contract_violations: int
    failures: int
    prompt_tokens: tuple[int, ...]
    misses: tuple[str, ...]

    @property
    def adhered(self) -> bool:
        return not self.misses

    def to_dict(self) -> dict[str, Any]:
        return {"user": self.user, "scenario": self.scenario, "arm": self.arm, "end_step": self.end_step,
                "variables": self.variables, "user_messages": self.user_messages, "calls": self.calls,
                "reasks": self.reasks, "contract_violations": self.contract_violations,
                "failures": self.failures, "prompt_tokens": list(self.prompt_tokens),
                "misses": list(self.misses), "adhered": self.adhered}


def result_from_dict(data: dict[str, Any]) -> ConversationResult:
    """A result read back from a recording's row (``runs.jsonl``: the legacy verdict is ``legacy_misses``)."""
    known = {k: data[k] for k in ConversationResult.__dataclass_fields__ if k != "misses"}
    known["misses"] = data["legacy_misses"]
    known["prompt_tokens"], known["misses"] = tuple(known["prompt_tokens"]), tuple(known["misses"])
    return ConversationResult(**known)


def run_user(bot: DialogBot | PromptOnlyBot, script: UserScript, arm: str) -> ConversationResult:
    """Feed the script's messages to ``bot`` until they run out or the dialog ends; check the end state."""
    for text in script.turns:
        if bot.finished:
            break
        bot.respond(text)
    state = bot.state
    tokens = tuple(e.prompt_tokens for e in bot.events if isinstance(e, ModelCalled))
    end = current_step(bot)
    return ConversationResult(user=script.name, scenario=script.scenario, arm=arm, end_step=end,
                              variables=dict(state.variables), user_messages=state.user_messages,
                              calls=state.calls, reasks=state.reasks,
                              contract_violations=state.contract_violations, failures=state.failures,
                              prompt_tokens=tokens, misses=tuple(adherence(script, end, dict(state.variables))))


def summarize(results: list[ConversationResult]) -> dict[str, Any]:
    """The counts a table reports for one (model, arm), with Wilson 95% intervals for the rates."""
    from labkit.compare.stats import wilson_interval

    n = len(results)
    adhered = sum(r.adhered for r in results)
    messages = sum(r.user_messages for r in results)
    calls = sum(r.calls for r in results)
    tokens = [t for r in results for t in r.prompt_tokens]
    turns_reasked = sum(r.reasks for r in results)
    return {"conversations": n, "adhered": adhered, "adherence_ci95": list(wilson_interval(adhered, n)),
            "user_messages": messages, "calls": calls,
            "calls_per_message": round(calls / messages, 3) if messages else None,
            "reasks": turns_reasked, "reask_rate_ci95": list(wilson_interval(turns_reasked, messages)),
            "reasks_repaired": turns_reasked - sum(r.failures for r in results),
            "contract_violations": sum(r.contract_violations for r in results),
            "contract_failures": sum(r.failures for r in results),
            "prompt_tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else None,
            "prompt_tokens_max": max(tokens) if tokens else None}


def load_scenarios(folder: str | Path) -> dict[str, Any]:
    """Every ``<name>/scenario.yaml`` under ``folder``, by name."""
    from labkit.dialog.scenario import load_scenario

    return {p.parent.name: load_scenario(p) for p in sorted(Path(folder).glob("*/scenario.yaml"))}


