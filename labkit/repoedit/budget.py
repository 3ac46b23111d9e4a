"""One budget of model calls per run, counted at the one place every call passes.

The code comparison gives every model arm the same number of calls. The machine has no such counter
of its own (its budgets are per state), and a free loop counts steps, not calls; so the cap and the
counts (calls, tokens, model seconds) live in a wrapper around the run's backend, the same for every
arm. A call past the budget raises :class:`BudgetSpent` before it reaches the model: the machine's
planner records it as a refusal and routes on (in the end to a rollback), the loops stop.

A cassette miss during a replay is remembered (``miss``) even when the arm's code catches it as one
more failed call: the runner re-raises it, since a replay that differs from its recording must stop.
"""

from __future__ import annotations

from labkit.llm.backend import Backend, Completion, Request
from labkit.llm.errors import BackendError, CassetteMiss
from labkit.llm.metered import MeteredBackend


class BudgetSpent(BackendError):
    """The run has used every model call it was given."""


class BudgetedBackend(MeteredBackend):
    """Counts every call (:attr:`meter`) and refuses the ``budget + 1``-th."""

    kind = "budgeted"

    def __init__(self, inner: Backend, budget: int) -> None:
        super().__init__(inner)
        self.budget = budget
        self.miss: CassetteMiss | None = None

    @property
    def calls(self) -> int:
        return len(self.meter.calls)

    @property
    def left(self) -> int:
        return self.budget - self.calls

    def _complete(self, request: Request) -> Completion:
        if self.calls >= self.budget:
            raise BudgetSpent(f"the run's budget of {self.budget} model call(s) is spent",
                              "the run ends with what it has; raise --call-budget for every arm alike.")
        try:
            return super()._complete(request)
        except CassetteMiss as miss:
            self.miss = miss
            raise
