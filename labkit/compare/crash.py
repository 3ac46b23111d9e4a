"""``labkit bench crash-recorders``: each comparison's recorder (:data:`RECORDERS`, a small recording that
needs no model) SIGKILLed at random moments, then finished by ``--resume``: the rows must be the
uninterrupted recording's, each once, no line torn, no working copy left behind."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.compare.command import SCRATCH, row_differences
from labkit.core.errors import LabkitError

TIMES = ("wall_s", "model_s")


@dataclass(frozen=True)
class Recorder:
    """A small recording of one comparison that needs no model (``server``: answered by :func:`scripted_server`)."""

    name: str
    argv: tuple[str, ...]
    server: bool = False


RECORDERS = (
    Recorder("reading", ("compare", "reading", "--arms", "machine-rule,machine-oracle", "--split", "all",
                         "--per-family", "2")),
    Recorder("code", ("compare", "code", "--arms", "oracle,machine_noop",
                      "--only", "pager-partial-page,retry-default-attempts")),
    Recorder("dialog", ("compare", "dialog", "--arms", "machine,prompt_only_checked", "--split", "dev",
                        "--only", "a01,s01"), server=True),
)


def _value(schema: dict[str, Any]) -> Any:
    """The first value a JSON schema allows, roughly: what a deterministic stand-in for a model answers."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _value(schema[key][0])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        return {name: _value(sub) for name, sub in schema.get("properties", {}).items()}
    return {"array": [], "string": "x", "integer": 0, "number": 0, "boolean": False, "null": None}.get(kind, "x")


@contextmanager
def scripted_server() -> Iterator[str]:
    """An OpenAI-compatible completion server on loopback that answers every schema with its first value."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            schema = body.get("json_schema")
            text = "0" if body.get("max_tokens") == 1 else json.dumps(_value(schema)) if schema else " ok"
            raw = json.dumps({"choices": [{"text": text, "finish_reason": "stop"}],
                              "usage": {"prompt_tokens": len(body.get("prompt", "")) // 4,
                                        "completion_tokens": 3}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _command(recorder: Recorder, out: Path, url: str | None) -> list[str]:
    server = ["--server", url, "--server-model", "scripted", "--model-sha256", "0" * 64,
              "--schema-mode", "json_schema"] if url else []
    return [sys.executable, "-m", "labkit", *recorder.argv, *server, "--out", str(out), "--resume", "--quiet"]


def _run(command: Sequence[str], kill_after: float | None, log: Path) -> bool:
    """Run the recording; with ``kill_after``, SIGKILL its whole process group then. True if it was killed."""
    with log.open("a", encoding="utf-8") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=sink, start_new_session=True)
        try:
            code = proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return True
    if code != 0:
        raise LabkitError(f"a recording exited with {code} instead of finishing", f"see {log}.")
    return False


def _rows(out: Path) -> tuple[list[dict[str, Any]], int]:
    """The rows of ``out/runs.jsonl`` and how many of its lines are torn (not a JSON object)."""
    rows, torn = [], 0
    path = out / "runs.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            torn += 1
    return rows, torn


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return row.get("split"), row["arm"], row["task"], row.get("seed", 0)


def crash_one(recorder: Recorder, *, kills: int, kills_per_trial: int, rng: random.Random, work: Path,
              url: str | None = None, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Figures of one recorder: trials until ``kills`` kills have landed (a kill drawn after the recording ended
    does not count), and the rows lost, doubled, torn or different after each trial's last resume."""
    started = time.perf_counter()
    reference = work / f"{recorder.name}-reference"
    _run(_command(recorder, reference, url), None, work / f"{recorder.name}.log")
    wall = time.perf_counter() - started
    expected, _ = _rows(reference)
    figures = {"rows": len(expected), "reference_wall_s": round(wall, 1), "trials": 0, "kills": 0,
               "rows_lost": 0, "rows_doubled": 0, "torn_lines": 0, "rows_different": 0, "leftovers": 0}
    while figures["kills"] < kills:
        trial = figures["trials"] = figures["trials"] + 1
        out = work / f"{recorder.name}-{trial}"
        for _ in range(kills_per_trial):
            if not _run(_command(recorder, out, url), rng.uniform(0.2, wall * 1.1), work / f"{recorder.name}.log"):
                break  # it finished before its kill
            figures["kills"] += 1
        _run(_command(recorder, out, url), None, work / f"{recorder.name}.log")
        rows, torn = _rows(out)
        keys = [_key(r) for r in rows]
        figures["torn_lines"] += torn
        figures["rows_doubled"] += len(keys) - len(set(keys))
        figures["rows_lost"] += len({_key(r) for r in expected} - set(keys))
        figures["rows_different"] += len(row_differences(expected, rows, _key, TIMES))
        figures["leftovers"] += sum(1 for _ in (out / SCRATCH).iterdir()) if (out / SCRATCH).exists() else 0
        if say is not None:
            say(f"{recorder.name}: trial {trial}, {figures['kills']}/{kills} kills")
    return figures


