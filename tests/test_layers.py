"""Layered machines: layers, declared routers, cross-layer rules, the lifecycle view, abort.

Each of the seed's three traps has a pair of tests: with the rule switched off the bad outcome
happens (so the test would fail without the rule), with it on the outcome is caught and recorded.
"""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path
from typing import Literal

import pytest

from labkit import EventLog, JsonlLog, TableError, load_events
from labkit.cli import main
from labkit.core.events import InvariantViolated, event_types
from labkit.core.reducer import ReplayDivergence
from labkit.layers import (
    AbortRequested,
    Graph,
    Layer,
    LayeredMachine,
    LayerMoved,
    LoopStopped,
    ModelCalled,
    MoveRefused,
    Node,
    Router,
    RouteRefused,
    ToolCalled,
    calls_after_abort,
    declared_keys,
    replay_layers,
)
from labkit.layers.writing import (
    FLOW_WHITELIST,
    AbortDuringCall,
    flow_layer,
    job_params,
    lifecycle_view,
    phase_layer,
    scripted_writer,
    writing_nodes,
    writing_spec,
)

TOPICS = ("the storm", "the lighthouse", "the morning after")


def _machine(spec=None, model=None, log=None, **switches) -> LayeredMachine:
    ticks = iter(range(1_000_000))
    return LayeredMachine(spec or writing_spec(), model=model or scripted_writer(), log=log,
                          clock=lambda: float(next(ticks)), params=job_params("Harbour", TOPICS), **switches)


def _of(machine: LayeredMachine, kind: type) -> list:
    return [e for e in machine.events if isinstance(e, kind)]


# ------------------------------------------------------------------ layers
def test_a_forward_only_layer_refuses_a_backward_row_when_built():
    rows = [("INIT", "go", "WRITING"), ("WRITING", "back", "INIT"), ("WRITING", "done", "COMPLETE")]
    with pytest.raises(TableError) as err:
        Layer.build("phase", ["INIT", "WRITING", "COMPLETE"], rows, "INIT", ["COMPLETE"],
                    order=["INIT", "WRITING", "COMPLETE"])
    assert err.value.problems == ["row (WRITING, back -> INIT) moves backward in forward-only layer 'phase' "
                                  "(WRITING is #2, INIT is #1 of INIT < WRITING < COMPLETE)"]
    # the same rows without the declared order build: the order is what forbids going back
    assert Layer.build("phase", ["INIT", "WRITING", "COMPLETE"], rows, "INIT", ["COMPLETE"]).order is None


def test_a_forward_only_order_must_list_every_state_and_layers_take_no_guards():
    with pytest.raises(TableError, match="must list each state once"):
        Layer.build("p", ["A", "B"], [("A", "go", "B")], "A", ["B"], order=["A"])
    with pytest.raises(TableError, match="take no guards"):
        Layer.build("p", ["A", "B"], [("A", "go", "B", "ready")], "A", ["B"])


def test_moves_are_asked_for_by_destination_and_refused_with_a_reason():
    phase, flow = phase_layer(), flow_layer()
    assert phase.row_to("OUTLINE", "WRITING").event == "write"
    assert "only moves forward" in phase.row_to("WRITING", "OUTLINE").reason
    assert flow.row_to("REWRITING", "REVIEWING").reason == (
        "layer 'flow' has no row REWRITING -> REVIEWING; from REWRITING it may go to: STEERING, WRITING")
    assert "not a state" in flow.row_to("IDLE", "DREAMING").reason


def test_steering_is_reachable_from_every_other_flow_state():
    flow = flow_layer()
    assert all(not hasattr(flow.row_to(s, "STEERING"), "reason") for s in FLOW_WHITELIST if s != "STEERING")


# ------------------------------------------------------------------ routers
class Verdict(enum.Enum):
    ACCEPT = "accept"
    REDO = "redo"


