"""The machine arms' planner: code does every step that needs no reading, a chooser makes the rest
(triage: *queue*; extraction: *form*; selection: *message*; compare: *next*). A menu of one is taken
without asking; menus are ordered by the run's seed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from labkit.reading.choosers import Chooser, Decision, shuffled
from labkit.reading.families import compose_differences, compose_form, compose_route
from labkit.reading.taskfile import ReadingTask
from labkit.runtime.events import Usage
from labkit.runtime.planner import Candidate, PlannerContext, Proposal
from labkit.runtime.records import record_ids_in

MESSAGE_ID = re.compile(r"\bM\d{2,4}\b")
SAVE = "save"


def message_ids_in(text: str) -> list[str]:
    """Message ids named in ``text``, first mention first."""
    return list(dict.fromkeys(MESSAGE_ID.findall(text)))


class FamilyPlanner:
    """Code for the steps, ``chooser`` for the decisions (see the module docstring)."""

    def __init__(self, task: ReadingTask, chooser: Chooser, *, seed: int) -> None:
        self.task = task
        self.chooser = chooser
        self.seed = seed
        self.name = f"machine+{chooser.name}"
        self.forced = 0  # decisions with one option, taken without asking
        self._picks: tuple[str, str] | None = None  # selection: the two messages, once decided

    # ------------------------------------------------------------------ helpers
    def _read(self, tool: str, ident: str, why: str) -> Proposal:
        return Proposal(candidates=(Candidate(action=tool, args={"id": ident}, rationale_summary=why),))

    def _save(self, text: str, usage: Usage | None, why: str) -> Proposal:
        return Proposal(candidates=(Candidate(action="save_draft", args={"key": self.task.draft_key, "text": text},
                                              rationale_summary=why),), usage=usage or Usage())

    def _decide(self, decision: Decision) -> Any:
        if len(decision.options) == 1 and decision.kind != "form":
            self.forced += 1
            return decision.options[0], None
        choice = self.chooser.choose(decision)
        return choice.value, choice.usage

    # ------------------------------------------------------------------ the planner interface
    def propose(self, ctx: PlannerContext) -> Proposal:
        if self.task.draft_key in ctx.drafts:
            return Proposal(claims_done=True, note="the answer draft is saved")
        reads = ctx.records
        family = self.task.family
        if family != "compare":
            unread = [m for m in message_ids_in(ctx.goal) if m not in reads]
            if unread:
                return self._read("read_message", unread[0], "code: every listed message is read first")
        handler = getattr(self, f"_{family}")
        return handler(ctx, reads)  # type: ignore[no-any-return]

    def _triage(self, ctx: PlannerContext, reads: Mapping[str, Any]) -> Proposal:
        mid = message_ids_in(ctx.goal)[0]
        queues = tuple(shuffled(self.task.queues, self.seed, self.task.id, "queues"))  # type: ignore[union-attr]
        value, usage = self._decide(Decision("queue", ctx.step, ctx.goal, queues, text=str(reads[mid]["text"])))
        return self._save(compose_route(value), usage, f"{self.chooser.name} chose queue {value}")

    def _extraction(self, ctx: PlannerContext, reads: Mapping[str, Any]) -> Proposal:
        mid = message_ids_in(ctx.goal)[0]
        value, usage = self._decide(Decision("form", ctx.step, ctx.goal, text=str(reads[mid]["text"])))
        return self._save(compose_form(value), usage, f"{self.chooser.name} filled the form")

    def _selection(self, ctx: PlannerContext, reads: Mapping[str, Any]) -> Proposal:
        usage = Usage()
        if self._picks is None:
            shown = tuple(reads[m] for m in shuffled(message_ids_in(ctx.goal), self.seed, self.task.id, "messages"))
            options = tuple(str(m["id"]) for m in shown)
            picks: list[str] = []
            for position in (1, 2):
                left = tuple(o for o in options if o not in picks)
                value, used = self._decide(Decision("message", ctx.step, ctx.goal, left, messages=shown,
                                                    position=position, first=picks[0] if picks else None))
                picks.append(str(value))
                if used is not None:
                    usage = Usage(prompt_tokens=usage.prompt_tokens + used.prompt_tokens,
                                  completion_tokens=usage.completion_tokens + used.completion_tokens)
            self._picks = (picks[0], picks[1])
        senders = [str(reads[p].get("sender", "")) for p in self._picks]
        for sender in senders:
            if sender not in reads:
                return Proposal(candidates=(Candidate(action="read_record", args={"id": sender},
                                                      rationale_summary=f"code: sender of {sender}"),), usage=usage)
        return self._save(compose_differences([reads[s] for s in senders]), usage,
                          f"{self.chooser.name} picked {self._picks[0]} then {self._picks[1]}")

    def _compare(self, ctx: PlannerContext, reads: Mapping[str, Any]) -> Proposal:
        named = record_ids_in(ctx.goal)
        menu = [r for r in named if r not in reads] + ([SAVE] if reads else [])
        options = tuple(shuffled(menu, self.seed, self.task.id, "menu", ctx.step))
        read = tuple(r for r in named if r in reads)
        value, usage = self._decide(Decision("next", ctx.step, ctx.goal, options, read=read))
        if value == SAVE:
            return self._save(compose_differences([reads[r] for r in read]), usage,
                              f"{self.chooser.name} chose to save")
        return Proposal(candidates=(Candidate(action="read_record", args={"id": value},
                                              rationale_summary=f"{self.chooser.name} chose {value}"),),
                        usage=usage or Usage())
