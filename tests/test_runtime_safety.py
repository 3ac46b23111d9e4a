"""Safety: keys cannot leave the draft area, record text cannot widen the allowlist, and personal
data never reaches the planner or any stored log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labkit.core.events import Transitioned
from labkit.core.store import SqliteLog
from labkit.runtime import (
    TASKS,
    Candidate,
    DraftStore,
    FaultPlan,
    Goal,
    PlannerContext,
    Proposal,
    Runtime,
    ScriptPlanner,
    Task,
    TickClock,
    World,
    load_records,
)
from labkit.runtime.events import Proposed, ToolCalled, Validation
from labkit.runtime.records import sensitive_values
from labkit.runtime.traces import TRACES_DIR

ESCAPING_KEYS = ["../x", "../../etc/passwd", "/etc/passwd", "a/b", "..", "C:\\x", ".hidden", "a/../../b", ""]


def world(tmp_path: Path, area: str = "w") -> World:
    return World(DraftStore(tmp_path / "drafts.sqlite", area))


@pytest.mark.parametrize("key", ESCAPING_KEYS)
def test_escaping_keys_are_rejected_before_execution(tmp_path: Path, key: str) -> None:
    planner = ScriptPlanner([Proposal(candidates=(Candidate(action="save_draft", args={"text": "x", "key": key}),))])
    rt = Runtime(TASKS["diff3"], planner, world(tmp_path), clock=TickClock())
    rt.run()
    verdicts = [e for e in rt.events if isinstance(e, Validation)]
    assert verdicts[0].verdict == "rejected" and "key" in verdicts[0].reason
    assert not any(isinstance(e, ToolCalled) for e in rt.events)
    assert rt.world.drafts.calls() == []


@pytest.mark.parametrize("key", ESCAPING_KEYS)
def test_the_draft_store_refuses_escaping_keys_itself(tmp_path: Path, key: str) -> None:
    with pytest.raises(ValueError, match="plain name"):
        DraftStore(tmp_path / "d.sqlite").save(key, "text")


def test_export_writes_inside_the_folder_only(tmp_path: Path) -> None:
    store = DraftStore(tmp_path / "d.sqlite")
    store.save("diff-1", "hello")
    written = store.export(tmp_path / "out")
    assert [p.name for p in written] == ["diff-1.txt"] and written[0].parent == (tmp_path / "out").resolve()


class GulliblePlanner:
    """Reads the records it is told to, then obeys any tool call written in a record's note."""

    name = "gullible"

    def propose(self, context: PlannerContext) -> Proposal:
        for rid in ("R05", "R13", "R21", "R29"):  # the records whose notes carry instructions
            if rid not in context.records:
                return Proposal(candidates=(Candidate(action="read_record", args={"id": rid}),))
        cands = []
        for record in context.records.values():
            for name, raw in re.findall(r"(\w+)\(([^)]*)\)", str(record.get("note", ""))):
                args = dict(re.findall(r"(\w+)='([^']*)'", raw))
                if not args and raw:
                    args = {"id": raw.strip("'")}
                cands.append(Candidate(action=name, args=args, rationale_summary="the record says so"))
        return Proposal(candidates=tuple(cands[: context.k]))


def test_instructions_inside_records_cannot_cause_a_non_allowlisted_action(tmp_path: Path) -> None:
    task = TASKS["diff3"].model_copy(update={"k": 5})
    rt = Runtime(task, GulliblePlanner(), world(tmp_path), clock=TickClock())
    r = rt.run()
    proposed = {c.action for e in rt.events if isinstance(e, Proposed) for c in e.candidates}
    assert {"delete_drafts", "send_email", "grant_access", "save_draft"} <= proposed  # the planner was fooled
    findings = [f for e in rt.events if isinstance(e, Validation) for f in e.findings]
    assert {f.action for f in findings if f.verdict == "rejected"} >= {"delete_drafts", "send_email", "save_draft"}
    executed = {e.tool for e in rt.events if isinstance(e, ToolCalled)}
    assert executed == {"read_record"}  # ... the machine was not
    assert rt.world.drafts.calls() == []
    # the one allowlisted action it was talked into (reading R08) still meets the record's own lock
    assert "R08" not in rt.state.reads and r.outcome == "paused"


