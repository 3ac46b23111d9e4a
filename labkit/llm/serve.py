"""``python -m labkit.llm.serve --model FILE.gguf ...``: ``llama_cpp.server`` with the model loaded by this
machine's :class:`labkit.llm.native.LoadPlan`; :func:`serving` runs one on a free port for a ``with`` block."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

from labkit.core.errors import LabkitError
from labkit.llm.native import apply_plan_process_wide


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(log: Path, size: int = 2000) -> str:
    return Path(log).read_text(encoding="utf-8", errors="replace")[-size:]


@contextlib.contextmanager
def serving(model: str | Path, log: Path, *, threads: int = 2, extra: Sequence[str] = (),
            ready_s: float = 180.0) -> Iterator[str]:
    """Run ``labkit.llm.serve`` on a free loopback port and yield its base URL, always stopping it; output
    goes to ``log``; not answering ``/v1/models`` within ``ready_s`` is an error."""
    port = free_port()
    with Path(log).open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "labkit.llm.serve", "--model", str(model), "--host",
                                 "127.0.0.1", "--port", str(port), "--n_threads", str(threads), *extra],
                                stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if proc.poll() is not None:
                raise LabkitError(f"the llama.cpp server exited with {proc.returncode} before answering; its "
                                  f"output ends:\n{_tail(log)}", f"read its whole output: {log}")
            try:
                urllib.request.urlopen(f"{url}/v1/models", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise LabkitError(f"the llama.cpp server did not answer within {ready_s:.0f} s; its output "
                                      f"ends:\n{_tail(log)}", f"read its whole output: {log}") from None
                time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def main() -> None:
    plan = apply_plan_process_wide()
    print(f"labkit.llm.serve: {plan.label} — {plan.reason}", file=sys.stderr, flush=True)
    from llama_cpp.server.__main__ import main as llama_cpp_server_main

    llama_cpp_server_main()


if __name__ == "__main__":
    main()
