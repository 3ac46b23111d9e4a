# BEGIN SOLUTION
"""Exercise 08a, one solution: the flow whitelist and a lifecycle computed from the persisted layers."""
# STUB: """Exercise 08a: the flow whitelist and the lifecycle view. Fill in the TODOs, then run `labkit check 08a`."""
# END SOLUTION

from __future__ import annotations

PHASES = ("INIT", "PREMISE", "OUTLINE", "WRITING", "COMPLETE")

FLOW_WHITELIST: dict[str, set[str]] = {
    "IDLE": {"WRITING", "STEERING"},
    # BEGIN SOLUTION
    "WRITING": {"REVIEWING", "REWRITING", "POLISHING", "STEERING", "IDLE"},
    "REVIEWING": {"WRITING", "REWRITING", "POLISHING", "STEERING", "IDLE"},
    "REWRITING": {"WRITING", "STEERING"},
    "POLISHING": {"WRITING", "STEERING"},
    "STEERING": {"WRITING", "REVIEWING", "REWRITING", "POLISHING"},
    # STUB: # TODO: WRITING, REVIEWING, REWRITING, POLISHING, STEERING (see the README)
    # END SOLUTION
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

    # BEGIN SOLUTION
    @property
    def lifecycle(self) -> str:
        """Computed on every read; there is no setter, so nobody can make it disagree with the layers."""
        if self._aborted or (self._phase == "COMPLETE" and self._flow != "IDLE"):
            return "paused"
        if self._phase == "COMPLETE":
            return "completed"
        return "running" if self._running else "idle"
    # STUB: # TODO: the lifecycle must be a view computed from the layers, and impossible to assign.
    # STUB: lifecycle = "idle"
    # END SOLUTION
