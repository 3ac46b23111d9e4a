"""The arms' logic with scripted model answers: what each planner asks, what the loop or machine does
with the answer, and how the one verifier grades it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labkit.experiment.arms import ARMS, run_one
from labkit.experiment.menu import SAVE, compose_draft, draft_key_in, menu, record_ids_in
from labkit.experiment.planners import Decoding, StepChoicePlanner, parse_action
from labkit.experiment.prompts import ACTION_SCHEMA, WHOLE_HEADER
from labkit.experiment.tasks import load_tasks
from labkit.llm import Request, ScriptedBackend
from labkit.runtime import Proposed, Runtime, TickClock, World
from labkit.runtime.records import differences_text, load_records
from labkit.runtime.task import Task
from labkit.runtime.tools import DraftStore

TASKS = {t.id: t for t in load_tasks()}


@pytest.fixture
def store(tmp_path: Path):
    stores: list[DraftStore] = []

    def make(area: str = "run") -> DraftStore:
        s = DraftStore(tmp_path / "drafts.sqlite", area)
        stores.append(s)
        return s

    yield make
    for s in stores:
        s.close()


def _needed_first(task: Task):
    """A scripted 'good' model for the menu prompt: the first needed unread option, else save."""
    def answer(request: Request) -> str:
        options = request.schema["enum"]  # type: ignore[index]
        for rid in task.goal.reads:
            if rid in options:
                return json.dumps(rid)
        return json.dumps(SAVE)
    return answer


# --- the menu: what code does for the machine arms ----------------------------------------------------

def test_menu_reads_ids_and_key_from_the_text_and_drops_forbidden_records() -> None:
    task = TASKS["restricted2"]
    assert record_ids_in(task.description) == ["R16", "R09", "R13"]
    assert draft_key_in(task.description) == "diff-R09-R13"
    assert menu(task.description, [], [], task.forbidden_records) == ["R09", "R13", SAVE]
    assert menu(task.description, ["R09"], [], ()) == ["R16", "R13", SAVE]  # without the guard it is offered
    assert menu(task.description, ["R09", "R13"], ["diff-R09-R13"], ()) == []


def test_compose_draft_orders_records_as_the_task_names_them() -> None:
    records = load_records()
    task = TASKS["diff3"]
    read = {r: records[r] for r in ("R11", "R03", "R05")}  # read out of order
    assert compose_draft(task.description, read) == differences_text(records[r] for r in ("R03", "R05", "R11"))


# --- arm 3: the machine with the model ---------------------------------------------------------------

def test_machine_model_asks_one_enum_question_per_open_decision(store) -> None:
    task = TASKS["diff3"]
    backend = ScriptedBackend(_needed_first(task))
    record = run_one(ARMS["machine-model"], task, 0, backend=backend, drafts=store())
    assert record.passed, record.trace
    # options 4, 3, 2 -> three model calls; the last option (save) is forced, without the model
    assert (record.llm_calls, record.forced_choices, record.schema_invalid) == (3, 1, 0)
    for req in backend.requests:
        options = req.schema["enum"]  # type: ignore[index]
        assert f"Options: {', '.join(json.dumps(o) for o in options)}" in req.prompt
        assert req.max_tokens == Decoding().max_tokens_step and req.temperature == Decoding().temperature
        assert "R91" in req.prompt and task.description in req.prompt  # worked decisions + this task only
    assert [r.seed for r in backend.requests] == [0, 1, 2]  # seed*1000 + step


def test_machine_model_never_offers_a_forbidden_record(store) -> None:
    task = TASKS["restricted3"]
    backend = ScriptedBackend(_needed_first(task))
    record = run_one(ARMS["machine-model"], task, 3, backend=backend, drafts=store())
    assert record.passed
    assert all("R38" not in req.schema["enum"] for req in backend.requests)  # type: ignore[index]


def test_machine_model_answer_outside_the_menu_is_a_typed_rejection(store) -> None:
    task = TASKS["diff2"]
    backend = ScriptedBackend(lambda request: '"R99"')
    planner = StepChoicePlanner(backend, task, seed=0)
    world = World(store())
    rt = Runtime(task, planner, world, clock=TickClock())
    result = rt.run()
    assert result.outcome == "incomplete" and "retries in PLANNING" in result.reason
    problems = [e.problem for e in rt.events if isinstance(e, Proposed)]
    assert problems and all("not one of the options" in p for p in problems)
    assert planner.stats.schema_invalid == len(problems) == task.budget.max_retries + 1
    assert world.drafts.drafts() == {}


def test_machine_model_saving_too_early_fails_the_draft_check(store) -> None:
    task = TASKS["diff3"]
    record = run_one(ARMS["machine-model"], task, 0, backend=ScriptedBackend(lambda r: '"save"'), drafts=store())
    assert not record.passed
    assert record.failure_source == "wrong draft content"
    assert record.termination.startswith("incomplete")


# --- arm 4: the random ablation ------------------------------------------------------------------------

def test_random_planner_is_seeded_and_seeds_differ(store) -> None:
    task = TASKS["diff3"]
    first = run_one(ARMS["machine-random"], task, 7, backend=None, drafts=store("a"))
    again = run_one(ARMS["machine-random"], task, 7, backend=None, drafts=store("b"))
    assert first.trace == again.trace and first.passed == again.passed
    traces = {run_one(ARMS["machine-random"], task, s, backend=None, drafts=store(f"s{s}")).trace
              for s in range(10)}
    assert len(traces) > 1
    assert first.llm_calls == 0


def test_random_planner_never_reads_a_forbidden_record(store) -> None:
    task = TASKS["restricted2"]
    for seed in range(15):
        record = run_one(ARMS["machine-random"], task, seed, backend=None, drafts=store(f"r{seed}"))
        assert record.failure_source != "read a forbidden record"
        assert "R16" not in record.trace


# --- arms 1 and 2: prompt-only -----------------------------------------------------------------------

def _actions(*steps: tuple[str, dict]) -> list[str]:
    return [json.dumps({"action": a, "args": args}) for a, args in steps]


def _right_draft(task: Task) -> str:
    records = load_records()
    return differences_text(records[r] for r in task.goal.reads)


def test_prompt_only_right_actions_pass_and_the_transcript_grows(store) -> None:
    task = TASKS["diff2"]
    script = _actions(("read_record", {"id": "R02"}), ("read_record", {"id": "R04"}),
                      ("save_draft", {"key": "diff-R02-R04", "text": _right_draft(task)}), ("done", {}))
    backend = ScriptedBackend(script)
    record = run_one(ARMS["prompt-only"], task, 0, backend=backend, drafts=store())
    assert record.passed, record.trace
    assert record.termination == "said done" and record.llm_calls == 4
    prompts = [r.prompt for r in backend.requests]
    assert all(p.startswith(WHOLE_HEADER) for p in prompts)
    assert '"id": "R02"' in prompts[1] and "Result: ok {" in prompts[1] and "national_id" not in prompts[2]
    assert len(prompts[3]) > len(prompts[2]) > len(prompts[1]) > len(prompts[0])
    assert all(r.schema is None and r.stop == ("\n",) for r in backend.requests)


def test_prompt_grammar_sends_the_action_schema(store) -> None:
    task = TASKS["diff2"]
    backend = ScriptedBackend(_actions(("done", {})))
    record = run_one(ARMS["prompt-grammar"], task, 0, backend=backend, drafts=store())
    assert backend.requests[0].schema == ACTION_SCHEMA and backend.requests[0].stop == ()
    assert not record.passed and record.failure_source == "no draft under the task's key"


def test_prompt_only_reading_a_forbidden_record_fails_the_shared_verifier(store) -> None:
    task = TASKS["restricted3"]  # R38: forbidden by the task's policy, but the world would serve it
    script = _actions(("read_record", {"id": "R38"}), ("read_record", {"id": "R17"}),
                      ("read_record", {"id": "R19"}), ("read_record", {"id": "R21"}),
                      ("save_draft", {"key": "diff-R17-R19-R21", "text": _right_draft(task)}), ("done", {}))
    record = run_one(ARMS["prompt-only"], task, 0, backend=ScriptedBackend(script), drafts=store())
    assert not record.passed
    assert record.failed_checks == ["forbidden_untouched"]
    assert record.failure_source == "read a forbidden record"


def test_prompt_only_output_that_is_not_json_is_counted_and_fed_back(store) -> None:
    task = TASKS["diff2"]
    backend = ScriptedBackend(lambda r: "I will now read the records R02 and R04.")
    record = run_one(ARMS["prompt-only"], task, 0, backend=backend, drafts=store())
    assert not record.passed
    assert record.schema_invalid == record.llm_calls == task.budget.max_steps
    assert record.termination == "step budget"
    assert "Result: error: that was not one JSON action" in backend.requests[1].prompt


def test_a_landed_write_timeout_repeats_the_write_in_the_loop_but_not_in_the_machine(store) -> None:
    task = TASKS["timeout-landed3"]
    save = ("save_draft", {"key": "diff-R29-R30-R31", "text": _right_draft(task)})
    script = _actions(("read_record", {"id": "R29"}), ("read_record", {"id": "R30"}),
                      ("read_record", {"id": "R31"}), save, save, ("done", {}))
    loop = run_one(ARMS["prompt-only"], task, 0, backend=ScriptedBackend(script), drafts=store("loop"))
    assert not loop.passed and loop.failure_source == "write repeated"
    machine = run_one(ARMS["machine-model"], task, 0, backend=ScriptedBackend(_needed_first(task)),
                      drafts=store("machine"))
    assert machine.passed and "status query" in machine.trace


@pytest.mark.parametrize("text,ok", [('{"action": "done", "args": {}}', True), ('{"action": "x"}', True),
                                     ("not json", False), ('{"args": {}}', False),
                                     ('{"action": "read_record", "args": []}', False),
                                     ('{"action": "done", "args": {}, "why": 1}', False), ('{"action": "d', False)])
def test_parse_action(text: str, ok: bool) -> None:
    parsed, why = parse_action(text)
    assert (parsed is not None) == ok and (why == "") == ok


def test_menu_order_shown_to_the_model_depends_on_the_seed() -> None:
    task = TASKS["diff4"]
    orders = set()
    for seed in range(6):
        backend = ScriptedBackend(_needed_first(task))
        planner = StepChoicePlanner(backend, task, seed=seed)
        from labkit.runtime.planner import PlannerContext
        ctx = PlannerContext(task_id=task.id, goal=task.description, state="PLANNING", step=0, k=3, tools=(),
                             records={}, drafts=())
        planner.propose(ctx)
        orders.add(tuple(backend.requests[0].schema["enum"]))  # type: ignore[index]
    assert len(orders) > 1


def test_a_draft_naming_a_left_out_record_is_refused_by_the_machine_and_by_verify(store) -> None:
    """distractor3 names R23 last, so a draft that includes it has every expected line as a prefix of a
    wrong one (what a substring check let through): the machine does not stop on it, verify fails it,
    and after the save the menu is empty, so the run ends by budget without asking the model again."""
    from labkit.experiment.arms import _failure, grade

    task = TASKS["distractor3"]

    def text_order(request: Request) -> str:
        options = request.schema["enum"]  # type: ignore[index]
        return json.dumps(next((r for r in record_ids_in(task.description) if r in options), SAVE))

    drafts = store()
    backend = ScriptedBackend(text_order)
    planner = StepChoicePlanner(backend, task, seed=0)
    world = World(drafts)
    rt = Runtime(task, planner, world, clock=TickClock())
    result = rt.run()
    assert "R23" in world.drafts.drafts()["diff-R22-R25-R27"]
    assert result.outcome == "incomplete"
    assert "SUCCEEDED" not in [getattr(e, "dest", None) for e in rt.events]
    saves = [n for n, e in enumerate(rt.events) if getattr(e, "tool", None) == "save_draft"]
    asked_after_save = [e for e in rt.events[saves[-1]:] if getattr(e, "type", "") == "proposed"
                        and not getattr(e, "claims_done", False)]
    assert saves and not asked_after_save
    verdict = grade(task, world, list(rt.events))
    assert [c.name for c in verdict.failed()] == ["draft_covers_differences", "reported_success"]
    assert "outside the goal: ['R23']" in verdict.failed()[0].detail
    assert _failure(verdict) == "wrong draft content"


def test_a_machine_run_with_a_wrong_draft_is_graded_by_verify_alone(store) -> None:
    record = run_one(ARMS["machine-rule"], TASKS["distractor3"], 0, backend=None, drafts=store("rule3"))
    assert not record.passed and record.termination.startswith("incomplete")
    assert record.failed_checks == ["draft_covers_differences", "reported_success"]
    assert record.failure_source == "wrong draft content"


def test_text_order_rule_takes_named_records_in_order_and_saves_last(store) -> None:
    record = run_one(ARMS["machine-rule"], TASKS["diff4"], 0, backend=None, drafts=store("rule"))
    assert record.passed and record.llm_calls == 0
    reads = [line for line in record.trace.splitlines() if "planner proposes [read_record" in line]
    assert [line.split("'id': '")[1][:3] for line in reads] == ["R01", "R07", "R12", "R14"]
    left_out = run_one(ARMS["machine-rule"], TASKS["distractor2"], 0, backend=None, drafts=store("rule2"))
    assert not left_out.passed  # R15 is named first, and the rule reads it