def test_router_keys_are_read_from_a_literal_or_an_enum_and_must_be_declared():
    def literal(state) -> Literal["a", "b"]:
        return "a"

    def by_enum(state) -> Verdict:
        return Verdict.REDO

    def undeclared(state) -> str:
        return "a"

    assert declared_keys(literal) == ("a", "b")
    assert declared_keys(by_enum) == ("accept", "redo")
    assert Router.declare(by_enum, {"accept": "x", "redo": "y"}).choose(None) == "redo"
    with pytest.raises(TableError, match="declare its possible keys"):
        declared_keys(undeclared)


def _tiny_graph(routes: dict[str, str]) -> Graph:
    def pick(state) -> Literal["left", "right"]:
        return "left"

    nodes = [Node("start"), Node("left"), Node("right")]
    return Graph.build("tiny", nodes, {"start": Router.declare(pick, routes), "left": "end", "right": "end"},
                       "start", ["end"])


def test_a_router_map_must_cover_exactly_its_declared_keys():
    assert list(_tiny_graph({"left": "left", "right": "right"}).edges["start"].routes.items()) == \
        [("left", "left"), ("right", "right")]
    with pytest.raises(TableError) as missing:
        _tiny_graph({"left": "left"})
    assert "router pick: declared key 'right' has no entry in its map (the run would stop there)" in \
        missing.value.problems
    with pytest.raises(TableError) as extra:
        _tiny_graph({"left": "left", "right": "right", "rigth": "right"})
    assert any("maps key 'rigth', which the router never declares" in p for p in extra.value.problems)


def test_a_router_that_can_send_the_run_past_the_flow_whitelist_is_refused_at_build_time():
    # the seed's router-vs-whitelist conflict: rewrite forgets to return the flow to WRITING,
    # so its edge to review would need REWRITING -> REVIEWING, which the whitelist forbids
    nodes = [n if n.name != "rewrite" else dataclasses.replace(n, leaves={}) for n in writing_nodes()]
    with pytest.raises(TableError) as err:
        writing_spec(nodes=nodes)
    assert err.value.problems == [
        "edge rewrite -> review (a fixed edge): rewrite leaves flow in REWRITING, review needs REVIEWING, and "
        "layer 'flow' has no row REWRITING -> REVIEWING; from REWRITING it may go to: STEERING, WRITING"]


# ------------------------------------------------------------------ a whole run
def test_the_scripted_writer_takes_every_branch_and_completes():
    m = _machine()
    assert m.lifecycle == "idle"
    assert m.run() == "completed"
    assert m.layers == {"phase": "COMPLETE", "flow": "IDLE", "writing": "done"}
    nodes = [e.dest for e in _of(m, LayerMoved) if e.layer == "writing"]
    assert {"rewrite", "polish", "checkpoint"} <= set(nodes)
    assert len(m.state.memo["sections"]) == len(TOPICS)
    assert [e.args["index"] for e in _of(m, ToolCalled) if e.tool == "save_section"] == [0, 1, 2]
    assert [e.reason for e in _of(m, LoopStopped)] == ["finished"]
    phases = [e.dest for e in _of(m, LayerMoved) if e.layer == "phase"]
    assert phases == ["PREMISE", "OUTLINE", "WRITING", "COMPLETE"]


def test_replay_rebuilds_every_live_state_and_the_lifecycle_from_the_log(tmp_path: Path):
    m = _machine(log=JsonlLog(tmp_path / "run.jsonl"))
    m.run()
    events = load_events(tmp_path / "run.jsonl")
    result = replay_layers(events, writing_spec())
    assert result.state == m.state and not result.violations
    assert lifecycle_view(result.state) == m.lifecycle == "completed"


def test_replay_refuses_a_move_that_is_not_a_row_of_its_layer():
    m = _machine()
    m.run()
    log = EventLog()
    for event in m.events:
        if isinstance(event, LayerMoved) and event.layer == "flow" and event.dest == "REVIEWING":
            event = event.model_copy(update={"dest": "POLISHING"})  # an invented move, re-sealed
        log.append(event.model_copy(update={"hash": "", "seq": -1, "prev_hash": ""}), at=event.at)
    with pytest.raises(ReplayDivergence, match="--review--> POLISHING, which is not a row of layer 'flow'"):
        replay_layers(log.events, writing_spec())


