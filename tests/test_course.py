"""The course helpers hide answers until asked, and their checkers refuse wrong answers."""

from __future__ import annotations

import json

import ipywidgets as widgets
import pytest

from labkit import Choice, CodeLine, LabkitError, Quiz, predict
from labkit.course.quiz import ANSWERED_CLASS, FALLBACK, GUARD_JS, OUTPUT_KEY, Prediction

SECRET_ANSWER = "UNKNOWN"
SECRET_WHY = "a timeout is the absence of an answer"


def everything_shown(widget) -> str:
    """All state of a widget tree, as the frontend (and a saved notebook) would receive it."""
    parts = []
    stack = [widget]
    while stack:
        w = stack.pop()
        state = w.get_state()
        parts.append(json.dumps({k: v for k, v in state.items() if k != "children"}, default=str))
        stack.extend(getattr(w, "children", ()))
    return "\n".join(parts)


def make() -> Prediction:
    return predict("Where does timeout lead?", ["EXECUTING", SECRET_ANSWER, "FAILED"], SECRET_ANSWER, SECRET_WHY)


def test_nothing_reveals_the_answer_before_a_checked_choice():
    p = make()
    bundle, metadata = p._repr_mimebundle_()
    assert metadata == {OUTPUT_KEY: {"reveal": True}}
    assert FALLBACK in bundle["text/plain"]
    assert SECRET_WHY not in bundle["text/plain"] and "answer is" not in bundle["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert SECRET_WHY not in everything_shown(p.box)
    assert p.check() is None  # pressing check without a choice reveals nothing
    assert SECRET_WHY not in everything_shown(p.box) and "The answer is" not in everything_shown(p.box)


def test_the_button_reveals_answer_and_explanation_after_a_choice():
    p = make()
    p.picker.value = "FAILED"
    p.button.click()
    assert "Not quite" in p.reveal.value and SECRET_ANSWER in p.reveal.value
    assert html_escaped(SECRET_WHY) in p.reveal.value
    p.picker.value = SECRET_ANSWER
    assert p.check() is True and "Right." in p.reveal.value


def guards(p: Prediction) -> list[str]:
    """The scripts the box carries for JupyterLab (in hidden Output widgets)."""
    return [o["data"]["application/javascript"] for w in p.box.children if isinstance(w, widgets.Output)
            for o in w.outputs if "application/javascript" in o["data"]]


def test_the_box_carries_the_guard_and_marks_itself_answered_only_after_a_checked_choice():
    p = make()
    assert guards(p) == [GUARD_JS] and "labkit-predict" in p.box._dom_classes
    assert ANSWERED_CLASS in GUARD_JS  # the script waits for the class the kernel sets
    p.check()  # no choice yet
    assert ANSWERED_CLASS not in p.box._dom_classes
    p.picker.value = "FAILED"
    p.button.click()
    assert ANSWERED_CLASS in p.box._dom_classes


def test_a_prediction_without_a_reveal_carries_no_guard_and_says_so():
    p = predict("Where does timeout lead?", ["EXECUTING", SECRET_ANSWER], SECRET_ANSWER, SECRET_WHY, reveal=False)
    assert guards(p) == []
    assert p._repr_mimebundle_()[1] == {OUTPUT_KEY: {"reveal": False}}


def html_escaped(text: str) -> str:
    import html

    return html.escape(text)


def test_a_prediction_whose_answer_is_not_a_choice_is_refused():
    with pytest.raises(LabkitError, match="not one of its choices"):
        predict("q", ["a", "b"], "c", "")
    with pytest.raises(LabkitError, match="two different choices"):
        predict("q", ["a", "a"], "a", "")


def quiz() -> Quiz:
    events = [1, 2, 3]
    return Quiz([
        Choice("Which state ends a run that cannot know?", ["FAILED", "UNKNOWN", "SUCCEEDED"], "UNKNOWN",
               "only a status query can settle it"),
        CodeLine("How many events are there?", lambda v: v == len(events), hint="count the list"),
        CodeLine("Write a guard that is true when retries are left (max 2).",
                 lambda g: g({"retries": 0}) and g({"retries": 1}) and not g({"retries": 2}),
                 hint="compare the state's count with the limit"),
    ], namespace={"events": events})


def test_right_answers_are_accepted():
    feedback = quiz().check(["UNKNOWN", "len(events)", "lambda s: s['retries'] < 2"])
    assert [f.right for f in feedback] == [True, True, True]
    assert "status query" in feedback[0].message


@pytest.mark.parametrize("answers, number", [
    ({1: "FAILED"}, 1),
    ({1: "unknown"}, 1),  # not one of the choices
    ({2: "len(events) + 1"}, 2),
    ({2: "undefined_name"}, 2),  # the error is feedback
    ({2: "len(events"}, 2),  # a syntax error too
    ({3: "lambda s: s['retries'] <= 2"}, 3),  # off by one: allows a third retry
    ({3: "lambda s: True"}, 3),
    ({3: "3"}, 3),  # not callable: wrong, not a crash
])
def test_wrong_answers_are_refused_without_giving_the_answer(answers, number):
    feedback = quiz().check(answers)[number - 1]
    assert not feedback.right
    assert "status query" not in feedback.message and "len(events)" not in feedback.message
    assert "retries'] < 2" not in feedback.message


def test_unanswered_questions_are_not_right_and_bad_numbers_are_named():
    assert [f.right for f in quiz().check({})] == [False, False, False]
    with pytest.raises(LabkitError, match=r"not \[4\]"):
        quiz().check({4: "x"})


def test_the_quiz_widget_judges_what_was_typed_and_hides_answers_until_then():
    q = quiz()
    assert "UNKNOWN" in repr(q)  # the choices are listed...
    assert "status query" not in everything_shown(q.box)  # ...but no explanation before checking
    q._inputs[0].value = "UNKNOWN"
    q._inputs[1].value = "len(events) - 1"
    q.button.click()
    assert "right" in q._feedback[0].value and "status query" in q._feedback[0].value
    assert "not yet" in q._feedback[1].value
    assert "no answer yet" in q._feedback[2].value
