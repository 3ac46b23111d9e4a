"""A chat-style view of a conversation: user and bot bubbles, each turn's system log expandable.

:func:`conversation_view` turns events into plain data (one :class:`TurnView` per user message: what was said,
the step before and after, every prompt, raw answer, verdict, re-ask and variable change); :func:`render_html`
draws it with ``<details>`` (no JavaScript); :class:`ChatViewer` is the ipywidget: give :meth:`ChatViewer.push`
to a bot as ``on_event`` and it redraws while the conversation runs.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from labkit.core.events import Event, Transitioned
from labkit.dialog.events import BotSaid, ContractFailed, ModelCalled, UserSaid, VariableChanged


@dataclass
class LogEntry:
    """One line of a turn's system log."""

    kind: str  # "call" | "variable" | "transition" | "contract_failed"
    title: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnView:
    """One user message and everything that followed it."""

    turn: int
    user: str
    step_before: str
    step_after: str = ""
    bot: list[str] = field(default_factory=list)
    log: list[LogEntry] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(1 for e in self.log if e.kind == "call")

    @property
    def reasked(self) -> bool:
        return any(e.kind == "call" and e.details.get("attempt", 1) > 1 for e in self.log)


def conversation_view(events: Sequence[Event]) -> list[TurnView]:
    """The turns of a conversation, read from its events alone."""
    turns: list[TurnView] = []
    for event in events:
        if isinstance(event, UserSaid):
            turns.append(TurnView(turn=event.turn, user=event.text, step_before=event.step, step_after=event.step))
            continue
        if not turns:
            continue
        current = turns[-1]
        if isinstance(event, ModelCalled):
            verdict = (f"broke the contract ({event.violation}: {event.detail})" if event.violation
                       else "kept the contract")
            title = ("re-ask" if event.attempt > 1 else "model call") + f" in step {event.step}: {verdict}"
            current.log.append(LogEntry("call", title, {
                "attempt": event.attempt, "prompt": event.prompt, "raw": event.raw, "violation": event.violation,
                "detail": event.detail, "prompt_tokens": event.prompt_tokens,
                "completion_tokens": event.completion_tokens, "seconds": event.seconds}))
        elif isinstance(event, VariableChanged):
            current.log.append(LogEntry("variable", f"{event.name}: {json.dumps(event.old, ensure_ascii=False)} → "
                                        f"{json.dumps(event.new, ensure_ascii=False)} (by {event.who} in {event.step})",
                                        {"name": event.name, "old": event.old, "new": event.new}))
        elif isinstance(event, Transitioned):
            current.step_after = event.dest
            current.log.append(LogEntry("transition", f"{event.source} --{event.trigger}--> {event.dest}",
                                        {"signal": event.trigger}))
        elif isinstance(event, ContractFailed):
            current.log.append(LogEntry("contract_failed", f"contract failed twice ({event.violation}); "
                                        "the step stays", {"violation": event.violation, "detail": event.detail}))
        elif isinstance(event, BotSaid):
            current.bot.append(event.text)
            if event.signal and not any(e.kind == "transition" for e in current.log):
                current.step_after = event.signal  # a prompt-only bot: the step it claims to be in
    return turns


def _bubble(text: str, who: str) -> str:
    align, colour = ("flex-end", "#dcf8c6") if who == "user" else ("flex-start", "#eef1f5")
    return (f"<div style='display:flex;justify-content:{align};margin:4px 0'><div style='max-width:75%;"
            f"background:{colour};padding:6px 10px;border-radius:10px'>{html.escape(text)}</div></div>")


def render_html(turns: Sequence[TurnView]) -> str:
    """The conversation as HTML: bubbles, and one folded ``<details>`` system log per turn."""
    parts = ["<div style='font-family:sans-serif;font-size:13px'>"]
    for view in turns:
        parts.append(_bubble(view.user, "user"))
        for text in view.bot:
            parts.append(_bubble(text, "bot"))
        entries = []
        for entry in view.log:
            body = ""
            if entry.kind == "call":
                d = entry.details
                body = (f"<pre style='white-space:pre-wrap'>PROMPT ({d['prompt_tokens']} tokens)\n"
                        f"{html.escape(d['prompt'])}\n\nRAW ANSWER\n{html.escape(d['raw'])}</pre>")
            entries.append(f"<li>{html.escape(entry.title)}{body}</li>")
        summary = (f"system log: step {view.step_before} → {view.step_after}, {view.calls} call(s)"
                   + (", re-asked" if view.reasked else ""))
        parts.append(f"<details><summary style='color:#666'>{html.escape(summary)}</summary><ul>"
                     + "".join(entries) + "</ul></details>")
    parts.append("</div>")
    return "".join(parts)


def render_text(turns: Sequence[TurnView], *, show_prompts: bool = False) -> str:
    """The conversation as plain text (for terminals and saved notebook outputs)."""
    lines: list[str] = []
    for view in turns:
        lines.append(f"[{view.turn}] user: {view.user}")
        for text in view.bot:
            lines.append(f"    bot : {text}")
        for entry in view.log:
            lines.append(f"      · {entry.title}")
            if show_prompts and entry.kind == "call":
                lines.append("        prompt: " + entry.details["prompt"].replace("\n", "\n        "))
                lines.append("        raw   : " + entry.details["raw"])
    return "\n".join(lines)


class ChatViewer:
    """An ipywidget showing a conversation; :meth:`push` adds events and redraws (live updates)."""

    def __init__(self, events: Sequence[Event] = ()) -> None:
        import ipywidgets as widgets

        self.events: list[Event] = list(events)
        self.html = widgets.HTML()
        self.redraw()

    @property
    def turns(self) -> list[TurnView]:
        return conversation_view(self.events)

    def push(self, event: Event) -> None:
        """Add one event (pass this method to a bot as ``on_event``) and redraw."""
        self.events.append(event)
        self.redraw()

    def redraw(self) -> None:
        self.html.value = render_html(self.turns)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.html)
