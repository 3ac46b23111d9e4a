"""Exercise 08a: the flow whitelist and the lifecycle view. Fill in the TODOs, then run `labkit check 08a`."""

from __future__ import annotations

PHASES = ("INIT", "PREMISE", "OUTLINE", "WRITING", "COMPLETE")

FLOW_WHITELIST: dict[str, set[str]] = {
    "IDLE": {"WRITING", "STEERING"},
    # TODO: WRITING, REVIEWING, REWRITING, POLISHING, STEERING (see the README)
}


class BookStatus:
    """The persisted layers of one book (phase, flow), two control facts, and the lifecycle as a view."""

    def __init__(self) -> None:
        self._phase = "INIT"
        self._flow = "IDLE"
        self._running = False
        self._aborted = False

    @classmethod
    def restore(cls, phase: str, flow: str) -> BookStatus:
        """A status rebuilt after a restart from the two persisted layers (nothing else was saved)."""
        status = cls()
        status._phase, status._flow = phase, flow
        return status

    @property
    def phase(self) -> str:
        return self._phase

    @property
    def flow(self) -> str:
        return self._flow

    def move_flow(self, dest: str) -> None:
        if dest not in FLOW_WHITELIST.get(self._flow, set()):
            raise ValueError(f"flow {self._flow} -> {dest} is not whitelisted")
        self._flow = dest

    def move_phase(self, dest: str) -> None:
        if PHASES.index(dest) < PHASES.index(self._phase):
            raise ValueError(f"phase {self._phase} -> {dest} goes back")
        self._phase = dest

    def start(self) -> None:
        self._running, self._aborted = True, False

    def abort(self) -> None:
        self._aborted = True  # the loop sees it at its next checkpoint and then calls stop()

    def stop(self) -> None:
        self._running = False

    # TODO: the lifecycle must be a view computed from the layers, and impossible to assign.
    lifecycle = "idle"
