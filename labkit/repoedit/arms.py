"""The arms of the code comparison, each one declaration: what runs, with which planner, features and edit format.

Every arm gets the same task, the same model (where it uses one), the same budget of model calls
(:class:`~labkit.repoedit.budget.BudgetedBackend`) and is judged by the same verifier
(:mod:`~labkit.repoedit.verify`) on the tree it leaves. An arm is named by what it holds: ``machine`` (every
feature), ``machine_without_<feature>`` (generated from :data:`~labkit.repoedit.features.FEATURES`),
``machine_bare`` (no feature), the one-prompt baselines, the free loop, the oracles (the known fix through the
machine: the ceiling, and a check of the harness), ``machine_noop`` (a planner that skips every edit: what the
machine alone fixes), and best-of-N wrappers. Adding an arm is one entry in :data:`ARMS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.store import JsonlLog
from labkit.repoedit.arm_io import ArmEnd, ArmInputs, discard_on_error
from labkit.repoedit.best_of import best_of
from labkit.repoedit.features import ALL as ALL_FEATURES
from labkit.repoedit.features import FEATURES, FeatureSet
from labkit.repoedit.formats import FORMATS, edit_format
from labkit.repoedit.free_loop import loop_head, run_free_loop
from labkit.repoedit.machine import RepoEditRun
from labkit.repoedit.planners import EditView, ModelPlanner, OraclePlanner, Planner, PlanView, Proposal
from labkit.repoedit.prompt_excerpt import run_prompt_excerpt
from labkit.repoedit.prompt_only import run_prompt_only
from labkit.repoedit.prompt_whole import run_prompt_whole


class NoopPlanner:
    """Plans the first source file of the index, then skips every edit (the machine without a proposer)."""

    name = "noop"

    def propose_plan(self, view: PlanView) -> Proposal:
        first = view.files.splitlines()[0].split(":", 1)[0]
        return Proposal(json.dumps({"steps": [{"file": first, "why": "the first source file"}]}))

    def propose_edit(self, view: EditView) -> Proposal:
        return Proposal(json.dumps({"status": "skip", "reason": "the noop planner changes nothing"}))


def _model_planner(inputs: ArmInputs) -> Planner:
    if inputs.backend is None:
        raise LabkitError("a model arm was run without a model backend", "this is a bug in the caller.")
    return ModelPlanner(inputs.backend, temperature=inputs.temperature, seed=inputs.seed)


PLANNERS: dict[str, Callable[[ArmInputs], Planner]] = {
    "model": _model_planner, "oracle": lambda i: OraclePlanner(i.task), "noop": lambda i: NoopPlanner()}
"""Who proposes in a machine arm (only ``model`` calls the model)."""
PROMPT_RUNS: dict[str, Callable[[ArmInputs], ArmEnd]] = {
    "prompt_only": run_prompt_only, "prompt_whole": run_prompt_whole, "prompt_excerpt": run_prompt_excerpt,
    "free_loop": run_free_loop}
"""The arms without the machine, by their runner; each is its model's only contract."""


def _backend_versions(inputs: ArmInputs) -> dict[str, str]:
    if inputs.backend is None:
        return {}
    info: Mapping[str, Any] = inputs.backend.describe()
    return {k: str(info[k]) for k in ("backend", "model_sha256", "llama_cpp_python") if info.get(k)}


@dataclass(frozen=True)
class Arm:
    """One arm: name and label, what it is, its runner (``machine`` or a key of :data:`PROMPT_RUNS`), the
    machine's planner and features, its edit format, and how many tries (best of N, :mod:`~labkit.repoedit.best_of`).

    Checked when built: an unknown feature, format, runner or planner is a :class:`LabkitError`."""

    name: str
    label: str
    about: str
    runner: str = "machine"
    planner: str = "model"
    features: frozenset[str] = field(default_factory=frozenset)
    edit_format: str = ""  # "": the one the features select (machine) or the runner's own
    tries: int = 1

    def __post_init__(self) -> None:
        FeatureSet.of(self.features)  # refuses an unknown name, listing the known ones
        if self.runner != "machine" and self.runner not in PROMPT_RUNS:
            raise LabkitError(f"arm {self.name}: unknown runner {self.runner!r}",
                              f"use machine or one of: {', '.join(PROMPT_RUNS)}.")
        if self.runner == "machine" and self.planner not in PLANNERS:
            raise LabkitError(f"arm {self.name}: unknown planner {self.planner!r}",
                              f"use one of: {', '.join(PLANNERS)}.")
        if self.runner != "machine" and self.features:
            raise LabkitError(f"arm {self.name}: features are the machine's", "give features to machine arms only.")
        if not self.edit_format:
            chosen = FeatureSet.of(self.features).edit_format() if self.runner == "machine" else RUNNER_FORMATS[
                self.runner]
            object.__setattr__(self, "edit_format", chosen)
        edit_format(self.edit_format, per_file=self.runner == "machine")
        if self.tries < 1:
            raise LabkitError(f"arm {self.name}: {self.tries} tries", "give an arm at least one try.")

    @property
    def machine(self) -> bool:
        return self.runner == "machine"

    @property
    def uses_model(self) -> bool:
        return not self.machine or self.planner == "model"

    def run(self, inputs: ArmInputs) -> ArmEnd:
        """Run the arm once on ``inputs`` (every try, for best of N)."""
        once = self._run_machine if self.machine else PROMPT_RUNS[self.runner]
        return (best_of(once, self.tries) if self.tries > 1 else once)(inputs)

    def _run_machine(self, inputs: ArmInputs) -> ArmEnd:
        """The repo-editing machine with this arm's planner, features and format; its copy kept for the verifier."""
        log = JsonlLog(inputs.log_path, run_id=inputs.task.id) if inputs.log_path else None
        machine = RepoEditRun(inputs.source, inputs.task.requirement, PLANNERS[self.planner](inputs),
                              limits=inputs.limits, log=log, clock=inputs.clock, python=inputs.python,
                              task_id=inputs.task.id, keep=True, versions=_backend_versions(inputs),
                              features=self.features, edit_format=self.edit_format)
        with discard_on_error(machine.workspace):
            state = machine.run()
        return ArmEnd(f"{state.status}: {state.reason}", machine.workspace, test_runs=state.test_runs,
                      edits=len(state.applied), refused=len(state.refusals))

    def head(self, budget: int) -> str | None:
        """The text that opens every prompt of the arm whatever the task (given the call budget), so that an
        in-process model can keep its evaluated state between calls (``prefixes``); None: no model is asked."""
        if not self.uses_model:
            return None
        return loop_head(budget) if self.runner == "free_loop" else FORMATS[self.edit_format].head


