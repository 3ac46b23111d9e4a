"""Shared fixtures: a real llama.cpp server on loopback, for the tests that talk to one."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from labkit.llm.modelfile import embedded_model_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (for testing a server that is down)."""
    return free_port()


@contextlib.contextmanager
def llama_server(log_dir: Path, *, threads: int = 2) -> Iterator[str]:
    """Start ``python -m labkit.llm.serve`` with the embedded model on a free loopback port; always stop it."""
    port = free_port()
    log = log_dir / f"server-{port}.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "labkit.llm.serve", "--model", str(embedded_model_path()),
                                 "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads)],
                                stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server not ready after 90 s:\n{log.read_text()[-2000:]}")
                time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@pytest.fixture(scope="module")
def server_url(tmp_path_factory) -> Iterator[str]:
    """A real llama.cpp server (``python -m labkit.llm.serve``) with the embedded model, always stopped.

    Module-scoped: an idle server still costs CPU, so it lives only while the module that needs it runs.
    """
    with llama_server(tmp_path_factory.mktemp("server")) as url:
        yield url


@pytest.fixture
def start_llama_server(tmp_path: Path) -> Callable[..., contextlib.AbstractContextManager[str]]:
    """``start_llama_server(threads=1)`` starts one more loopback server in a ``with`` block (tests that need two).

    A fixture rather than an import: the tests are not a package, so the module name ``conftest`` is not a
    reliable way to reach this file.
    """
    return lambda threads=2: llama_server(tmp_path, threads=threads)
