"""Course helpers: predict-then-see moments and self-checking quizzes for the notebooks.

:func:`predict` reveals its answer only after a checked choice; the next cell, tagged ``reveal``, is folded
until then (:data:`REVEAL_HEADING` on stderr, :data:`GUARD_JS`). :class:`Quiz` ends a notebook and checks
from plain Python too; a wrong answer gets a hint, never the right answer."""

from __future__ import annotations

import html
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from labkit.core.errors import LabkitError

FALLBACK = "choose, then press check"
REVEAL_TAG = "reveal"
"""The cell tag that marks the code cell revealing a prediction's answer (the build folds its outputs)."""
REVEAL_HEADING = "The answer to the prediction above (folded until a choice is checked there)"
"""The first line of a reveal cell's output: what JupyterLab's fold bar shows in place of the answer."""
ANSWERED_CLASS = "labkit-answered"
OUTPUT_KEY = "labkit_prediction"
"""The key of a prediction's output metadata: ``{"reveal": bool}``, read by the notebook build."""

GUARD_JS = """
// labkit predict box: keep the next code cell (the reveal) folded until a choice is checked.
(() => {
  const started = Date.now();
  const attach = () => {
    if (!element.isConnected) {  // rendered before it was placed in the page: wait for it
      if (Date.now() - started < 60000) setTimeout(attach, 100);
      return;
    }
    const box = element.closest('.labkit-predict'), cell = element.closest('.jp-Cell');
    if (!box || !cell) return;  // not in a JupyterLab notebook: nothing to fold
    let reveal = cell.nextElementSibling;
    while (reveal && !reveal.classList.contains('jp-CodeCell')) reveal = reveal.nextElementSibling;
    if (!reveal) return;
    const answered = () => box.classList.contains('ANSWERED');
    const folded = () => reveal.querySelector('.jp-Cell-outputWrapper .jp-OutputPlaceholder') !== null;
    const press = () => { const bar = reveal.querySelector('.jp-Cell-outputCollapser .jp-Collapser-child');
                          if (bar) bar.click(); };
    const prompt = () => { const p = reveal.querySelector('.jp-InputPrompt'); return p ? p.textContent : ''; };
    let seen = prompt();
    if (!answered() && !folded()) press();
    const guard = new MutationObserver(() => {
      if (!box.isConnected) { guard.disconnect(); return; }  // the prediction was run again: its new box guards
      if (answered()) { guard.disconnect(); if (folded()) press(); return; }
      const now = prompt();  // "[*]:" when a run starts, "[n]:" when it ends: JupyterLab unfolded the cell
      if (now !== seen) { seen = now; if (!folded()) press(); }
    });
    guard.observe(reveal, {subtree: true, childList: true, characterData: true});
    guard.observe(box, {attributes: true, attributeFilter: ['class']});
  };
  attach();
})();
""".replace("ANSWERED", ANSWERED_CLASS)
"""Runs in JupyterLab when a prediction's box is drawn (see the module's docstring)."""


def _require_choice(question: str, choices: Sequence[str], answer: str) -> None:
    if len(choices) < 2 or len(set(choices)) != len(choices):
        raise LabkitError(f"the question {question!r} needs at least two different choices, got {list(choices)}",
                          "list each possible answer once")
    if answer not in choices:
        raise LabkitError(f"the answer {answer!r} of {question!r} is not one of its choices {list(choices)}",
                          "make the answer one of the choices (spelled the same way)")