# ------------------------------------------------------------------ the lifecycle is a view
def test_the_lifecycle_cannot_be_written_through_the_api():
    m = _machine()
    with pytest.raises(AttributeError):
        m.lifecycle = "completed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.state.running = False  # type: ignore[misc]
    assert "lifecycle" not in {f.name for f in dataclasses.fields(m.state)}
    assert not any("lifecycle" in cls.model_fields for cls in event_types().values())
    m.run()
    assert m.lifecycle == "completed"


def test_abort_outside_a_running_loop_records_nothing():
    m = _machine()
    assert m.abort("too early") is False
    assert not _of(m, AbortRequested)


# ------------------------------------------------------------------ trap 1: layers that disagree
def test_trap_layers_disagree_without_the_rule_the_run_reports_completed_with_a_review_open():
    m = _machine(writing_spec("skip_checkpoint"), check_rules=False)
    assert m.run() == "completed"
    assert m.layers["phase"] == "COMPLETE" and m.layers["flow"] == "REVIEWING"
    assert len(m.state.memo["sections"]) == len(TOPICS) - 1  # the last section was never saved


def test_trap_layers_disagree_with_the_rule_the_step_is_recorded_and_the_run_paused():
    m = _machine(writing_spec("skip_checkpoint"))
    assert m.run() == "paused"
    [violation] = _of(m, InvariantViolated)
    assert violation.invariant == "complete_means_flow_idle"
    assert violation.detail.startswith("phase is COMPLETE but flow is REVIEWING")
    broke = m.events[violation.after_seq]
    assert isinstance(broke, LayerMoved) and (broke.layer, broke.dest) == ("phase", "COMPLETE")
    assert [e.reason for e in _of(m, LoopStopped)] == ["invariant"]
    with pytest.raises(Exception, match="stopped for good"):
        m.run()


# ------------------------------------------------------------------ trap 2: a router key missing from its map
def test_trap_route_typo_without_the_check_the_run_dies_mid_way():
    m = _machine(writing_spec("typo_route"), check_routes=False)
    with pytest.raises(KeyError, match="finsh"):
        m.run()
    assert not _of(m, LoopStopped)  # nothing says why the run ended
    assert m.lifecycle == "running"  # and the view still claims it is working


def test_trap_route_typo_with_the_check_is_a_recorded_error_event():
    m = _machine(writing_spec("typo_route"))
    assert m.run() == "paused"
    [refused] = _of(m, RouteRefused)
    assert (refused.router, refused.node, refused.key) == ("route_after_checkpoint_typo", "checkpoint", "finsh")
    assert refused.declared == ["next", "finish"]
    assert [e.reason for e in _of(m, LoopStopped)] == ["route_refused"]
    assert len(m.state.memo["sections"]) == len(TOPICS)  # everything written before it is kept


# ------------------------------------------------------------------ trap 3: an abort the inner loop ignores
def _aborting(**switches) -> LayeredMachine:
    holder: list[LayeredMachine] = []
    model = AbortDuringCall(scripted_writer(), at_call=2, abort=lambda: holder[0].abort("user clicked stop"))
    holder.append(_machine(model=model, **switches))
    return holder[0]


def test_trap_abort_without_checkpoints_the_lifecycle_pauses_but_the_model_keeps_being_called():
    m = _aborting(abort_checkpoints=False)
    m.run()
    after = calls_after_abort(m.events)
    assert after["abort_seq"] >= 0
    assert m.lifecycle == "paused"
    assert after["model_calls"] > 0 and after["tool_calls"] > 0


def test_trap_abort_with_checkpoints_no_call_begins_after_the_abort():
    m = _aborting()
    assert m.run() == "paused"
    assert calls_after_abort(m.events) == {"abort_seq": _of(m, AbortRequested)[0].seq,
                                           "model_calls": 0, "tool_calls": 0}
    assert len(_of(m, ModelCalled)) == 2  # the call in flight when the abort came completed and is recorded
    assert [e.reason for e in _of(m, LoopStopped)] == ["aborted"]
    assert m.run() == "completed"  # starting again is the user's decision; the run goes on from its layers