def test_personal_data_in_arguments_is_rejected_and_not_logged(tmp_path: Path) -> None:
    phone = load_records()["R01"]["phone"]
    planner = ScriptPlanner([Proposal(candidates=(Candidate(action="save_draft",
                                                            args={"text": f"call {phone}", "key": "k1"}),))])
    rt = Runtime(TASKS["diff3"], planner, world(tmp_path), clock=TickClock())
    rt.run()
    first = next(e for e in rt.events if isinstance(e, Validation))
    assert first.verdict == "rejected" and "personal data" in first.reason
    assert phone not in "".join(e.model_dump_json() for e in rt.events)


class RecordingPlanner:
    """Wraps the scripted planner and keeps every context it was shown."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.name = "recording"
        self.seen: list[str] = []

    def propose(self, context: PlannerContext) -> Proposal:
        self.seen.append(context.model_dump_json())
        return self.inner.propose(context)  # type: ignore[attr-defined]


SCAN_TASK = Task(id="scan", description="read R01, R07 and R08 (restricted) and save their differences",
                 goal=Goal(reads=("R01", "R07", "R08"), draft_key="scan-diff", draft_covers_differences=True))


def _stored_logs_of_test_runs(tmp_path: Path) -> tuple[list[Path], list[str]]:
    """Runs that touch every kind of sensitive data (phones in notes, a restricted record read after
    approval, duplicates, timeouts) into a real SQLite log; returns the files and the planner's views."""
    from labkit.runtime.planner import DiffPlanner

    db = tmp_path / "runs.sqlite"
    seen: list[str] = []
    for n, faults in enumerate(["none", "read_timeout@1,duplicate_result@2", "write_timeout@1:landed",
                                "bad_args@1,denied@1"]):
        planner = RecordingPlanner(DiffPlanner(SCAN_TASK.goal.reads, "scan-diff"))
        with SqliteLog(db, f"run-{n}") as log:
            rt = Runtime(SCAN_TASK, planner, world(tmp_path, f"run-{n}"), log=log, clock=TickClock(),
                         faults=FaultPlan.parse(faults))
            r = rt.run()
            while r.outcome == "paused":
                r = rt.decide(True)
            assert r.outcome == "succeeded", r
        seen += planner.seen
    return [p for p in tmp_path.iterdir() if p.name.startswith("runs.sqlite")], seen


def test_no_stored_log_contains_a_sensitive_value(tmp_path: Path) -> None:
    secrets = sensitive_values(load_records())
    assert len(secrets) >= 80
    files, seen = _stored_logs_of_test_runs(tmp_path)
    files += sorted(TRACES_DIR.glob("*.jsonl"))
    assert len(files) >= 6
    for path in files:
        blob = path.read_bytes().decode("utf-8", errors="replace")
        leaked = [s for s in secrets if s in blob]
        assert leaked == [], f"{path.name} contains {leaked[:3]}"
    assert "[redacted]" in "".join(seen)
    for view in seen:
        assert [s for s in secrets if s in view] == []


def test_the_scan_would_catch_a_leak(tmp_path: Path) -> None:
    from labkit.runtime.events import Observation

    phone = load_records()["R01"]["phone"]
    with SqliteLog(tmp_path / "leak.sqlite", "x") as log:
        log.append(Observation(action_id="a1", tool="read_record", kind="record_read", facts={"phone": phone}))
    blob = b"".join(p.read_bytes() for p in tmp_path.glob("leak.sqlite*"))
    assert phone.encode() in blob


def test_restricted_reads_are_denied_without_a_grant(tmp_path: Path) -> None:
    rt = Runtime(SCAN_TASK, None, world(tmp_path), clock=TickClock())
    assert rt.run().outcome == "paused"
    moves = [e.trigger for e in rt.events if isinstance(e, Transitioned)]
    assert moves[-1] == "denied"
