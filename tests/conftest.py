"""Shared fixtures: a real llama.cpp server, a real JupyterLab server and scripted JSON servers on loopback; a
scripted dialog model."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from labkit.llm.backend import Request
from labkit.llm.modelfile import embedded_model_path
from labkit.llm.serve import free_port, serving

MODEL_THREADS = 1
"""llama.cpp threads for every live model the tests start. make test runs two workers on two cores; a model at
two threads beside a busy neighbour spins on a core it does not get and runs about ten times slower, while one
thread per model keeps each to its own core."""

Answer = Callable[[str, str, dict[str, Any], int], "tuple[int, dict[str, Any]] | None"]


class JsonServer:
    """A real HTTP server on loopback whose answers are scripted: ``answer(method, path, body, n)`` gives
    (status, JSON body) for the ``n``-th request (from 1), or None for a 404. Every request is kept in
    :attr:`requests`, as (method, path, body)."""

    def __init__(self, answer: Answer) -> None:
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, method: str) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length)) if length else {}
                owner.requests.append((method, self.path, body))
                got = answer(method, self.path, body, len(owner.requests))
                code, data = got if got is not None else (404, {"error": "not found"})
                raw = json.dumps(data).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def posts(self) -> list[dict[str, Any]]:
        return [body for method, _, body in self.requests if method == "POST"]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def json_server() -> Iterator[Callable[[Answer], JsonServer]]:
    """Start scripted JSON servers (:class:`JsonServer`); each is stopped when the test ends."""
    started: list[JsonServer] = []

    def start(answer: Answer) -> JsonServer:
        started.append(JsonServer(answer))
        return started[-1]

    yield start
    for server in started:
        server.stop()


READING_TASKS_DIR = Path(__file__).resolve().parents[1] / "data" / "tasks" / "v2"


@pytest.fixture(scope="module")
def dev() -> Any:
    """The reading comparison's dev tasks (data/tasks/v2/dev.json)."""
    from labkit.reading.taskfile import load_task_set

    return load_task_set(READING_TASKS_DIR / "dev.json")


@pytest.fixture(scope="module")
def test_set() -> Any:
    """The reading comparison's test tasks (data/tasks/v2/test.json)."""
    from labkit.reading.taskfile import load_task_set

    return load_task_set(READING_TASKS_DIR / "test.json")


def stub_reading_answer(schema: dict[str, Any] | None) -> str:
    """A stand-in model for the reading comparison: the first option of an enum, an invented form, "done" for a
    whole-task prompt. Its answers are valid, seldom right: enough to drive every arm through its states."""
    props = (schema or {}).get("properties", {})
    for name, prop in props.items():
        if "enum" in prop and name != "action":
            return json.dumps({name: prop["enum"][0]})
    if "order" in props:
        return json.dumps({"order": "ORD-1", "date": "2025-01-01", "amount": "1.00", "name": "Nobody Here"})
    return json.dumps({"action": "done", "args": {}})


@pytest.fixture(scope="module")
def embedded_llm(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The embedded model in process (its own grammar cache), loaded once per test module."""
    from labkit.llm.llamacpp import LlamaCppBackend

    return LlamaCppBackend(cache_dir=tmp_path_factory.mktemp("cache"), n_threads=MODEL_THREADS)


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (for testing a server that is down)."""
    return free_port()


def wait_until_answering(proc: subprocess.Popen, name: str, probe: Callable[[], object], limit_s: float,
                         log_tail: Callable[[], str]) -> None:
    """Poll ``probe`` until it answers; fail the test, with the log's end, if the process exits or takes too long."""
    deadline = time.monotonic() + limit_s
    while True:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited with {proc.returncode}:\n{log_tail()}")
        try:
            probe()
            return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"{name} not ready after {limit_s} s:\n{log_tail()}")
            time.sleep(0.25)


