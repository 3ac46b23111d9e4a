"""The trace viewer: pure step views and renderers, and the widget that wires them up."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pydantic import BaseModel

from labkit import (
    EventLog,
    Invariant,
    LabkitError,
    LabMachine,
    MachineState,
    Row,
    Transitioned,
    load_events,
    replay,
)
from labkit.core.examples import ticket_guards, ticket_invariants, ticket_table
from labkit.course.viewer import (
    Trace,
    compare_states,
    format_value,
    render_answer,
    render_html,
    render_markdown,
    render_question,
    render_state,
    render_text,
    render_timeline,
    run_view,
    state_fields,
)


@pytest.fixture
def run() -> LabMachine:
    m = LabMachine(ticket_table(), guards=ticket_guards(), invariants=ticket_invariants(), clock=lambda: 0.0)
    m.fire("triage")
    m.fire("start")
    m.fire("resolve", fix_note="replaced the toner")
    return m


def test_the_states_are_the_replayed_ones(run):
    trace = Trace.from_catalog(run.events)
    assert list(trace.states) == list(replay(run.events).states) == run.states
    assert trace.statuses() == ["NEW", "TRIAGED", "IN_PROGRESS", "RESOLVED"]
    assert trace.state_before(0) == MachineState()


def test_a_step_shows_the_event_the_states_around_it_and_what_changed(run):
    view = Trace.from_catalog(run.events).step(3)
    assert view.description == "#3 IN_PROGRESS --resolve--> RESOLVED {'fix_note': 'replaced the toner'}"
    assert view.before == run.states[2] and view.after == run.states[3]
    assert (view.status_before, view.status_after) == ("IN_PROGRESS", "RESOLVED")
    assert view.changed == ("status", "seq", "transitions")
    first = view.fields[0]
    assert (first.name, first.before, first.after) == ("status", "'IN_PROGRESS'", "'RESOLVED'")
    assert [str(c) for c in view.checks] == ["✓ closed_only_after_resolved"]
    assert view.diagram.endswith("    class RESOLVED current\n")


def test_the_first_step_starts_from_the_empty_state(run):
    view = Trace.from_catalog(run.events).step(0)
    assert view.status_before is None and view.status_after == "NEW"
    assert "class NEW current" in view.diagram
    assert Trace.from_catalog(run.events).step(-1).index == 3


def test_a_broken_invariant_is_shown_with_its_detail():
    # hand-built: a log that jumps from TRIAGED to CLOSED through a shortcut row
    table = ticket_table()
    shortcut = dataclasses.replace(table, rows=(*table.rows, Row("TRIAGED", "close", "CLOSED")))
    m = LabMachine(shortcut, guards=ticket_guards(), clock=lambda: 0.0)  # no live invariants
    m.fire("triage")
    m.fire("close")
    view = Trace(m.events, shortcut, invariants=ticket_invariants()).step(2)
    assert view.broken and view.broken[0].name == "closed_only_after_resolved"
    assert "✗ closed_only_after_resolved: the ticket was closed without passing through RESOLVED" in render_text(view)
    assert "- ✗ `closed_only_after_resolved`: the ticket was closed" in render_markdown(view)


def test_a_check_that_crashes_counts_as_broken(run):
    def crashes(state, events):
        raise KeyError("missing")

    view = Trace(run.events, ticket_table(), invariants=[Invariant("crashes", crashes)]).step(1)
    assert not view.checks[0].holds and "raised KeyError" in view.checks[0].detail


def test_the_question_does_not_give_the_answer_away(run):
    view = Trace.from_catalog(run.events).step(2)
    question, answer = render_question(view), render_answer(view)
    assert "event: #2 'start' arrives in TRIAGED (where does it lead?)" in question
    assert "'TRIAGED'" in question and "IN_PROGRESS" not in question
    assert answer.splitlines()[0] == "after step 2: status TRIAGED → IN_PROGRESS"
    assert answer.splitlines()[1] == "* status       'TRIAGED'  →  'IN_PROGRESS'"
    assert "table" not in answer  # unchanged fields are left out of the answer


def test_markdown_holds_the_table_and_a_mermaid_block(run):
    md = render_markdown(Trace.from_catalog(run.events).step(2))
    assert "| status | 'TRIAGED' | **'IN_PROGRESS'** |" in md
    assert "| table | 'ticket' | 'ticket' |" in md
    assert "```mermaid\nstateDiagram-v2\n" in md and "class IN_PROGRESS current\n```" in md


def test_html_escapes_what_it_shows(run):
    page = render_html(Trace.from_catalog(run.events).step(3))
    assert "--resolve--&gt; RESOLVED {&#x27;fix_note&#x27;" in page
    assert "<tr style=\"background:#fff3c4\"><td><code>status</code></td>" in page
    assert "<script" not in page


def test_the_timeline_lists_every_event_with_its_status(run):
    lines = render_timeline(Trace.from_catalog(run.events)).splitlines()
    assert len(lines) == 4
    assert lines[2] == "IN_PROGRESS  #2 TRIAGED --start--> IN_PROGRESS"


def test_a_tampered_log_can_still_be_looked_at(run):
    # replay() refuses this log (the reordered transition does not leave the replayed state);
    # the viewer shows what it says, so the learner can see why.
    events = [run.events[0], run.events[2], run.events[1]]
    trace = Trace.from_catalog(events)
    assert trace.statuses() == ["NEW", "IN_PROGRESS", "TRIAGED"]


def test_values_are_shortened_and_say_how_long_they_were():
    assert format_value("abc") == "'abc'"
    assert format_value(3.0) == "3"
    long = format_value({"text": "x" * 200}, width=40)
    assert len(long) <= 40 + len(" (212 chars)") and long.endswith("… (212 chars)")
    assert format_value("a\n  b") == "'a\\n  b'"


def test_states_of_several_kinds_are_read_field_by_field():
    class Model(BaseModel):
        status: str = "A"
        count: int = 2

    assert state_fields(Model()) == {"status": "A", "count": 2}
    assert state_fields({"status": "B"}) == {"status": "B"}
    assert state_fields(7) == {"value": 7}
    rows = compare_states({"status": "A"}, {"status": "B", "extra": 1})
    assert [(r.name, r.before, r.after, r.changed) for r in rows] == [
        ("status", "'A'", "'B'", True), ("extra", "—", "1", True)]


def test_bad_requests_get_clear_errors(run):
    trace = Trace.from_catalog(run.events)
    with pytest.raises(LabkitError, match="step 9 is outside the trace"):
        trace.step(9)
    with pytest.raises(LabkitError, match="no table named 'nope'"):
        Trace.from_catalog(run.events, "nope")
    with pytest.raises(LabkitError, match="does not start with a run_started"):
        Trace.from_catalog(run.events[1:])
    with pytest.raises(LabkitError, match="no events"):
        Trace([], ticket_table())


# ------------------------------------------------------------------------------------------ the widget
def test_the_widget_redraws_when_the_slider_moves(run):
    from labkit.course.viewer_widget import view_trace

    widget = view_trace(run.events)
    assert widget.slider.max == widget.play.max == 3
    assert widget.view.index == 0
    widget.slider.value = 2
    assert widget.view.index == 2
    shown = widget.output.outputs[0]["data"]
    assert shown["text/markdown"] == render_markdown(widget.trace.step(2))
    assert shown["text/plain"].startswith("step 2 of 3: #2 TRIAGED --start--> IN_PROGRESS")
    assert widget.decision_bar.layout.display == "none"


def _waiting_table():
    from labkit import TransitionTable

    return TransitionTable.build("approval", ["WORKING", "WAITING_HUMAN", "DONE", "STOPPED"],
                                 [("WORKING", "ask", "WAITING_HUMAN"), ("WAITING_HUMAN", "approved", "DONE"),
                                  ("WAITING_HUMAN", "denied", "STOPPED")],
                                 initial="WORKING", terminal=["DONE", "STOPPED"])


def test_a_run_waiting_for_a_person_gets_approve_and_deny_buttons():
    from labkit.course.viewer_widget import TraceWidget

    table = _waiting_table()
    machine = LabMachine(table, log=EventLog("r"), clock=lambda: 0.0)
    machine.fire("ask")
    asked: list[bool] = []

    def decide(approved: bool):
        asked.append(approved)
        machine.fire("approved" if approved else "denied")
        return list(machine.events)

    widget = TraceWidget(Trace(machine.events, table), decide=decide)
    assert widget.decision_bar.layout.display == "none"  # step 0 is not the waiting step
    widget.slider.value = 1
    assert widget.waiting and widget.decision_bar.layout.display is None and not widget.approve.disabled
    widget.deny.click()
    assert asked == [False]
    assert widget.slider.max == 2 and widget.view.index == 2 and widget.view.status_after == "STOPPED"
    assert widget.decision_bar.layout.display == "none"
    assert widget.message.value == "denied: the run went on to step 2"
    widget.approve.click()  # no longer waiting: nothing happens
    assert asked == [False]


def test_without_a_decision_api_the_buttons_stay_hidden():
    from labkit.course.viewer_widget import TraceWidget

    table = _waiting_table()
    machine = LabMachine(table, clock=lambda: 0.0)
    machine.fire("ask")
    widget = TraceWidget(Trace(machine.events, table), start=1)
    assert widget.waiting and widget.decision_bar.layout.display == "none"



def test_a_focus_shows_only_the_named_fields(run):
    trace = Trace.from_catalog(run.events, focus=["status", "transitions"])
    view = trace.step(1)
    assert [f.name for f in view.fields] == ["status", "transitions"]
    assert view.changed == ("status", "transitions")
    question = render_question(view)
    assert "seq" not in question and "  transitions  0" in question


def test_nested_dataclasses_show_only_what_differs_from_their_defaults():
    @dataclasses.dataclass(frozen=True)
    class Inner:
        tool: str = ""
        attempts: int = 0
        open: bool = False

    assert format_value(Inner(tool="read_record", attempts=2)) == "Inner(tool='read_record', attempts=2)"
    assert format_value(Inner()) == "Inner()"


# ------------------------------------------------------------------------- the planner–executor traces
TRACES = Path(__file__).resolve().parent.parent / "data" / "traces"


def _runtime_trace(name: str) -> Trace:
    from labkit.runtime import describe_event

    return Trace.from_catalog(load_events(TRACES / f"{name}.jsonl"), project=run_view,
                              describe=lambda e: f"#{e.seq} {describe_event(e)}")


def test_a_shipped_trace_is_viewed_with_the_runtime_s_table_reducer_and_invariants():
    trace = _runtime_trace("write_timeout_unknown")
    assert trace.table.name == "planner_executor"
    assert [c.name for c in trace.step(0).checks] == [
        "executed_implies_validated", "committed_implies_observed", "single_side_effect"]
    assert list(trace.states) == list(replay(trace.events, trace.reduce, trace.empty).states)
    assert all(c.holds for i in range(len(trace)) for c in trace.step(i).checks)


def test_the_write_timeout_goes_to_unknown_and_the_question_hides_it():
    trace = _runtime_trace("write_timeout_unknown")
    [timeout] = trace.find(lambda e: isinstance(e, Transitioned) and e.trigger == "timeout")
    view = trace.step(timeout)
    assert (view.status_before, view.status_after) == ("EXECUTING", "UNKNOWN")
    question = render_question(view)
    assert "'timeout' arrives in EXECUTING (where does it lead?)" in question and "UNKNOWN" not in question
    assert "save_draft(write)" in question and "last=timeout" in question
    assert "class UNKNOWN current" in view.diagram


def test_a_read_timeout_stays_in_executing_and_is_retried():
    trace = _runtime_trace("read_timeout")
    [timeout] = trace.find(lambda e: isinstance(e, Transitioned) and e.trigger == "timeout")
    view = trace.step(timeout)
    assert (view.status_before, view.status_after) == ("EXECUTING", "EXECUTING")
    retry = trace.step(timeout + 1)
    assert retry.description.startswith(f"#{timeout + 1} executor calls read_record for a2 (attempt 2)")
    action = {f.name: f.after for f in retry.fields}["action"]
    assert action == "'a2 read_record, attempts=2, call open, last=timeout'"


def test_a_violated_runtime_invariant_shows_up_in_the_view():
    # a ToolCalled whose arguments were never validated, appended by hand to the normal trace's prefix
    from labkit.runtime import ToolCalled

    events = list(load_events(TRACES / "normal_success.jsonl"))[:7]  # up to VALIDATING --allowed--> EXECUTING
    log = EventLog(events[0].run_id)
    for event in events:
        log.append(event.model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}), at=event.at)
    log.append(ToolCalled(action_id="a1", attempt=1, tool="read_record", args_sha256="0" * 64,
                          policy_version="policy-1", side_effect=False))
    view = Trace.from_catalog(list(log.events), project=run_view).step(-1)
    assert [c.name for c in view.broken] == ["executed_implies_validated"]
    assert "read_record was about to run with arguments 000000000000" in view.broken[0].detail


def test_the_widget_approves_a_paused_run_through_the_runtime(tmp_path):
    from labkit.course.viewer_widget import decide_with, view_trace
    from labkit.runtime import TASKS, DraftStore, Runtime, TickClock, World

    world = World(DraftStore(tmp_path / "drafts.sqlite"))
    runtime = Runtime(TASKS["diff3-restricted"], None, world, log=EventLog("paused"), clock=TickClock(0.0))
    assert runtime.run().outcome == "paused"
    widget = view_trace(list(runtime.events), decide=decide_with(runtime), project=run_view,
                        start=len(runtime.events) - 1)
    assert widget.waiting and not widget.approve.disabled
    widget.approve.click()
    assert runtime.result().outcome == "succeeded"
    assert widget.view.index == len(runtime.events) - 1 and widget.view.status_after == "SUCCEEDED"
    assert widget.decision_bar.layout.display == "none"
    world.drafts.close()


def test_steps_are_found_by_what_happened():
    trace = _runtime_trace("argument_error")
    rejected = trace.first("validation", verdict="rejected")
    assert trace.first("transitioned", trigger="rejected") == rejected + 1
    assert render_timeline(trace, rejected, rejected + 2).splitlines()[1].startswith("PLANNING    #18 VALIDATING")
    with pytest.raises(LabkitError, match="no 'transitioned' event with trigger='timeout'"):
        trace.first("transitioned", trigger="timeout")


def test_a_state_alone_is_rendered_as_aligned_lines(run):
    assert render_state(run.state, focus=["status", "transitions"]) == "  status       'RESOLVED'\n  transitions  3"
    assert render_state(None) == "  (empty)"


def test_a_refused_attempt_reads_as_a_refusal_and_counts_no_call(tmp_path):
    """The executor checks with another key than the validator signed with: the viewer shows what happened."""
    from labkit.runtime import TASKS, DraftStore, Executor, Runtime, Signer, TickClock, World, describe_event
    from labkit.runtime.events import ExecutionRefused

    world = World(DraftStore(tmp_path / "drafts.sqlite"))
    runtime = Runtime(TASKS["diff3"], None, world, log=EventLog("refused"), clock=TickClock(0.0),
                      executor=Executor(world, Signer(b"another key"), TASKS["diff3"].policy().version))
    runtime.run()
    trace = Trace.from_catalog(list(runtime.events), project=run_view,
                               describe=lambda e: f"#{e.seq} {describe_event(e)}")
    first = trace.find(lambda e: isinstance(e, ExecutionRefused))[0]
    view = trace.step(first)
    assert "executor REFUSES read_record for a1 (bad_token; the tool did not run)" in view.description
    fields = {f.name: f for f in view.fields}
    assert fields["tool_calls"].before == fields["tool_calls"].after == "0"
    assert "attempts=0" in fields["action"].after and "call open" not in fields["action"].after
    assert not any("executor calls" in trace.step(i).description for i in range(len(trace)))
    assert world.drafts.calls() == []