def bench_crash_recorders(*, kills: int = 50, kills_per_trial: int = 5, seed: int = 2026,
                          recorders: Sequence[Recorder] = RECORDERS,
                          say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every declared recorder's figures, with the seed, commit and machine that produced them."""
    from labkit.core.provenance import git_commit, machine

    rng = random.Random(seed)
    result: dict[str, Any] = {"seed": seed, "kills_asked": kills, "kills_per_trial": kills_per_trial,
                              "labkit_commit": git_commit(), "machine": machine(), "recorders": {}}
    with tempfile.TemporaryDirectory(prefix="labkit-crash-recorders-") as scratch:
        for recorder in recorders:
            if recorder.server:
                with scripted_server() as url:
                    figures = crash_one(recorder, kills=kills, kills_per_trial=kills_per_trial, rng=rng,
                                        work=Path(scratch), url=url, say=say)
            else:
                figures = crash_one(recorder, kills=kills, kills_per_trial=kills_per_trial, rng=rng,
                                    work=Path(scratch), say=say)
            result["recorders"][recorder.name] = figures
    return result


def failures(result: dict[str, Any]) -> list[str]:
    """What went wrong in a result: any row lost, doubled, torn or different, or a working copy left."""
    return [f"{name}: {figure} {value}" for name, figures in result["recorders"].items()
            for figure, value in figures.items()
            if figure in ("rows_lost", "rows_doubled", "torn_lines", "rows_different", "leftovers") and value]


def render(result: dict[str, Any]) -> str:
    lines = ["| recorder | rows | kills | lost | doubled | torn | different | leftovers |", "|---" * 8 + "|"]
    lines += [f"| {name} | {f['rows']} | {f['kills']} | {f['rows_lost']} | {f['rows_doubled']} | {f['torn_lines']} | "
              f"{f['rows_different']} | {f['leftovers']} |" for name, f in result["recorders"].items()]
    return "\n".join(lines)


def _cmd(args: Any) -> int:
    say = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    result = bench_crash_recorders(kills=args.kills, kills_per_trial=args.kills_per_trial, seed=args.seed,
                                   say=say)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(render(result))
    return 1 if failures(result) else 0


def register(commands: Any, bench: Any) -> None:
    """Add ``labkit bench crash-recorders``."""
    del commands
    b = bench.add_parser("crash-recorders", help="each comparison's recorder killed with SIGKILL at random "
                         "points, then resumed: rows lost, doubled, torn")
    b.add_argument("--kills", type=int, default=50, help="kills per comparison, at the least (default 50)")
    b.add_argument("--kills-per-trial", type=int, default=5, help="kills of one recording before its last resume "
                   "(default 5)")
    b.add_argument("--seed", type=int, default=2026)
    b.add_argument("--out", help="write the figures as JSON here (e.g. data/bench/crash-recorders.json)")
    b.add_argument("--quiet", action="store_true")
    b.set_defaults(func=_cmd)