# ------------------------------------------------------------------ run-time refusals
def test_a_backward_phase_move_at_run_time_is_refused_and_recorded():
    # 'middle' declares no phase, so the build cannot see that 'back' would go backward
    nodes = [Node("ahead", enters={"phase": "WRITING"}), Node("middle"), Node("back", enters={"phase": "OUTLINE"})]
    graph = Graph.build("w", nodes, {"ahead": "middle", "middle": "back", "back": "end"}, "ahead", ["end"],
                        [phase_layer()])
    from labkit.layers import LayeredSpec
    from labkit.layers.writing import lifecycle_layer, writing_rules

    spec = LayeredSpec.build("w", [phase_layer(), flow_layer()], graph, writing_rules(), lifecycle_view,
                             lifecycle_layer())
    m = LayeredMachine(spec, clock=lambda: 0.0)
    assert m.run() == "paused"
    [refused] = _of(m, MoveRefused)
    assert (refused.layer, refused.source, refused.dest) == ("phase", "WRITING", "OUTLINE")
    assert "only moves forward" in refused.reason
    assert m.layers["phase"] == "WRITING"


# ------------------------------------------------------------------ the command line
def test_labkit_diagram_draws_one_subgraph_per_layer(capsys):
    assert main(["diagram", "writing", "--current", "phase:WRITING,flow:REVIEWING"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("flowchart TB")
    for layer in ("phase", "flow", "writing", "lifecycle"):
        assert f"subgraph {layer} [" in out
    assert "phase_COMPLETE -.->|rule complete_means_flow_idle| flow_IDLE" in out
    assert "writing_review -->|route_after_review: rewrite| writing_rewrite" in out
    assert "class phase_WRITING,flow_REVIEWING current" in out


def test_labkit_replay_reads_a_layered_log(tmp_path: Path, capsys):
    m = _machine(log=JsonlLog(tmp_path / "run.jsonl"))
    m.run()
    assert main(["replay", str(tmp_path / "run.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "table writing" in out and "'phase': 'COMPLETE'" in out


def test_an_abort_from_another_thread_stops_the_loop_before_its_next_call():
    import threading

    m = _machine(model=scripted_writer(delay=0.05))
    clicker = threading.Timer(0.12, lambda: m.abort("clicked from another thread"))
    clicker.start()
    lifecycle = m.run()
    clicker.join()
    assert _of(m, AbortRequested), "the timer fired after the run finished; the machine is too fast for this test"
    assert lifecycle == "paused"
    assert calls_after_abort(m.events)["model_calls"] == calls_after_abort(m.events)["tool_calls"] == 0


def test_a_view_that_returns_an_unknown_lifecycle_is_a_broken_rule():
    spec = dataclasses.replace(writing_spec(), view=lambda state: "sleeping")
    m = _machine(spec)
    [violation] = _of(m, InvariantViolated)  # found on the very first event
    assert (violation.invariant, violation.after_seq) == ("lifecycle_is_a_known_state", 0)
    with pytest.raises(Exception, match="stopped for good: rule lifecycle_is_a_known_state broken"):
        m.run()


def test_the_committed_live_run_replays_exactly_from_its_cassette():
    from labkit.layers.demo import LIVE_FILES, run_demo
    from labkit.llm import ReplayBackend

    data = Path(__file__).resolve().parents[1] / "data" / "layers"
    recorded = load_events(data / LIVE_FILES["log"])
    again = run_demo(EventLog(), ReplayBackend(data / LIVE_FILES["cassette"]))
    assert [e.hash for e in again.events] == [e.hash for e in recorded]
    assert again.lifecycle == "completed" and not replay_layers(recorded, writing_spec()).violations
    provenance = __import__("json").loads((data / LIVE_FILES["provenance"]).read_text())
    assert provenance["model_sha256"] == again.model.model_id()
    assert provenance["model_calls"] == again.state.model_calls > 0
