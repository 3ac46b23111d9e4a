"""Bad input gets a clear error: a table of files (and options) a user feeds the kit, each refused with a
LabkitError that says what was wrong and what to do, and, from the command line, no traceback.

The same table is the section "Bad input" of docs/commands.md: ``scripts/update_bad_input_table.py``
writes it from :data:`ROWS` and :func:`doc_block`, and a test here fails while the page shows another table.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from labkit.core.catalog import resolve_table
from labkit.core.errors import LabkitError
from labkit.core.yaml_input import MAX_BYTES
from labkit.course.exercises import read_submission
from labkit.dialog.scenario import load_scenario
from labkit.dialog.users import load_user_script
from labkit.llm.http import check_server_url
from labkit.llm.modelfile import check_gguf
from labkit.llm.models import model_names, resolve_model
from labkit.reading.taskfile import load_task_set
from labkit.repoedit.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "commands.md"
BEGIN, END = "<!-- bad-input-table: begin -->", "<!-- bad-input-table: end -->"


def _model(path: Path) -> Any:
    """A ``--model`` value as the commands resolve it: a registered name, or a GGUF file that must exist."""
    found, _ = resolve_model(path.read_text(encoding="utf-8"))
    return check_gguf(found) if found is not None else None


LOADERS: dict[str, Callable[[Path], Any]] = {
    "scenario": load_scenario,
    "user script": load_user_script,
    "table": lambda p: resolve_table(str(p)),
    "code task file": load_tasks,
    "reading task file": load_task_set,
    "exercise submission": read_submission,
    "server URL": lambda p: check_server_url(p.read_text(encoding="utf-8")),
    "model name": _model,
}
"""Each loader reads the file it is given; for a server URL and a model name the file holds the option's value."""


@dataclass(frozen=True)
class Bad:
    """One bad input: which loader reads it, the file's name and bytes, a part the error must say, and
    how the docs describe the input."""

    loader: str
    name: str
    content: bytes
    says: str
    input: str