@contextlib.contextmanager
def llama_server(log_dir: Path, *, threads: int = MODEL_THREADS, model: Path | None = None) -> Iterator[str]:
    """``python -m labkit.llm.serve`` with ``model`` (default: the embedded one) on a free loopback port; always
    stopped (a server that does not come up is an error quoting the end of its output)."""
    with serving(model or embedded_model_path(), log_dir / f"server-{free_port()}.log", threads=threads,
                 ready_s=90) as url:
        yield url


@pytest.fixture(scope="module")
def server_url(tmp_path_factory) -> Iterator[str]:
    """A real llama.cpp server (``python -m labkit.llm.serve``) with the embedded model, always stopped.

    Module-scoped: an idle server still costs CPU, so it lives only while the module that needs it runs.
    """
    with llama_server(tmp_path_factory.mktemp("server")) as url:
        yield url


@pytest.fixture
def start_llama_server(tmp_path: Path) -> Callable[..., contextlib.AbstractContextManager[str]]:
    """``start_llama_server(threads=MODEL_THREADS, model=None)`` starts one more loopback server in a ``with``
    block (tests that need two, or another model); stopped with the test.
    """
    return lambda threads=MODEL_THREADS, model=None: llama_server(tmp_path, threads=threads, model=model)


class JupyterLab:
    """A running ``jupyter lab`` on loopback: its base URL, token and log."""

    def __init__(self, url: str, token: str, log: Path) -> None:
        self.url, self.token, self.log = url, token, log

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(f"{self.url}{path}?token={self.token}", timeout=10) as reply:
            return reply.read()

    def contents(self, path: str, method: str = "GET", body: dict | None = None) -> dict:
        """Jupyter's contents API, the one the file browser and the notebook editor use."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}/api/contents/{path}", data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            return json.loads(reply.read())

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


JUPYTER_START_S = 90


@contextlib.contextmanager
def jupyter_lab(root_dir: Path, home: Path, *, options: Sequence[str] = (), env: dict[str, str] | None = None,
                cwd: Path | None = None) -> Iterator[JupyterLab]:
    """Start this environment's JupyterLab on a free loopback port, serving ``root_dir``; always stop it.

    Its configuration, settings and runtime files live under ``home``, never the user's; ``options`` come
    before the test's own (port, token, root), so a test can pass ``make lab``'s options unchanged.
    """
    token, port = secrets.token_hex(16), free_port()
    full_env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
                "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
                "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), **(env or {})}
    command = [sys.executable, "-m", "jupyterlab", *options, "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root_dir}", "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0 and "--allow-root" not in options:
        command.append("--allow-root")
    log = home / "jupyter-lab.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, cwd=cwd or root_dir, env=full_env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    server = JupyterLab(f"http://127.0.0.1:{port}", token, log)
    try:
        wait_until_answering(proc, "jupyter lab", lambda: server.get("/api/status"), JUPYTER_START_S, server.tail)
        yield server
    finally:
        # the whole session: the server and the kernels it started
        for stop in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, stop)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue


@pytest.fixture
def start_jupyter_lab(tmp_path: Path) -> Callable[..., contextlib.AbstractContextManager[JupyterLab]]:
    """``start_jupyter_lab(root_dir, options=..., env=...)`` starts JupyterLab in a ``with`` block."""
    return lambda root_dir, **kw: jupyter_lab(root_dir, tmp_path / "jupyter", **kw)


def echo(request: Request) -> str:
    """A scripted dialog model: it moves on with the user's latest words as the current step's first value (a
    machine prompt), else it stays. Tests of the dialog runner use it, not a model."""
    step = re.search(r"Current step: (\w+)\.", request.prompt)
    said = re.findall(r"^User: (.*)$", request.prompt, flags=re.M)
    field = re.search(r"Results to fill in this step:\n- (\w+) \((\w+)", request.prompt)
    if step is None or field is None or not said:
        return json.dumps({"message": "OK. What do you need?", "signal": "stay", "results": {}, "summary": ""})
    value: object = said[-1].rstrip(".")
    if field.group(2) == "list":
        value = [value]
    return json.dumps({"message": "Noted.", "signal": "next", "results": {field.group(1): value}, "summary": "ok"})
