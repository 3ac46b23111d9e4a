"""The planners: the model planner's small per-state prompts and fence-tolerant parsing (scripted backend),
and a short live smoke run of the machine with the embedded model (no success figure asserted)."""

from __future__ import annotations

import json

import pytest

from labkit.llm.cassette import RecordingBackend, ReplayBackend
from labkit.llm.fake import ScriptedBackend
from labkit.repoedit.edits import EditProposal, PlanProposal
from labkit.repoedit.events import Proposed, TestsRan
from labkit.repoedit.formats import parse_proposal, strip_fence
from labkit.repoedit.machine import Limits, RepoEditRun
from labkit.repoedit.planners import EditView, ModelPlanner, OraclePlanner, PlanView
from labkit.repoedit.tasks import load_tasks, project_dir

TASKS = load_tasks()
INVENTORY = TASKS["inventory-rename"]


def test_a_fenced_answer_is_read_and_prose_is_not_json():
    assert strip_fence('```json\n{"steps": []}\n```') == '{"steps": []}'
    plan, refusal = parse_proposal('```json\n{"steps": [{"file": "a.py", "why": "x"}]}\n```', PlanProposal)
    assert plan is not None and refusal is None
    _, refusal = parse_proposal("I would change a.py", PlanProposal)
    assert refusal is not None and refusal.code == "not_json" and '"steps"' in refusal.hint
    _, refusal = parse_proposal('{"status": "maybe"}', EditProposal)
    assert refusal is not None and refusal.code == "schema_invalid"


def test_the_oracle_planner_offers_its_fix_once_and_aborts_a_fix_round():
    planner = OraclePlanner(INVENTORY)
    steps = json.loads(planner.propose_plan(PlanView("r", "", ())).raw)["steps"]
    assert [s["file"] for s in steps] == ["inventory.py", "report.py"]
    view = EditView("r", "inventory.py", "why", "text")
    assert json.loads(planner.propose_edit(view).raw)["status"] == "ok"
    assert json.loads(planner.propose_edit(view).raw)["status"] == "abort"  # offered once
    fix_round = EditView("r", "report.py", "why", "text", failure="E   AttributeError", first=False)
    assert json.loads(planner.propose_edit(fix_round).raw)["status"] == "abort"


@pytest.mark.slow
def test_the_model_planner_sends_one_state_context_per_call():
    answers = iter([
        json.dumps({"steps": [{"file": "inventory.py", "why": "rename"}, {"file": "report.py", "why": "caller"}]}),
        "```json\n" + json.dumps({"status": "ok", "edits": [{"search": "def get_qty(", "replace": "def quantity_of("}]})
        + "\n```",
        json.dumps({"status": "ok", "edits": [{"search": "inv.get_qty(", "replace": "inv.quantity_of("}]}),
    ])
    backend = ScriptedBackend(lambda request: next(answers))
    machine = RepoEditRun(project_dir(INVENTORY), INVENTORY.requirement, ModelPlanner(backend), clock=lambda: 0.0)
    machine.run()
    assert machine.state.status == "DONE" and machine.state.calls == 3
    plan_prompt, edit1, edit2 = (r.prompt for r in backend.requests)
    assert INVENTORY.requirement in plan_prompt and "Inventory.get_qty()" in plan_prompt
    assert "self._items" not in plan_prompt  # the plan sees names, not code
    assert "class Inventory" in edit1 and "def report" not in edit1  # one file per edit prompt
    assert "def report" in edit2 and "class Inventory" not in edit2
    assert all(r.schema is not None and r.temperature == 0.0 for r in backend.requests)
    assert [p.prompt for p in machine.events if isinstance(p, Proposed)] == [plan_prompt, edit1, edit2]


@pytest.mark.slow
def test_smoke_the_embedded_model_drives_the_machine_end_to_end(tmp_path, embedded_llm):
    """Live: the embedded model proposes; the run must end (DONE or FAILED) with every call recorded."""
    task = TASKS["retry-default-attempts"]
    cassette = tmp_path / "calls.jsonl"
    limits = Limits(plan_budget=1, edit_budget=1, fix_budget=0)
    planner = ModelPlanner(RecordingBackend(embedded_llm, cassette), plan_tokens=48, edit_tokens=96)
    live = RepoEditRun(project_dir(task), task.requirement, planner, limits=limits, clock=lambda: 0.0)
    live.run()
    assert live.state.status in ("DONE", "FAILED") and 1 <= live.state.calls <= 2
    assert live.state.prompt_tokens > 0
    assert isinstance(live.events[2], TestsRan)
    again = RepoEditRun(project_dir(task), task.requirement,
                        ModelPlanner(ReplayBackend(cassette), plan_tokens=48, edit_tokens=96),
                        limits=limits, clock=lambda: 0.0)
    again.run()  # from the cassette alone, the same run
    assert [e.type for e in again.events] == [e.type for e in live.events]
    assert again.state.status == live.state.status and again.state.refusals == live.state.refusals