SCENARIO = """name: tiny
initial: ask
steps:
  ask:
    instructions: Ask for the goal.
    results: {goal: string}
    signals:
      next: {to: done, needs: [goal], when: the user named the goal}
  done:
    final: true
    message: Thanks.
"""
USER = """scenario: support
split: test
turns:
  - The invoice PDF I downloaded is empty.
  - lena@example.org
"""
TASKS = """format: 1
tasks:
  - id: t1
    project: p
    split: dev
    kind: bug
    requirement: X must be two, not one.
    failing: [tests/test_m.py::test_x]
    oracle:
      - path: m.py
        why: X is wrong
        edits: [{search: "X = 1", replace: "X = 2"}]
"""
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
LATIN1 = "name: caf\xe9\n".encode("latin-1")
HUGE = b"# padding\n" * (MAX_BYTES // 10 + 1)


def _s(old: str, new: str) -> bytes:
    assert old in SCENARIO, old
    return SCENARIO.replace(old, new, 1).encode()


def _u(extra: str = "", old: str = "", new: str = "") -> bytes:
    assert old in USER, old
    return (USER.replace(old, new, 1) + extra).encode()


def _t(old: str, new: str) -> bytes:
    assert old in TASKS, old
    return TASKS.replace(old, new, 1).encode()


ROWS: list[Bad] = [
    # dialog scenarios
    Bad("scenario", "scenario.yaml", _s("name: tiny", "name: yes"),
        "scenario.yaml:1:7: 'name' of the scenario is the boolean true", "`name: yes` (YAML 1.1 boolean)"),
    Bad("scenario", "scenario.yaml", _s("name: tiny", "name: 2024"),
        "is the number 2024; YAML reads an unquoted number as a number; quote it: name: '2024'", "`name: 2024`"),
    Bad("scenario", "scenario.yaml", _s("results: {goal: string}", "results: {goal: {type: enum, values: [yes, no]}}"),
        "item 1 of the values of result 'goal' is the boolean true", "enum `values: [yes, no]`"),
    Bad("scenario", "scenario.yaml", _s("when: the user named the goal", "when: ~"),
        "'when' of signal 'next' is null", "`when: ~`"),
    Bad("scenario", "scenario.yaml", _s("message: Thanks.", "message:"),
        "'message' of step 'done' is empty", "`message:` with nothing after it"),
    Bad("scenario", "scenario.yaml", _s("final: true", "final: 'no'"),
        "'final' must be true or false", "`final: 'no'` (text, not a boolean)"),
    Bad("scenario", "scenario.yaml", _s("  done:\n", "  done:\n\t"), "scenario.yaml:10:1: a tab in the indentation",
        "a tab in the indentation"),
    Bad("scenario", "scenario.yaml", _s("initial: ask\n", "initial: ask\ninitial: done\n"),
        "the key 'initial' is given twice", "a key given twice"),
    Bad("scenario", "scenario.yaml", _s("initial: ask\n", "initial: ask\ntitel: Tiny\n"),
        "unknown key 'titel' in the scenario", "a misspelt key (`titel:`)"),
    Bad("scenario", "scenario.yaml", _s("initial: ask\n", ""), "the scenario lacks the key 'initial'",
        "no `initial:`"),
    Bad("scenario", "scenario.yaml", _s("next: {to: done,", "next: {to: end,"), "leads to unknown step 'end'",
        "a signal to a step that does not exist"),
    Bad("scenario", "scenario.yaml", _s("results: {goal: string}", "results: {goal: string"), "not valid YAML",
        "an unclosed `{`"),
    Bad("scenario", "scenario.yaml", b"- ask\n- done\n", "a scenario is a YAML mapping", "a list at the top"),
    Bad("scenario", "scenario.yaml", b"", "the scenario is empty", "an empty file"),
    Bad("scenario", "scenario.yaml", b"# steps: to do\n", "holds no YAML data", "comments only"),
    Bad("scenario", "scenario.yaml", BINARY, "the scenario is a binary file", "a PNG image"),
    Bad("scenario", "scenario.yaml", LATIN1, "scenario.yaml:1:10: the scenario is not UTF-8 text",
        "a file saved as Latin-1"),
    Bad("scenario", "scenario.yaml", HUGE, "the scenario is larger than 1,048,576 bytes", "a 1 MiB file"),
    Bad("scenario", "scenario.yaml", _s("Thanks.", "Thanks.\x07"), "control character U+0007",
        "a control character"),
    # dialog user scripts
    Bad("user script", "users.yaml", _u("  - yes\n"),
        "users.yaml:6:5: turn 3 is the boolean true; YAML reads yes/no/on/off/true/false as booleans; "
        "quote it: - 'yes'", "last turn `- yes`"),
    Bad("user script", "users.yaml", _u("  - off\n"), "turn 3 is the boolean false", "a turn `- off`"),
    Bad("user script", "users.yaml", _u("  - 42\n"), "turn 3 is the number 42", "a turn `- 42`"),
    Bad("user script", "users.yaml", _u("  - ~\n"), "turn 3 is null", "a turn `- ~`"),
    Bad("user script", "users.yaml", _u("  -\n"), "turn 3 is empty", "a turn `-` with no text"),
    Bad("user script", "users.yaml", _u("  - 2025-03-14\n"), "turn 3 is the date 2025-03-14", "a turn that is a date"),
    Bad("user script", "users.yaml", _u("  - Deadline: Friday\n"),
        "turn 3 is a mapping, not text; YAML reads a word followed by ': ' as a key; quote it: - 'Deadline: Friday'",
        "a turn `- Deadline: Friday`"),
    Bad("user script", "users.yaml", _u(old="turns:", new="turn:"), "unknown key 'turn' in the user script",
        "`turn:` for `turns:`"),
    Bad("user script", "users.yaml", _u(old="split: test\n", new="split: test\nsplit: dev\n"),
        "the key 'split' is given twice", "`split:` twice"),
    Bad("user script", "users.yaml", _u(old="split: test", new="split: train"), "'split' must be dev or test",
        "`split: train`"),
    Bad("user script", "users.yaml", _u("persona: yes\n"), "'persona' is the boolean true", "`persona: yes`"),
    Bad("user script", "users.yaml", _u("expect: {step: 3}\n"), "'expect.step' is the number 3", "`expect: {step: 3}`"),
    Bad("user script", "users.yaml", b"scenario: support\nsplit: test\n", "needs 'turns', a non-empty list",
        "no turns"),
    Bad("user script", "users.yaml", _u(old="  - lena", new="\t- lena"), "users.yaml:5:1: a tab in the indentation",
        "a tab before a turn"),
    Bad("user script", "users.yaml", b"\n\n", "the user script is empty", "blank lines only"),
    Bad("user script", "users.yaml", b"PK\x03\x04\x14\x00\x00\x00", "the user script is a binary file", "a zip file"),
    # machine tables
    Bad("table", "table.json", BINARY, "the table file is a binary file", "a binary `.json` table"),
    Bad("table", "table.json", b"{states: [A]}", "not valid JSON", "JSON without quotes"),
    Bad("table", "table.json", b'["A", "B"]', "a table description is a JSON object, not list", "a JSON list"),
    Bad("table", "table.yaml", _s("initial: ask", "initial: on"), "'initial' of the scenario is the boolean true",
        "a scenario table with `initial: on`"),
    # code task files
    Bad("code task file", "tasks.yaml", _t("requirement: X must be two, not one.", "requirement: yes"),
        "task 't1': requirement: the value is the boolean true", "`requirement: yes`"),
    Bad("code task file", "tasks.yaml", _t("split: dev", "split: no"),
        "tasks.yaml:5:12: task 't1': split: the value is the boolean false", "`split: no`"),
    Bad("code task file", "tasks.yaml", _t("    kind: bug\n", "    kind: bug\n    owner: me\n"),
        "task 't1': owner: unknown key; known keys: id, project", "an unknown key in a task"),
    Bad("code task file", "tasks.yaml", _t("    kind: bug\n", "    kind: bug\n    kind: bug\n"),
        "the key 'kind' is given twice", "`kind:` twice"),
    Bad("code task file", "tasks.yaml", _t("format: 1\n", ""), "expected a mapping with 'format: 1'", "no `format:`"),
    Bad("code task file", "tasks.yaml", _t("    requirement: X must be two, not one.\n", ""),
        "task 't1': requirement: Field required", "no requirement"),
    Bad("code task file", "tasks.yaml", b"- id: t1\n", "found a list", "a list at the top"),
    Bad("code task file", "tasks.yaml", b"", "the task file is empty", "an empty file"),
    # reading-task files (JSON)
    Bad("reading task file", "dev.json", b"{format: labkit-tasks-v2}", "dev.json:1:2: not valid JSON",
        "JSON without quotes"),
    Bad("reading task file", "dev.json", b"[]", "holds a JSON array, not an object", "a JSON array"),
    Bad("reading task file", "dev.json", b'{"format": "labkit-tasks-v2", "format": "v1"}',
        "the key 'format' is given twice", "a key given twice"),
    Bad("reading task file", "dev.json", b'{"format": "v1", "split": "dev", "tasks": []}',
        "format: Input should be 'labkit-tasks-v2'", "the wrong format"),
    Bad("reading task file", "dev.json", b" \n", "the task file is empty", "blank"),
    Bad("reading task file", "dev.json", b'{"split": "d\xe9v"}', "the task file is not UTF-8 text",
        "a file saved as Latin-1"),
    # exercise submissions
    Bad("exercise submission", "mine.py", b"def f(:\n    return 1\n", "importing mine.py failed at line 1: SyntaxError",
        "not valid Python"),
    Bad("exercise submission", "mine.py", b"ROWS = []\x00\n", "mine.py is a binary file", "NUL bytes"),
    Bad("exercise submission", "mine.py", b"\n", "mine.py is empty", "an empty file"),
    Bad("exercise submission", "mine.py", b"NAME = 'caf\xe9'\n", "mine.py is not UTF-8 text",
        "Latin-1 without a coding line"),
    Bad("exercise submission", "mine.py", b"#\n" * (1 << 19) + b"x = 1\n", "too large for an exercise's answer",
        "a file over 1 MiB"),
    # server URLs (the value of --server)
    Bad("server URL", "--server", b"localhost:8000", "write the scheme too: http://localhost:8000",
        "`localhost:8000` (no scheme)"),
    Bad("server URL", "--server", b"http://127.0.0.1:80x0", "has the port '80x0', not a number from 1 to 65535",
        "a port that is no number"),
    Bad("server URL", "--server", b"http://127.0.0.1:99999", "has the port '99999'", "a port over 65535"),
    Bad("server URL", "--server", b"http://:8000", "names no host", "no host"),
    Bad("server URL", "--server", b"http://127.0.0.1:8000/v1/completions",
        "names an endpoint (/v1/completions), not the server", "an endpoint's URL"),
    Bad("server URL", "--server", b"http://127.0.0.1:8000 ", "holds spaces", "a trailing space"),
    # model names (the value of --model)
    Bad("model name", "--model", b"qwen-7b", "use one of: " + ", ".join(model_names()), "an unknown name"),
    Bad("model name", "--model", b"models/missing.gguf", "no model file at models/missing.gguf", "a missing file"),
]


def _error(row: Bad) -> LabkitError:
    """The error ``row``'s loader raises on its content (in the current folder)."""
    path = Path(row.name if not row.name.startswith("--") else "value.txt")
    path.write_bytes(row.content)
    try:
        LOADERS[row.loader](path)
    except LabkitError as exc:
        return exc
    finally:
        path.unlink()
    raise AssertionError(f"{row.loader} accepted {row.input}")


def test_the_table_has_forty_rows_and_every_loader() -> None:
    assert len(ROWS) >= 40
    assert {r.loader for r in ROWS} == set(LOADERS)


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.loader}: {r.input}" for r in ROWS])
def test_bad_input_gets_a_clear_error(row: Bad, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    err = _error(row)
    assert row.says in str(err), str(err)
    assert err.hint, f"{row.input}: the error says what was wrong but not what to do"


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def doc_block(folder: Path) -> str:
    """The markdown table of :data:`ROWS`, each with the error its loader gives (run in ``folder``)."""
    here = Path.cwd()
    os.chdir(folder)
    try:
        lines = ["| reader | file | input | what the error says |", "|---|---|---|---|"]
        for row in ROWS:
            err = _error(row)
            said = _one_line(err.message) + (f" — *what to do:* {_one_line(err.hint)}" if err.hint else "")
            lines.append(f"| {row.loader} | `{row.name}` | {row.input} | {said} |")
    finally:
        os.chdir(here)
    return "\n".join(lines)


def test_the_docs_show_this_table(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    assert found, f"docs/commands.md lacks the {BEGIN} ... {END} block"
    assert found.group(1) == doc_block(tmp_path), \
        "docs/commands.md shows another bad-input table: run scripts/update_bad_input_table.py"


CLI = [  # (the row, the command that reads it; {} is the file)
    ("user script", "last turn `- yes`", ["chat", str(ROOT / "data/dialog/support/scenario.yaml"), "--script", "{}"]),
    ("scenario", "a tab in the indentation", ["diagram", "{}"]),
    ("code task file", "`split: no`", ["repoedit", "tasks", "--tasks", "{}"]),
    ("server URL", "`localhost:8000` (no scheme)", ["complete", "hi", "--server", "localhost:8000"]),
    ("model name", "an unknown name", ["complete", "hi", "--model", "qwen-7b"]),
]


@pytest.mark.parametrize(("loader", "label", "argv"), CLI, ids=[f"{c[0]}: {c[1]}" for c in CLI])
def test_the_command_line_prints_the_error_without_a_traceback(loader: str, label: str, argv: list[str],
                                                                 tmp_path: Path) -> None:
    row = next(r for r in ROWS if r.loader == loader and r.input == label)
    path = tmp_path / row.name
    if not row.name.startswith("--"):
        path.write_bytes(row.content)
    command = [sys.executable, "-m", "labkit", *(str(path) if a == "{}" else a for a in argv)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert row.says.split(": ", 1)[-1] in done.stderr and "what to do:" in done.stderr, done.stderr
