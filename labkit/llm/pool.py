"""Several servers of one model (same file, same sampling, else refused); a run borrows one for all its
calls, the one with the fewest runs in flight, then fewest lent. ``slots`` bounds runs per server; a
barrier-isolated server with several slots passes calls one at a time (:class:`SerialCalls`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from labkit.core.errors import LabkitError
from labkit.llm.backend import Backend, Completion, Request, WrappedBackend


class SerialCalls(WrappedBackend):
    """Holds a lock around each call of ``inner``: a barrier request and its call are never split."""

    kind = "serial"

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self._lock = threading.Lock()

    def _complete(self, request: Request) -> Completion:
        with self._lock:
            return self.inner._complete(request)


class ServerPool(Backend):
    """Servers that answer alike; :meth:`borrow` hands one to a run. A :class:`Backend` only for provenance:
    calling it directly is refused."""

    kind = "server_pool"

    def __init__(self, servers: Sequence[Backend], *, slots: int | Sequence[int] | None = None) -> None:
        if not servers:
            raise LabkitError("a server pool needs at least one server", "give --server URL once or more.")
        self.slots = None if slots is None else \
            [slots] * len(servers) if isinstance(slots, int) else list(slots)
        if self.slots is not None and (len(self.slots) != len(servers) or min(self.slots) < 1):
            raise LabkitError(f"slots {slots} do not fit {len(servers)} server(s)",
                              "give one number of at least 1 (--slots N), for every server alike, or one per server.")
        self.servers = tuple(SerialCalls(server) if self.slots and self.slots[i] > 1
                             and getattr(server, "isolate_calls", False) else server
                             for i, server in enumerate(servers))
        self._in_flight = [0] * len(self.servers)
        self._runs = [0] * len(self.servers)
        self._lock = threading.Condition()
        self._check_alike()

    def capacity(self) -> int | None:
        """How many runs the pool holds at once (None: no bound)."""
        return None if self.slots is None else sum(self.slots)

    def _check_alike(self) -> None:
        first = self.servers[0]
        names = [self.name(i) for i in range(len(self.servers))]
        if len(set(names)) != len(names):
            raise LabkitError(f"a server is given twice: {', '.join(names)}",
                              "give each server once; run more runs at once with --concurrency.")
        for i, other in enumerate(self.servers[1:], start=1):
            if other.model_id() != first.model_id():
                raise LabkitError(f"{self.name(i)} serves model {other.model_id()}, but {self.name(0)} serves "
                                  f"{first.model_id()}", "serve the same model file on every server: runs "
                                  "spread over them must get the answers one server would give.")
            if other.sampling() != first.sampling():
                raise LabkitError(f"{self.name(i)} samples with {other.sampling()}, {self.name(0)} with "
                                  f"{first.sampling()}", "use the same sampling settings on every server.")

    def name(self, index: int) -> str:
        """How server ``index`` is named in results: its URL where it has one."""
        info = self.servers[index].describe()
        return str(info.get("server") or f"{info.get('backend', 'backend')}#{index}")

    @contextmanager
    def borrow(self) -> Iterator[tuple[str, Backend]]:
        """Lend the least busy server to one run: yields (its name, the server). Waits while every slot is taken."""
        with self._lock:
            free = self._lock.wait_for(self._free)
            index = min(free, key=lambda i: (self._in_flight[i] / self._slots(i), self._runs[i], i))
            self._in_flight[index] += 1
            self._runs[index] += 1
        try:
            yield self.name(index), self.servers[index]
        finally:
            with self._lock:
                self._in_flight[index] -= 1
                self._lock.notify_all()

    def _slots(self, index: int) -> int:
        return 1 if self.slots is None else self.slots[index]

    def _free(self) -> list[int]:
        return [i for i in range(len(self.servers)) if self.slots is None or self._in_flight[i] < self.slots[i]]

    def runs_per_server(self) -> dict[str, int]:
        """How many runs each server was lent so far (the spread, for a report)."""
        with self._lock:
            return {self.name(i): n for i, n in enumerate(self._runs)}

    def describe(self) -> dict[str, Any]:
        first = self.servers[0].describe()
        return {**first, "backend": self.kind, "server": None,
                "servers": [self.name(i) for i in range(len(self.servers))]}

    def model_id(self) -> str:
        return self.servers[0].model_id()

    def sampling(self) -> dict[str, Any]:
        return self.servers[0].sampling()

    def _complete(self, request: Request) -> Completion:
        raise LabkitError("a server pool answers no call itself", "borrow a server for the run: "
                          "`with pool.borrow() as (name, server): ...`.")
