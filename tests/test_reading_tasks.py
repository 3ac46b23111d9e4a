"""The v2 task sets: generator, honest split, file format errors, family verifiers, and the world's tools."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from labkit.core.events import Event
from labkit.reading import generate
from labkit.reading.families import FAMILIES, check_draft, grade, oracle_draft
from labkit.reading.taskfile import (
    FAMILY_NAMES,
    CompareTask,
    ExtractionTask,
    SelectionTask,
    TaskFileError,
    TaskSet,
    TriageTask,
    file_sha256,
    load_task_set,
    parse_task_set,
)
from labkit.reading.world import READING_TOOLS, runtime_task, task_world
from labkit.runtime.events import ToolResult, Validation
from labkit.runtime.loop import Runtime
from labkit.runtime.planner import Candidate, PlannerContext, Proposal
from labkit.runtime.records import RECORD_ID
from labkit.runtime.tools import DraftStore

ROOT = Path(__file__).resolve().parents[1]
V2 = ROOT / "data" / "tasks" / "v2"


# ----------------------------------------------------------------------------- generator
def test_generator_is_deterministic_and_the_files_are_current() -> None:
    for split in ("dev", "test"):
        first = generate.task_set_json(generate.generate_split(split))
        assert first == generate.task_set_json(generate.generate_split(split))
        assert (V2 / f"{split}.json").read_text(encoding="utf-8") == first, \
            f"data/tasks/v2/{split}.json is stale: run scripts/make_tasks_v2.py"
    assert generate.generate_split("test", seed=10) != generate.generate_split("test")


def test_sizes_families_examples_and_headline(dev: TaskSet, test_set: TaskSet) -> None:
    assert len(dev.tasks) + len(test_set.tasks) >= 60
    assert set(dev.families()) == set(test_set.families()) == set(FAMILY_NAMES)
    assert set(dev.examples) == set(FAMILY_NAMES)
    assert all(dev.by_id(t).family == f for f, t in dev.examples.items())
    assert len(test_set.headline) == 10 and len(set(test_set.headline)) == 10
    assert {test_set.by_id(t).family for t in test_set.headline} == set(FAMILY_NAMES)
    assert len(file_sha256(V2 / "test.json")) == 64


# ----------------------------------------------------------------------------- the split
def _texts(tasks: TaskSet) -> list[str]:
    out = []
    for t in tasks.tasks:
        out.append(t.description)
        out += [m.text for m in t.message_list()]
    return out


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n", text)
    return [p.strip() for p in parts if len(p.split()) >= 3]


def _entities(tasks: TaskSet) -> set[str]:
    found: set[str] = set()
    for t in tasks.tasks:
        found |= {r.id for r in t.record_list()} | {r.customer for r in t.record_list()}
        found |= {m.id for m in t.message_list()}
        if isinstance(t, ExtractionTask):
            found |= set(re.findall(r"ORD-\d+", t.message.text)) | set(re.findall(r"\d{4}-\d\d-\d\d", t.message.text))
            found |= set(re.findall(r"\d+\.\d\d", t.message.text)) | {t.answer.name}
        for text in (t.description, *(m.text for m in t.message_list())):
            found |= set(RECORD_ID.findall(text))
    return found


def _prompt_sources() -> str:
    """Every prompt template and few-shot example in the experiment package (the generator excluded:
    it holds the test pools by design)."""
    folder = ROOT / "labkit" / "reading"
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.py")) if p.name != "generate.py")


def test_no_test_sentence_or_entity_appears_in_dev_or_any_prompt(dev: TaskSet, test_set: TaskSet) -> None:
    dev_text = "\n".join(_texts(dev))
    prompts = _prompt_sources()
    test_sentences = {s for text in _texts(test_set) for s in _sentences(text)}
    assert len(test_sentences) > 60
    leaked = sorted(s for s in test_sentences if s in dev_text or s in prompts)
    assert not leaked, leaked[:5]
    entities = _entities(test_set)
    assert len(entities) > 200
    dev_entities = _entities(dev)
    assert not entities & dev_entities, sorted(entities & dev_entities)[:5]
    in_text = sorted(e for e in entities if re.search(rf"(?<![\w-]){re.escape(e)}(?![\w-])", dev_text + prompts))
    assert not in_text, in_text[:5]


def test_the_split_check_catches_a_leak(dev: TaskSet, test_set: TaskSet) -> None:
    """The leak test is not vacuous: copy one test message into a dev task and it is found."""
    leaked_text = test_set.tasks[0].message_list()[0].text
    data = json.loads((V2 / "dev.json").read_text(encoding="utf-8"))
    data["tasks"][0]["message"]["text"] = leaked_text
    bad_dev = parse_task_set(data)
    dev_text = "\n".join(_texts(bad_dev))
    assert any(s in dev_text for s in _sentences(leaked_text))


# ----------------------------------------------------------------------------- the file format
def _dev_data() -> dict[str, Any]:
    return json.loads((V2 / "dev.json").read_text(encoding="utf-8"))


def _index(data: dict[str, Any], family: str) -> int:
    return next(i for i, t in enumerate(data["tasks"]) if t["family"] == family)


@pytest.mark.parametrize("family,change,expected", [
    ("triage", lambda t: t.update(answer="sales"), "answer 'sales' is not one of the queues"),
    ("triage", lambda t: t.update(description="Route it."), "does not name the draft key"),
    ("extraction", lambda t: t["answer"].update(order="ORD-0000"), "do not appear in the note"),
    ("extraction", lambda t: t["answer"].pop("date"), "answer.date: Field required"),
    ("selection", lambda t: t.update(answer=[t["records"][0]["id"], t["records"][0]["id"]]), "names a record twice"),
    ("selection", lambda t: t.update(description=t["description"] + " Hint: R999."), "names record ids"),
    ("compare", lambda t: t.update(forbidden=[t["answer"][0]]), "both in the answer and forbidden"),
    ("compare", lambda t: t.update(family="comparison"), "does not match any of the expected tags"),
])
def test_task_file_errors_name_the_task_and_the_field(family: str, change: Any, expected: str) -> None:
    data = _dev_data()
    i = _index(data, family)
    change(data["tasks"][i])
    with pytest.raises(TaskFileError) as info:
        parse_task_set(data, "dev.json")
    message = str(info.value)
    assert expected in message and f"dev.json: task [{i}] (id '{data['tasks'][i]['id']}')" in message
    assert "what to do" in message


def test_task_set_level_errors() -> None:
    data = _dev_data()
    data["tasks"][1]["id"] = data["tasks"][0]["id"]
    with pytest.raises(TaskFileError, match="task ids repeat"):
        parse_task_set(data)
    data = _dev_data()
    data["headline"] = ["dev-triage-01"]
    with pytest.raises(TaskFileError, match="headline set is drawn from the test split"):
        parse_task_set(data)
    data = _dev_data()
    data["examples"]["triage"] = "dev-compare-01"
    with pytest.raises(TaskFileError, match="not a triage task"):
        parse_task_set(data)
    data = _dev_data()
    data["tasks"][1]["message"]["id"] = data["tasks"][0]["message"]["id"]
    data["tasks"][1]["description"] = data["tasks"][1]["description"].replace(
        "message M102", "message " + data["tasks"][0]["message"]["id"])
    with pytest.raises(TaskFileError, match="give each task its own message ids"):
        parse_task_set(data)


def test_load_errors_for_missing_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="cannot read task file"):
        load_task_set(tmp_path / "none.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(TaskFileError, match="not valid JSON"):
        load_task_set(broken)


def test_a_teacher_can_add_one_task_of_every_family_without_code(tmp_path: Path) -> None:
    records = [{"id": "R950", "customer": "Ann Example", "plan": "basic", "status": "open", "region": "north",
                "amount": 10, "channel": "email"},
               {"id": "R951", "customer": "Ben Example", "plan": "pro", "status": "open", "region": "north",
                "amount": 12, "channel": "email"}]
    tasks = [
        {"family": "triage", "id": "my-triage", "draft_key": "route-M950",
         "description": "Route message M950 (billing or shipping); save it under key route-M950.",
         "message": {"id": "M950", "text": "Where is my parcel?"}, "queues": ["billing", "shipping"],
         "answer": "shipping"},
        {"family": "extraction", "id": "my-form", "draft_key": "form-M951",
         "description": "Fill the form from note M951 under key form-M951.",
         "message": {"id": "M951", "text": "Ann Example, order ORD-1, 2024-01-02, 5.00 EUR."},
         "answer": {"order": "ORD-1", "date": "2024-01-02", "amount": "5.00", "name": "Ann Example"}},
        {"family": "selection", "id": "my-pick", "draft_key": "pair-mine",
         "description": "Compare who wrote about cats with who wrote about dogs (messages M952, M953); "
                        "key pair-mine.",
         "messages": [{"id": "M952", "sender": "R950", "text": "My cat is ill."},
                      {"id": "M953", "sender": "R951", "text": "My dog barks."}],
         "records": records, "answer": ["R950", "R951"]},
        {"family": "compare", "id": "my-compare", "draft_key": "diff-R950-R951",
         "description": "Compare R950 and R951 under key diff-R950-R951.", "records": records,
         "answer": ["R950", "R951"]},
    ]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"format": "labkit-tasks-v2", "split": "dev", "tasks": tasks}), encoding="utf-8")
    loaded = load_task_set(path)
    assert [type(t) for t in loaded.tasks] == [TriageTask, ExtractionTask, SelectionTask, CompareTask]
    assert all(check_draft(t, oracle_draft(t)) == [] for t in loaded.tasks)


# ----------------------------------------------------------------------------- the verifiers
def test_every_oracle_draft_passes_its_family_verifier(dev: TaskSet, test_set: TaskSet) -> None:
    for task in (*dev.tasks, *test_set.tasks):
        assert check_draft(task, oracle_draft(task)) == [], task.id
    assert set(FAMILIES) == set(FAMILY_NAMES)


def test_triage_verifier(dev: TaskSet) -> None:
    task = next(t for t in dev.tasks if isinstance(t, TriageTask))
    wrong = next(q for q in task.queues if q != task.answer)
    assert check_draft(task, f"queue: {task.answer.upper()}") == []  # the queue's name, any case
    assert check_draft(task, f"- queue: {task.answer}\n") == []
    assert check_draft(task, f"queue: {wrong}") == [f"queue {wrong!r} is wrong"]
    assert "not even one of" in check_draft(task, "queue: sales")[0]
    assert check_draft(task, f"queue: {task.answer}\nqueue: {wrong}")[0].startswith("'queue:' given 2 different")
    assert check_draft(task, task.answer) == ["no 'queue:' line"]
    assert check_draft(task, f"queue: {task.answer}\nreason: typos")[-1] == "lines for unknown field(s) ['reason']"


def test_extraction_verifier_refuses_the_distractors(dev: TaskSet) -> None:
    task = next(t for t in dev.tasks if isinstance(t, ExtractionTask))
    right = oracle_draft(task)
    other_order = next(o for o in re.findall(r"ORD-\d+", task.message.text) if o != task.answer.order)
    assert check_draft(task, right.replace(task.answer.order, other_order)) == [f"order {other_order!r} is wrong"]
    other_date = next(d for d in re.findall(r"\d{4}-\d\d-\d\d", task.message.text) if d != task.answer.date)
    assert check_draft(task, right.replace(task.answer.date, other_date)) == [f"date {other_date!r} is wrong"]
    assert check_draft(task, right.replace(task.answer.amount, "1.00")) == \
        ["amount '1.00' is wrong (and it is not in the note)"]
    assert check_draft(task, right.replace(f"name: {task.answer.name}\n", "")) == ["no 'name:' line"]
    assert check_draft(task, right.replace("order:", "order number:")) == \
        ["lines for unknown field(s) ['order number']", "no 'order:' line"]


def test_difference_verifier_refuses_the_wrong_pair_and_order(dev: TaskSet) -> None:
    from labkit.runtime.records import differences_text

    task = next(t for t in dev.tasks if isinstance(t, SelectionTask))
    by_id = {r.id: r.as_dict() for r in task.records}
    a, b = task.answer
    distractor = next(r for r in by_id if r not in task.answer)
    assert check_draft(task, differences_text([by_id[a], by_id[b]])) == []
    assert check_draft(task, differences_text([by_id[b], by_id[a]]))  # the order of the text matters
    problems = check_draft(task, differences_text([by_id[a], by_id[distractor]]))
    assert any("outside the goal" in p for p in problems)
    compare = next(t for t in dev.tasks if isinstance(t, CompareTask))
    draft = oracle_draft(compare)
    assert check_draft(compare, "\n".join(draft.splitlines()[:-1]))[0].startswith("missing:")


# ----------------------------------------------------------------------------- the world and the runtime
class _Script:
    """A scripted planner: the given actions in order, then "done"."""

    name = "script"

    def __init__(self, actions: list[tuple[str, dict[str, Any]]]) -> None:
        self.actions = list(actions)

    def propose(self, ctx: PlannerContext) -> Proposal:
        if not self.actions:
            return Proposal(claims_done=True)
        action, args = self.actions.pop(0)
        return Proposal(candidates=(Candidate(action=action, args=args),))


def _run(task: Any, actions: list[tuple[str, dict[str, Any]]], tmp_path: Path) -> tuple[Any, list[Event], str]:
    world = task_world(task, DraftStore(tmp_path / "drafts.sqlite", area=task.id))
    rt = Runtime(runtime_task(task), _Script(actions), world, clock=iter(range(10_000)).__next__, tools=READING_TOOLS)
    result = rt.run()
    while result.outcome == "paused":
        result = rt.decide(False, by="test")
    return world, list(rt.events), result.outcome


def test_a_machine_run_reads_messages_through_the_runtime_and_is_graded(dev: TaskSet, tmp_path: Path) -> None:
    task = next(t for t in dev.tasks if isinstance(t, ExtractionTask))
    world, events, outcome = _run(task, [("read_message", {"id": task.message.id}),
                                         ("save_draft", {"key": task.draft_key, "text": oracle_draft(task)})],
                                  tmp_path)
    assert outcome == "succeeded"
    reads = [e for e in events if isinstance(e, ToolResult) and e.tool == "read_message"]
    assert reads and reads[0].outcome == "ok" and reads[0].data["text"] == task.message.text
    assert grade(task, world, events, claimed=outcome).passed


def test_the_validator_guards_the_new_read_tool_and_refuses_forbidden_records(dev: TaskSet, tmp_path: Path) -> None:
    task = next(t for t in dev.tasks if isinstance(t, CompareTask) and t.forbidden)
    actions = [("read_message", {"id": "R1"}), ("read_record", {"id": task.forbidden[0]})]
    actions += [("read_record", {"id": r}) for r in task.answer]
    actions.append(("save_draft", {"key": task.draft_key, "text": oracle_draft(task)}))
    world, events, outcome = _run(task, actions, tmp_path)
    verdicts = [(e.verdict, e.code) for e in events if isinstance(e, Validation)]
    assert verdicts[0] == ("rejected", "bad_args") and verdicts[1] == ("denied", "forbidden")
    verdict = grade(task, world, events, claimed=outcome)
    assert outcome == "failed" and not verdict.passed  # the refused escalation ends the run; nothing is saved
    assert [c.name for c in verdict.failed()] == ["draft_exists", "reported_success"]


def test_grade_fails_a_wrong_answer_and_a_forbidden_read(dev: TaskSet, tmp_path: Path) -> None:
    task = next(t for t in dev.tasks if isinstance(t, TriageTask))
    wrong = next(q for q in task.queues if q != task.answer)
    world, events, outcome = _run(task, [("save_draft", {"key": task.draft_key, "text": f"queue: {wrong}"})],
                                  tmp_path)
    verdict = grade(task, world, events, claimed=outcome)
    assert outcome == "succeeded" and [c.name for c in verdict.failed()] == ["answer_correct"]
    compare = copy.deepcopy(next(t for t in dev.tasks if isinstance(t, CompareTask) and t.forbidden))
    read = ToolResult(action_id="x", attempt=1, tool="read_record", args_sha256="", outcome="ok", side_effect=False,
                      data={"id": compare.forbidden[0]})
    verdict = grade(compare, task_world(compare, DraftStore(tmp_path / "d2.sqlite")), [read], claimed="failed")
    assert "forbidden_untouched" in [c.name for c in verdict.failed()]


def test_the_default_tool_set_is_unchanged(dev: TaskSet, tmp_path: Path) -> None:
    """Without tools=INBOX_TOOLS a runtime knows no read_message (runs over records alone are as before)."""
    from labkit.runtime.tools import TOOLS

    assert "read_message" not in TOOLS and set(TOOLS) < set(READING_TOOLS)
    task = next(t for t in dev.tasks if isinstance(t, TriageTask))
    world = task_world(task, DraftStore(tmp_path / "d.sqlite"))
    rt = Runtime(runtime_task(task), _Script([("read_message", {"id": task.message.id})]), world,
                 clock=iter(range(10_000)).__next__)
    rt.run()
    verdicts = [(e.verdict, e.code) for e in rt.events if isinstance(e, Validation)]
    assert verdicts[0] == ("rejected", "unknown_tool")
    assert rt.events[0].versions["tools"] == "draft_status,read_record,save_draft"  # type: ignore[attr-defined]
