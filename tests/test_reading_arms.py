"""Every v2 arm on scripted answers: what it asks, what it runs, how it is graded and counted."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from labkit.llm.backend import Request
from labkit.llm.fake import ScriptedBackend
from labkit.reading import prompts, rules
from labkit.reading.arms import (
    ARMS,
    SHAPES,
    ArmInputs,
    ReadingRun,
    count_events,
    declared_prefixes,
    run_arm,
)
from labkit.reading.choosers import Decision, ModelChooser, evidence_problem
from labkit.reading.events import ModelAsked
from labkit.reading.families import oracle_draft
from labkit.reading.free import STEP_END
from labkit.reading.taskfile import (
    CompareTask,
    ExtractionTask,
    SelectionTask,
    TaskSet,
    TriageTask,
)
from labkit.runtime.events import Validation
from labkit.runtime.tools import DraftStore

_AREAS = itertools.count()


def _first(tasks: TaskSet, kind: type, pick: Any = None) -> Any:
    return next(t for t in tasks.tasks if isinstance(t, kind) and (pick is None or pick(t)))


def _run(arm: str, task: Any, dev: TaskSet, tmp_path: Path, answers: list[str] | None = None,
         seed: int = 0) -> tuple[ReadingRun, list[Any], ScriptedBackend | None]:
    backend = ScriptedBackend(answers) if answers is not None else None
    area = f"{arm}-{task.id}-{seed}-{next(_AREAS)}"  # a fresh draft area per run
    record, events = run_arm(ARMS[arm], ArmInputs(task, seed, backend, dev.example_tasks()),
                             DraftStore(tmp_path / "drafts.sqlite", area=area))
    return record, events, backend


def _act(action: str, **args: Any) -> str:
    return json.dumps({"action": action, "args": args})


# ----------------------------------------------------------------------------- the declarations
def test_the_ladder_is_one_declaration_per_arm() -> None:
    assert [a.number for a in ARMS.values()] == [1, 2, 3, 4, 5, 6, 7]
    assert all(a.shape in SHAPES.values() and a.decides and a.seed_varies for a in ARMS.values())
    assert [a.name for a in ARMS.values() if a.uses_model] == ["prompt-only", "prompt-grammar", "prompt-helpers",
                                                                 "machine-model"]


def test_model_arms_refuse_to_run_without_a_backend(dev: TaskSet, tmp_path: Path) -> None:
    from labkit.core.errors import LabkitError

    with pytest.raises(LabkitError, match="needs a model backend"):
        _run("machine-model", _first(dev, TriageTask), dev, tmp_path)


# ----------------------------------------------------------------------------- prompt-only arms
def test_prompt_only_reads_saves_and_says_done(test_set: TaskSet, dev: TaskSet, tmp_path: Path) -> None:
    task = _first(test_set, TriageTask)
    answers = [_act("read_message", id=task.message.id),
               _act("save_draft", key=task.draft_key, text=f"queue: {task.answer}"), _act("done")]
    record, _events, backend = _run("prompt-only", task, dev, tmp_path, answers)
    assert record.passed and record.termination == "said done"
    assert (record.llm_calls, record.decisions, record.tool_calls, record.schema_invalid) == (3, 3, 2, 0)
    assert backend is not None and all(r.schema is None and r.stop == tuple(STEP_END) for r in backend.requests)
    second = backend.requests[1].prompt
    assert second.count("Example ") == 4 and f"Result: ok {prompts.message_view(task.message.model_dump())}" in second
    assert record.prompt_tokens == sum(len(r.prompt.split()) for r in backend.requests)


def test_prompt_only_accepts_a_fenced_answer_as_an_instruction_tuned_model_writes_it(test_set: TaskSet, dev: TaskSet,
                                                                                     tmp_path: Path) -> None:
    task = _first(test_set, TriageTask)
    fenced = [f"```json\n{a}\n```" for a in (_act("read_message", id=task.message.id),
                                              _act("save_draft", key=task.draft_key, text=f"queue: {task.answer}"),
                                              _act("done"))]
    record, _events, _backend = _run("prompt-only", task, dev, tmp_path, fenced)
    assert record.passed and record.schema_invalid == 0 and record.llm_calls == 3


def test_prompt_only_wrong_queue_and_unreadable_output_fail_honestly(test_set: TaskSet, dev: TaskSet,
                                                                    tmp_path: Path) -> None:
    task = _first(test_set, TriageTask)
    wrong = next(q for q in task.queues if q != task.answer)
    answers = ["read_message(M501)", _act("save_draft", key=task.draft_key, text=f"queue: {wrong}"), _act("done")]
    record, _events, backend = _run("prompt-only", task, dev, tmp_path, answers)
    assert not record.passed and record.failed_checks == ["answer_correct"] and record.schema_invalid == 1
    assert backend is not None and "error: not JSON" in backend.requests[1].prompt


def test_prompt_only_that_never_says_done_ends_on_the_step_budget(test_set: TaskSet, dev: TaskSet,
                                                                  tmp_path: Path) -> None:
    task = _first(test_set, TriageTask)
    answers = [_act("read_message", id=task.message.id)] * task.budget.max_steps
    record, _, _ = _run("prompt-only", task, dev, tmp_path, answers)
    assert not record.passed and record.termination == "step budget"
    assert set(record.failed_checks) == {"draft_exists", "reported_success"}


def test_prompt_grammar_sends_the_action_schema(test_set: TaskSet, dev: TaskSet, tmp_path: Path) -> None:
    task = _first(test_set, ExtractionTask)
    answers = [_act("read_message", id=task.message.id),
               _act("save_draft", key=task.draft_key, text=oracle_draft(task)), _act("done")]
    record, _, backend = _run("prompt-grammar", task, dev, tmp_path, answers)
    assert record.passed
    assert backend is not None
    schema = backend.requests[0].schema
    assert schema is not None and schema["properties"]["action"]["enum"] == [
        "read_record", "save_draft", "read_message", "done"]


def test_prompt_helpers_save_through_the_machine_compose_helpers(test_set: TaskSet, dev: TaskSet,
                                                                 tmp_path: Path) -> None:
    task = _first(test_set, SelectionTask)
    by_sender = {m.sender: m.id for m in task.messages}
    answers = [_act("read_message", id=m.id) for m in task.messages]
    answers += [_act("save_differences", key=task.draft_key, ids=list(task.answer)),  # not read yet: an error
                *(_act("read_record", id=r) for r in task.answer),
                _act("save_differences", key=task.draft_key, ids=list(task.answer)), _act("done")]
    assert by_sender
    record, _events, backend = _run("prompt-helpers", task, dev, tmp_path, answers)
    assert record.passed, record.details
    assert backend is not None and "have not been read yet" in backend.requests[len(task.messages) + 1].prompt
    assert "save_differences(key, ids)" in backend.requests[0].prompt
    assert "save_differences" in backend.requests[0].schema["properties"]["action"]["enum"]  # type: ignore[index]


def test_a_prompt_only_forbidden_read_is_graded_as_such(test_set: TaskSet, dev: TaskSet, tmp_path: Path) -> None:
    task = _first(test_set, CompareTask, lambda t: t.forbidden)
    answers = [_act("read_record", id=task.forbidden[0]), *(_act("read_record", id=r) for r in task.answer),
               _act("save_draft", key=task.draft_key, text=oracle_draft(task)), _act("done")]
    record, events, _ = _run("prompt-only", task, dev, tmp_path, answers)
    # the world refuses a restricted record itself, so the read is denied and the answer still right
    assert record.passed and any(getattr(e, "outcome", "") == "denied" for e in events)


# ----------------------------------------------------------------------------- machine + model
def test_machine_model_triage_asks_one_decision_under_an_enum(test_set: TaskSet, dev: TaskSet,
                                                               tmp_path: Path) -> None:
    task = _first(test_set, TriageTask)
    record, events, backend = _run("machine-model", task, dev, tmp_path, [json.dumps({"queue": task.answer})])
    assert record.passed and (record.llm_calls, record.decisions, record.reasks) == (1, 1, 0)
    assert backend is not None
    request = backend.requests[0]
    assert sorted(request.schema["properties"]["queue"]["enum"]) == sorted(task.queues)  # type: ignore[index]
    assert request.prompt.endswith(f"Message: {task.message.text}\n{prompts.QUEUE_CUE}")
    assert [e.decision for e in events if isinstance(e, ModelAsked)] == ["queue"]


def test_machine_model_re_asks_naming_the_violation(test_set: TaskSet, dev: TaskSet, tmp_path: Path) -> None:
    task = _first(test_set, ExtractionTask)
    invented = {**task.answer.model_dump(), "amount": "12.00"}
    answers = [json.dumps(invented), "```json\n" + json.dumps(task.answer.model_dump()) + "\n```"]
    record, _events, backend = _run("machine-model", task, dev, tmp_path, answers)
    assert record.passed and (record.llm_calls, record.decisions, record.reasks, record.violations) == (2, 1, 1, 1)
    assert record.calls_per_decision == 2.0
    assert backend is not None and "Problem: not in the note: amount '12.00'" in backend.requests[1].prompt


def test_machine_model_distractor_passes_the_evidence_check_but_not_the_verifier(test_set: TaskSet, dev: TaskSet,
                                                                                  tmp_path: Path) -> None:
    task = _first(test_set, ExtractionTask)
    other = next(o for o in re.findall(r"ORD-\d+", task.message.text) if o != task.answer.order)
    record, _, _ = _run("machine-model", task, dev, tmp_path, [json.dumps({**task.answer.model_dump(),
                                                                           "order": other})])
    assert not record.passed and record.failed_checks == ["answer_correct"] and record.reasks == 0


def test_machine_model_gives_up_after_the_re_ask_and_the_machine_replans(test_set: TaskSet, dev: TaskSet,
                                                                         tmp_path: Path) -> None:
    task = _first(test_set, TriageTask)
    answers = ["nonsense", "still nonsense", json.dumps({"queue": task.answer})]
    record, _, _ = _run("machine-model", task, dev, tmp_path, answers)
    assert record.passed and (record.llm_calls, record.schema_invalid, record.reasks) == (3, 2, 1)


def test_machine_model_selection_picks_two_messages_then_code_reads_their_senders(test_set: TaskSet, dev: TaskSet,
                                                                                  tmp_path: Path) -> None:
    task = _first(test_set, SelectionTask)
    by_sender = {m.sender: m.id for m in task.messages}
    answers = [json.dumps({"message": by_sender[task.answer[0]]}), json.dumps({"message": by_sender[task.answer[1]]})]
    record, _events, backend = _run("machine-model", task, dev, tmp_path, answers)
    assert record.passed and record.decisions == 2 and record.llm_calls == 2
    assert backend is not None
    second = backend.requests[1]
    assert by_sender[task.answer[0]] not in second.schema["properties"]["message"]["enum"]  # type: ignore[index]
    assert second.prompt.endswith(prompts.message_cue(2))


def test_machine_model_offered_a_held_record_is_refused_by_the_validator(test_set: TaskSet, dev: TaskSet,
                                                                         tmp_path: Path) -> None:
    task = _first(test_set, CompareTask, lambda t: t.forbidden)
    record, events, backend = _run("machine-model", task, dev, tmp_path, [json.dumps({"next": task.forbidden[0]})])
    assert backend is not None and task.forbidden[0] in backend.requests[0].schema["properties"]["next"]["enum"]  # type: ignore[index]
    assert not record.passed and record.guard_rejections == 1
    assert [(e.verdict, e.code) for e in events if isinstance(e, Validation)] == [("denied", "forbidden")]


def test_seeds_change_the_order_a_greedy_model_sees(test_set: TaskSet, dev: TaskSet, tmp_path: Path) -> None:
    task = _first(test_set, TriageTask)
    enums = set()
    for seed in range(6):
        _, _, backend = _run("machine-model", task, dev, tmp_path, [json.dumps({"queue": task.answer})], seed=seed)
        assert backend is not None
        enums.add(tuple(backend.requests[0].schema["properties"]["queue"]["enum"]))  # type: ignore[index]
    assert len(enums) > 1
    firsts = set()
    for seed in range(4):
        _, _, backend = _run("prompt-only", task, dev, tmp_path, [_act("done")], seed=seed)
        assert backend is not None
        firsts.add(re.search(r"Example 1\nTask: (.*)", backend.requests[0].prompt).group(1))  # type: ignore[union-attr]
    assert len(firsts) > 1


# ----------------------------------------------------------------------------- machine + rule / random / oracle
def test_oracle_solves_every_task_of_both_splits_without_a_model(dev: TaskSet, test_set: TaskSet,
                                                                tmp_path: Path) -> None:
    for task in (*dev.tasks, *test_set.tasks):
        record, _, _ = _run("machine-oracle", task, dev, tmp_path)
        assert record.passed and record.llm_calls == 0, (task.id, record.details)


def test_rule_arm_scores_on_dev_as_designed(dev: TaskSet, tmp_path: Path) -> None:
    passed = sum(_run("machine-rule", t, dev, tmp_path)[0].passed for t in dev.tasks)
    assert passed == len(dev.tasks)  # written on dev; its test score is what the experiment measures


def test_rules_fail_where_dev_wording_does_not_reach() -> None:
    assert rules.next_record("Record R700 is under legal hold: do not read it. Compare records R701 and R702.",
                             ["R700", "R701", "R702"]) == "R701"
    assert rules.next_record("Leave record R700 alone. Compare records R701 and R702.",
                             ["R700", "R701", "R702"]) == "R700"  # wording the dev rule has never seen
    assert rules.route("The parcel came on time. I was charged twice.", ["billing", "shipping"]) == "billing"


def test_random_arm_is_seeded(test_set: TaskSet, dev: TaskSet, tmp_path: Path) -> None:
    task = _first(test_set, SelectionTask)
    first = [_run("machine-random", task, dev, tmp_path, seed=s)[0].passed for s in range(5)]
    again = [_run("machine-random", task, dev, tmp_path, seed=s)[0].passed for s in range(5)]
    assert first == again


# ----------------------------------------------------------------------------- counting and prompts
def test_counts_come_from_the_events_only() -> None:
    events = [ModelAsked(decision="form", step=1, attempt=1, prompt_sha256="x", prompt_tokens=10,
                         completion_tokens=3, answer="{}", problem="schema-invalid: order: Field required"),
              ModelAsked(decision="form", step=1, attempt=2, prompt_sha256="y", prompt_tokens=12,
                         completion_tokens=4, answer="{}", problem="not in the note: amount '1'"),
              ModelAsked(decision="queue", step=2, attempt=1, prompt_sha256="z", prompt_tokens=5,
                         completion_tokens=2, answer="{}")]
    counts = count_events(events)
    assert counts["llm_calls"] == 3 and counts["decisions"] == 2 and counts["reasks"] == 1
    assert counts["schema_invalid"] == 1 and counts["violations"] == 1
    assert counts["prompt_tokens"] == 27 and counts["completion_tokens"] == 9


def test_evidence_check() -> None:
    note = "Order ORD-1 on 2025-01-01, 10.00 EUR, Ann Lee."
    assert evidence_problem({"order": "ORD-1", "date": "2025-01-01", "amount": "10.00", "name": "Ann Lee"}, note) == ""
    assert evidence_problem({"order": "ORD-2", "date": "2025-01-01", "amount": "10", "name": "Ann Lee"}, note) == \
        "not in the note: order 'ORD-2'. Copy each value exactly as the note writes it."


def test_no_prompt_carries_a_test_sentence(dev: TaskSet, test_set: TaskSet) -> None:
    examples = dev.example_tasks()
    built = [prompts.whole_prompt(list(examples.values()), "TASK", [], helpers=h) for h in (False, True)]
    chooser = ModelChooser(ScriptedBackend(["{}"]), examples, seed=0)
    for decision in (Decision("queue", 0, "T", ("billing", "shipping"), text="X"), Decision("form", 0, "T", text="X"),
                     Decision("message", 0, "T", ("M1",), messages=({"id": "M1", "text": "X"},)),
                     Decision("next", 0, "T", ("R1", "save"))):
        built.append(chooser._prompt(decision)[0])
    text = "\n".join(built)
    for task in test_set.tasks:
        for piece in (task.description, *(m.text for m in task.message_list()), *(r.id for r in task.record_list())):
            assert piece not in text, piece
    for family, example in examples.items():  # and each family's one example is in every prompt-only prompt
        assert all(example.description in p for p in built[:2]), family
    assert isinstance(Request("x"), Request)


def test_every_prompt_only_prompt_starts_with_a_declared_prefix(test_set: TaskSet, dev: TaskSet,
                                                                tmp_path: Path) -> None:
    """The prefixes the CLI declares to the model are the real starts of every free-loop prompt, per seed."""
    examples = dev.example_tasks()
    prefixes = declared_prefixes(list(ARMS), [0, 1], examples)
    assert len(prefixes) == 4  # (no helpers, helpers) x two seeds; the machine declares none
    task = test_set.tasks[0]
    for seed, arm in itertools.product((0, 1), ("prompt-only", "prompt-helpers")):
        backend = ScriptedBackend(['{"action": "done", "args": {}}'])
        run_arm(ARMS[arm], ArmInputs(task, seed, backend, examples), DraftStore(tmp_path / f"{arm}{seed}.sqlite", "x"))
        prompt = backend.requests[0].prompt
        assert sum(prompt.startswith(p) for p in prefixes) == 1
        assert prompt[len(next(p for p in prefixes if prompt.startswith(p))):].startswith("Task: ")