class Prediction:
    """One predict-then-see moment (the last expression of a cell): ``choices`` in order, the right
    ``answer``, ``explain`` shown after a checked choice; ``reveal``: the next cell shows the answer."""

    def __init__(self, question: str, choices: Sequence[str], answer: str, explain: str, *,
                 reveal: bool = True) -> None:
        _require_choice(question, choices, answer)
        self.question, self.choices, self.answer, self.explain = question, list(choices), answer, explain
        self.has_reveal = reveal
        self.picker = widgets.RadioButtons(options=self.choices, value=None, layout={"width": "max-content"})
        self.button = widgets.Button(description="check", icon="eye")
        self.reveal = widgets.HTML(value="")
        self.button.on_click(lambda _: self.check())
        parts: list[widgets.Widget] = [widgets.HTML(value=f"<b>Predict.</b> {html.escape(question)}"), self.picker,
                                       self.button, self.reveal]
        if reveal:
            guard = widgets.Output(layout={"display": "none"})
            guard.outputs = ({"output_type": "display_data", "data": {"application/javascript": GUARD_JS},
                              "metadata": {}},)
            parts.append(guard)
        self.box = widgets.VBox(parts)
        self.box.add_class("labkit-predict")

    def check(self) -> bool | None:
        """Reveal the answer for the chosen option; None (and nothing revealed) when nothing is chosen."""
        chosen = self.picker.value
        if chosen is None:
            self.reveal.value = "<i>Choose an answer first: the point is to commit before you see it.</i>"
            return None
        right = chosen == self.answer
        verdict = "Right." if right else f"Not quite: you chose <code>{html.escape(chosen)}</code>."
        self.reveal.value = (f"<p><b>{verdict}</b> The answer is <code>{html.escape(self.answer)}</code>.</p>"
                             f"<pre style='white-space: pre-wrap'>{html.escape(self.explain)}</pre>")
        self.box.add_class(ANSWERED_CLASS)  # the guard script unfolds the reveal cell
        return right

    def __repr__(self) -> str:
        return f"Predict: {self.question}\n  " + "\n  ".join(self.choices) + f"\n({FALLBACK})"

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget, its plain-text fallback, and in the output's metadata whether a reveal cell follows
        (what ``scripts/build_notebook.py`` checks in the executed notebook)."""
        if self.has_reveal:
            _heading_for_next_cell()
        bundle = self.box._repr_mimebundle_(**kwargs) or {}
        return {**bundle, "text/plain": repr(self)}, {OUTPUT_KEY: {"reveal": self.has_reveal}}


class _RevealHeading:
    """Writes :data:`REVEAL_HEADING` to stderr first in the cell run right after one that showed a prediction."""

    def __init__(self) -> None:
        self.shown = False
        self.after: str | None = None

    def post_run_cell(self, result: Any) -> None:
        if self.shown:
            self.shown, self.after = False, result.info.raw_cell

    def pre_run_cell(self, info: Any) -> None:
        after, self.after = self.after, None
        if after is not None and info.raw_cell != after:
            sys.stderr.write(REVEAL_HEADING + "\n")
            sys.stderr.flush()


_HEADINGS: dict[int, _RevealHeading] = {}


def _heading_for_next_cell() -> None:
    """Arm :class:`_RevealHeading` in the running IPython shell; outside IPython there is no next cell."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipywidgets depends on IPython
        return
    shell = get_ipython()
    if shell is None:
        return
    heading = _HEADINGS.get(id(shell))
    if heading is None:
        heading = _HEADINGS[id(shell)] = _RevealHeading()
        shell.events.register("pre_run_cell", heading.pre_run_cell)
        shell.events.register("post_run_cell", heading.post_run_cell)
    heading.shown = True


def predict(question: str, choices: Sequence[str], answer: str, explain: str, *, reveal: bool = True) -> Prediction:
    """A predict-then-see moment (see :class:`Prediction`); with ``reveal`` the next cell must be tagged ``reveal``."""
    return Prediction(question, choices, answer, explain, reveal=reveal)


@dataclass(frozen=True)
class Choice:
    """A multiple-choice quiz question; ``explain`` is shown once it is answered right."""

    prompt: str
    choices: Sequence[str]
    answer: str
    explain: str = ""

    def __post_init__(self) -> None:
        _require_choice(self.prompt, self.choices, self.answer)

    def judge(self, given: Any, namespace: Mapping[str, Any]) -> tuple[bool, str]:
        if given not in self.choices:
            return False, f"pick one of: {', '.join(map(str, self.choices))}"
        return (True, self.explain) if given == self.answer else (False, "read the question again")


