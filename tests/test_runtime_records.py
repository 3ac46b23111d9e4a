"""The synthetic record set and redaction."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from labkit.runtime.records import (
    RECORDS_PATH,
    differences,
    differences_text,
    generate_records,
    load_records,
    records_json,
    sensitive_values,
)
from labkit.runtime.redact import MARK, looks_sensitive, redact, scrub_text

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_file_is_what_the_seeded_generator_writes() -> None:
    assert RECORDS_PATH.read_bytes() == records_json(generate_records()).encode("utf-8")
    assert generate_records(1) != generate_records(2)


def test_the_script_writes_identical_bytes(tmp_path: Path) -> None:
    out = tmp_path / "records.json"
    for _ in range(2):
        subprocess.run([sys.executable, "scripts/make_records.py", "--out", str(out)], cwd=ROOT, check=True,
                       capture_output=True)
        assert out.read_bytes() == RECORDS_PATH.read_bytes()


def test_the_set_has_what_the_lesson_needs() -> None:
    records = load_records()
    assert len(records) >= 24
    assert sum(r["restricted"] for r in records.values()) >= 3
    assert sum("call" in r["note"] and "(" in r["note"] for r in records.values()) >= 3  # injected instructions
    assert sum(r["phone"] in r["note"] for r in records.values()) >= 3  # phones quoted in free text
    assert len(set(sensitive_values(records))) == 2 * len(records)


def test_redaction_masks_fields_and_scrubs_text() -> None:
    record = load_records()["R01"]
    clean = redact(record)
    assert clean["national_id"] == clean["phone"] == MARK
    assert record["phone"] not in str(clean) and MARK in clean["note"]
    assert not looks_sensitive(clean)
    assert looks_sensitive({"a": [f"id {record['national_id']}"]})
    assert scrub_text("call +1-555-123-4567 or NI-123-456-789") == f"call {MARK} or {MARK}"
    assert scrub_text("amount 120, R05, 2026-03-08") == "amount 120, R05, 2026-03-08"


def test_differences_name_only_fields_that_differ() -> None:
    a = {"id": "A", "plan": "pro", "status": "open", "region": "x", "amount": 1, "channel": "chat"}
    b = {**a, "id": "B", "status": "closed"}
    assert differences([a, b]) == ["status: A=open, B=closed"]
    assert "no differences" in differences_text([a, {**a, "id": "C"}])
