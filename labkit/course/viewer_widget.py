"""The trace viewer as an ipywidget: Play and a slider over :mod:`labkit.course.viewer`'s steps; paused in
``WAITING_HUMAN`` with a ``decide`` callback, Approve and Deny continue the run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import ipywidgets as widgets

from labkit.core.errors import LabkitError
from labkit.core.events import Event
from labkit.course.viewer import StepView, Trace, render_markdown, render_text

Decide = Callable[[bool], Sequence[Event]]
"""Called with True (approve) or False (deny); returns the run's whole event list afterwards."""

WAITING = "WAITING_HUMAN"


class TraceWidget:
    """Step through a :class:`~labkit.course.viewer.Trace`; display it as the last expression of a cell."""

    def __init__(self, trace: Trace, *, decide: Decide | None = None, start: int = 0,
                 interval_ms: int = 900) -> None:
        self.trace = trace
        self.decide = decide
        last = len(trace) - 1
        self.play = widgets.Play(value=start, min=0, max=last, step=1, interval=interval_ms, description="play")
        self.slider = widgets.IntSlider(value=start, min=0, max=last, step=1, description="step",
                                        continuous_update=True)
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.output = widgets.Output()
        self.approve = widgets.Button(description="Approve", button_style="success", icon="check")
        self.deny = widgets.Button(description="Deny", button_style="danger", icon="times")
        self.message = widgets.HTML()
        self.decision_bar = widgets.HBox([self.approve, self.deny, self.message])
        self.approve.on_click(lambda _button: self._decide(True))
        self.deny.on_click(lambda _button: self._decide(False))
        self.slider.observe(self._on_slider, names="value")
        self.box = widgets.VBox([widgets.HBox([self.play, self.slider]), self.decision_bar, self.output])
        self.view: StepView = trace.step(start)
        self.show(start)

    # ------------------------------------------------------------------ drawing
    def show(self, index: int) -> StepView:
        """Draw step ``index`` into the output area and return its view."""
        self.view = self.trace.step(index)
        markdown = render_markdown(self.view)
        # Set the output directly (rather than ``with self.output: display(...)``), so that drawing
        # works, and can be tested, without a running kernel.
        self.output.outputs = ({"output_type": "display_data",
                                "data": {"text/markdown": markdown, "text/plain": render_text(self.view)},
                                "metadata": {}},)
        self._update_decision_bar()
        return self.view

    @property
    def waiting(self) -> bool:
        """True when the shown step is the run's last and the run waits for a person."""
        return self.view.index == len(self.trace) - 1 and self.view.status_after == WAITING

    def _update_decision_bar(self) -> None:
        active = self.waiting and self.decide is not None
        self.decision_bar.layout.display = None if active else "none"
        self.approve.disabled = self.deny.disabled = not active

    def _on_slider(self, change: dict[str, Any]) -> None:
        self.show(int(change["new"]))

    # ------------------------------------------------------------------ human decisions
    def _decide(self, approved: bool) -> None:
        if not (self.waiting and self.decide is not None):
            return
        try:
            events = list(self.decide(approved))
        except LabkitError as exc:
            self.message.value = f"<span style='color:#b71c1c'>{exc.message}</span>"
            return
        old = self.trace
        self.trace = Trace(events, old.table, old.reduce, old.empty, old.invariants, old.focus,
                           project=old.project, describe=old.describe)
        last = len(self.trace) - 1
        self.message.value = f"{'approved' if approved else 'denied'}: the run went on to step {last}"
        for control in (self.play, self.slider):
            control.max = last
        self.slider.value = last  # redraws through the observer
        if self.view.index != last:
            self.show(last)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)


class _Decider(Protocol):
    """What :func:`decide_with` needs of a runtime: ``decide(approve)`` and its ``events``."""

    def decide(self, approve: bool) -> Any: ...

    @property
    def events(self) -> Sequence[Event]: ...


def decide_with(runtime: _Decider) -> Decide:
    """A ``decide`` callback for a paused ``labkit.runtime.Runtime``: record the decision, continue, show the rest."""

    def decide(approved: bool) -> Sequence[Event]:
        runtime.decide(approved)
        return list(runtime.events)

    return decide


def view_trace(events: Sequence[Event], name: str | None = None, *, decide: Decide | None = None,
               start: int = 0, **options: Any) -> TraceWidget:
    """A widget over a logged run, with the catalog's table, reducer and invariants (``options``: see ``Trace``)."""
    return TraceWidget(Trace.from_catalog(events, name, **options), decide=decide, start=start)