@dataclass(frozen=True)
class CodeLine:
    """A question answered by one line of Python; ``accept`` judges its value, ``hint`` tells a wrong answer."""

    prompt: str
    accept: Callable[[Any], bool]
    hint: str
    explain: str = ""

    def judge(self, given: Any, namespace: Mapping[str, Any]) -> tuple[bool, str]:
        if not isinstance(given, str) or not given.strip():
            return False, "write one line of Python"
        try:
            value = eval(given, dict(namespace))  # the learner's own line, in the learner's own kernel
        except Exception as err:  # any error of the learner's line is feedback, not a crash
            return False, f"your line raised {type(err).__name__}: {err}"
        try:
            right = bool(self.accept(value))
        except Exception:  # a value of the wrong kind is a wrong answer
            right = False
        return (True, self.explain) if right else (False, self.hint)


Question = Choice | CodeLine


@dataclass(frozen=True)
class Feedback:
    """The judgement of one answer: question number (from 1), right or not, and what to read next."""

    number: int
    right: bool
    message: str

    def __str__(self) -> str:
        return f"{self.number}. {'right' if self.right else 'not yet'}" + (f" - {self.message}" if self.message
                                                                           else "")


class Quiz:
    """A wrap-up quiz that checks itself, as widgets and from plain Python; ``namespace``: the names a
    :class:`CodeLine` answer may use."""

    def __init__(self, questions: Sequence[Question], namespace: Mapping[str, Any] | None = None) -> None:
        if not questions:
            raise LabkitError("a quiz needs at least one question", "pass a list of Choice and CodeLine questions")
        self.questions = list(questions)
        self.namespace = namespace if namespace is not None else {}
        self._inputs = [widgets.RadioButtons(options=list(q.choices), value=None) if isinstance(q, Choice)
                        else widgets.Text(placeholder="one line of Python", layout={"width": "80%"})
                        for q in self.questions]
        self._feedback = [widgets.HTML(value="") for _ in self.questions]
        self.button = widgets.Button(description="check answers", icon="check")
        self.button.on_click(lambda _: self._check_widgets())
        rows: list[widgets.Widget] = []
        for number, (question, field, said) in enumerate(zip(self.questions, self._inputs, self._feedback,
                                                            strict=True), start=1):
            rows += [widgets.HTML(value=f"<b>{number}.</b> {html.escape(question.prompt)}"), field, said]
        self.box = widgets.VBox([*rows, self.button])

    def check(self, answers: Mapping[int, Any] | Sequence[Any]) -> list[Feedback]:
        """Judge ``answers`` (by question number from 1, or a list in order); unanswered ones are not yet right."""
        given = dict(answers) if isinstance(answers, Mapping) else dict(enumerate(answers, start=1))
        unknown = sorted(set(given) - set(range(1, len(self.questions) + 1)))
        if unknown:
            raise LabkitError(f"the quiz has questions 1-{len(self.questions)}, not {unknown}",
                              "number the answers from 1")
        feedback = []
        for number, question in enumerate(self.questions, start=1):
            if given.get(number) is None:
                feedback.append(Feedback(number, False, "no answer yet"))
                continue
            right, message = question.judge(given[number], self.namespace)
            feedback.append(Feedback(number, right, message))
        return feedback

    def _check_widgets(self) -> list[Feedback]:
        answers = {n: (field.value or None) for n, field in enumerate(self._inputs, start=1)}
        feedback = self.check(answers)
        for said, item in zip(self._feedback, feedback, strict=True):
            colour = "green" if item.right else "#b35900"
            said.value = f"<span style='color:{colour}'>{html.escape(str(item))}</span>"
        return feedback

    def __repr__(self) -> str:
        lines = [f"Quiz: {len(self.questions)} questions (answer them in the widget, then press check answers)"]
        for number, question in enumerate(self.questions, start=1):
            kind = ("choose one: " + " / ".join(map(str, question.choices)) if isinstance(question, Choice)
                    else "one line of code")
            lines.append(f"{number}. {question.prompt} [{kind}]")
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.box._repr_mimebundle_(**kwargs) or {}
        return {**bundle, "text/plain": repr(self)}