RUNNER_FORMATS = {"prompt_only": "all_changes", "prompt_whole": "whole_files", "prompt_excerpt": "definitions",
                  "free_loop": "search_replace"}
"""The edit format each runner without the machine asks for (the free loop's apply_edit takes search/replace)."""
BEST_OF = 3


def best_of_arm(arm: Arm, k: int = BEST_OF) -> Arm:
    """``arm`` tried up to ``k`` times, the first try greedy and the others sampled, each in a fresh copy; the
    first that passes the visible tests is kept. The same k wraps the strongest baseline and the machine."""
    return replace(arm, name=f"{arm.name}_best_of_{k}", label=f"{arm.label}, best of {k}", tries=k,
                   about=f"{arm.name}, then up to {k - 1} sampled tries in fresh copies; the first that passes "
                         "the visible tests is kept")


PROMPT_ONLY = Arm("prompt_only", "prompt-only", "one prompt with every source file; all edits at once, applied "
                  "as given; no retry", runner="prompt_only")
PROMPT_WHOLE = Arm("prompt_whole", "prompt-only, whole files", "one chat prompt with every source file and the "
                   "failing output, answered with whole files", runner="prompt_whole")
PROMPT_EXCERPT = Arm("prompt_excerpt", "prompt-only, what the failure names", "one prompt with the failing output "
                     "and the file it names first (an excerpt of the blamed definitions if long), answered with "
                     "whole definitions; no test run", runner="prompt_excerpt")
MACHINE = Arm("machine", "machine (every feature)", "the machine with every feature of labkit.repoedit.features",
              features=ALL_FEATURES)
ARMS: dict[str, Arm] = {arm.name: arm for arm in (
    PROMPT_ONLY,
    Arm("prompt_tools", "prompt + tools (free loop)", "a free loop of read_file / apply_edit / run_tests / done; "
        "no guards but the physical ones", runner="free_loop"),
    PROMPT_WHOLE,
    PROMPT_EXCERPT,
    MACHINE,
    *(Arm(f"machine_without_{f.name}", f"machine without {f.name}", f"ablation: machine without {f.name} "
          f"({f.about})", features=ALL_FEATURES - {f.name}) for f in FEATURES),
    Arm("machine_bare", "machine, no feature", "the repo-editing machine with no feature on, the model proposing "
        "the plan and each edit"),
    Arm("oracle", "machine + oracle", "the machine with every feature and the known fix: the ceiling",
        planner="oracle", features=ALL_FEATURES),
    Arm("bare_oracle", "machine, no feature + oracle", "the machine with no feature and the known fix",
        planner="oracle"),
    Arm("machine_noop", "machine + noop", "the machine with a planner that skips every edit: what the machine "
        "alone fixes", planner="noop"),
    best_of_arm(PROMPT_WHOLE),
    best_of_arm(MACHINE),
    best_of_arm(PROMPT_EXCERPT, 6),
)}
BEST_OF_ARMS = tuple(name for name, arm in ARMS.items() if arm.tries > 1)
ABLATION_ARMS = tuple(f"machine_without_{f.name}" for f in FEATURES)
DEFAULT_ARMS = ("prompt_only", "prompt_tools", "prompt_whole", "machine", "oracle")
"""The headline arms: the baselines, the machine and its ceiling (ablations, best of N and the bare machine are
opt-in)."""


def arm(name: str) -> Arm:
    """The arm ``name``; an unknown name is refused with the known ones."""
    if name not in ARMS:
        raise LabkitError(f"unknown arm {name!r}", f"use one of: {', '.join(ARMS)}.")
    return ARMS[name]
