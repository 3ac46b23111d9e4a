"""The arms of the code comparison, each one declaration the runner, the report and the CLI read.

Every arm gets the same task, the same model (where it uses one), the same budget of model calls
(enforced by :class:`~labkit.repoedit.budget.BudgetedBackend`) and is judged by the same verifier
(:mod:`~labkit.repoedit.verify`) on the tree it leaves:

- ``prompt_only`` — one prompt with everything, all edits at once, applied as given
  (:mod:`~labkit.repoedit.prompt_only`);
- ``prompt_tools`` — a free loop over the workspace's tools, no machine (:mod:`~labkit.repoedit.free_loop`);
- ``machine_model`` — the repo-editing machine with the model planner;
- ``machine_oracle`` — the machine with the known fix: the ceiling, and a check of the harness;
- ``machine_noop`` — the machine with a planner that plans the first source file and then skips every
  edit: what the machine does on its own (nothing is fixed, and nothing is left broken).

There is no random or rule planner: a rule cannot write code, and a random edit is the noop arm with
noise. Adding an arm is one entry in :data:`ARMS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from labkit.core.store import JsonlLog
from labkit.repoedit.arm_io import ArmEnd, ArmInputs, discard_on_error
from labkit.repoedit.best_of import best_of
from labkit.repoedit.features import ALL as ALL_FEATURES
from labkit.repoedit.features import FEATURES
from labkit.repoedit.features import checked as checked_features
from labkit.repoedit.free_loop import loop_head, run_free_loop
from labkit.repoedit.machine import RepoEditRun
from labkit.repoedit.planners import (
    DEFINITION_HEAD,
    EDIT_HEAD,
    EditView,
    ModelPlanner,
    OraclePlanner,
    Planner,
    PlanView,
    Proposal,
)
from labkit.repoedit.prompt_only import HEAD as PROMPT_ONLY_HEAD
from labkit.repoedit.prompt_only import run_prompt_only
from labkit.repoedit.prompt_whole import HEAD as PROMPT_WHOLE_HEAD
from labkit.repoedit.prompt_whole import run_prompt_whole


@dataclass(frozen=True)
class Arm:
    """One arm: its name and label, whether it calls the model, whether it runs the machine, and its run.

    ``head``: the text that opens every prompt of the arm whatever the task (given the call budget), so
    that an in-process model can keep its evaluated state between calls (``prefixes``); None: no such text.
    """

    name: str
    label: str
    uses_model: bool
    machine: bool
    run: Callable[[ArmInputs], ArmEnd]
    about: str
    head: Callable[[int], str] | None = None


class NoopPlanner:
    """Plans the first source file of the index, then skips every edit (the machine without a proposer)."""

    name = "noop"

    def propose_plan(self, view: PlanView) -> Proposal:
        first = view.files.splitlines()[0].split(":", 1)[0]
        return Proposal(json.dumps({"steps": [{"file": first, "why": "the first source file"}]}))

    def propose_edit(self, view: EditView) -> Proposal:
        return Proposal(json.dumps({"status": "skip", "reason": "the noop planner changes nothing"}))


def _machine_run(planner_for: Callable[[ArmInputs], Planner],
                 features: frozenset[str] = frozenset()) -> Callable[[ArmInputs], ArmEnd]:
    """A machine arm's run: the repo-editing machine with ``planner_for(inputs)`` and ``features``, its copy
    kept for the verifier. ``features`` is checked here, when the arm is built: an unknown name is an error."""
    features = checked_features(features)

    def run(inputs: ArmInputs) -> ArmEnd:
        log = JsonlLog(inputs.log_path, run_id=inputs.task.id) if inputs.log_path else None
        versions = _backend_versions(inputs)
        machine = RepoEditRun(inputs.source, inputs.task.requirement, planner_for(inputs), limits=inputs.limits,
                              log=log, clock=inputs.clock, python=inputs.python, task_id=inputs.task.id,
                              keep=True, versions=versions, features=features)
        with discard_on_error(machine.workspace):
            state = machine.run()
        return ArmEnd(f"{state.status}: {state.reason}", machine.workspace, test_runs=state.test_runs,
                      edits=len(state.applied), refused=len(state.refusals))

    return run


def _backend_versions(inputs: ArmInputs) -> dict[str, str]:
    if inputs.backend is None:
        return {}
    info: Mapping[str, Any] = inputs.backend.describe()
    return {k: str(info[k]) for k in ("backend", "model_sha256", "llama_cpp_python") if info.get(k)}


def _model_planner(inputs: ArmInputs) -> Planner:
    assert inputs.backend is not None, "the machine_model arm needs a model"
    return ModelPlanner(inputs.backend, temperature=inputs.temperature, seed=inputs.seed)


ARMS: dict[str, Arm] = {arm.name: arm for arm in (
    Arm("prompt_only", "prompt-only", True, False, run_prompt_only,
        "one prompt with every source file; all edits at once, applied as given; no retry",
        lambda budget: PROMPT_ONLY_HEAD),
    Arm("prompt_tools", "prompt + tools (free loop)", True, False, run_free_loop,
        "a free loop of read_file / apply_edit / run_tests / done; no guards but the physical ones", loop_head),
    Arm("machine_model", "machine + model", True, True, _machine_run(_model_planner),
        "the repo-editing machine, the model proposing the plan and each edit", lambda budget: EDIT_HEAD),
    Arm("machine_oracle", "machine + oracle", False, True, _machine_run(lambda i: OraclePlanner(i.task)),
        "the machine with the known fix: the ceiling, and a check of the harness"),
    Arm("machine_noop", "machine + noop", False, True, _machine_run(lambda i: NoopPlanner()),
        "the machine with a planner that skips every edit: what the machine alone fixes"),
)}


def _plus_head(features: frozenset[str]) -> Callable[[int], str]:
    return lambda budget: DEFINITION_HEAD if "definition_edit" in features else EDIT_HEAD


def _machine_plus(name: str, label: str, features: frozenset[str], about: str) -> Arm:
    return Arm(name, label, True, True, _machine_run(_model_planner, features), about, _plus_head(features))


ARMS.update({arm.name: arm for arm in (
    Arm("prompt_whole", "prompt-only, whole files", True, False, run_prompt_whole,
        "one chat prompt with every source file and the failing output, answered with whole files",
        lambda budget: PROMPT_WHOLE_HEAD),
    _machine_plus("machine_plus", "machine+ (every feature)", ALL_FEATURES,
                  "the machine with every feature of labkit.repoedit.features"),
    *(_machine_plus(f"machine_plus_no_{f.name}", f"machine+ without {f.name}", ALL_FEATURES - {f.name},
                    f"ablation: machine_plus without {f.name} ({f.about})") for f in FEATURES),
    Arm("machine_plus_oracle", "machine+ + oracle", False, True,
        _machine_run(lambda i: OraclePlanner(i.task), ALL_FEATURES),
        "the machine with every feature and the known fix (in the definition contract): the ceiling"),
)})
"""The machine with its features (``machine_plus``), one ablation arm per feature, and the whole-file baseline.
``machine_model`` stays the machine as first recorded: every feature off."""

BEST_OF = 3
ARMS.update({arm.name: arm for arm in (
    Arm(f"prompt_whole_best_of_{BEST_OF}", f"prompt-only, whole files, best of {BEST_OF}", True, False,
        best_of(run_prompt_whole, BEST_OF),
        f"prompt_whole, then up to {BEST_OF - 1} sampled tries in fresh copies; the first that passes the "
        "visible tests is kept (labkit.repoedit.best_of)", lambda budget: PROMPT_WHOLE_HEAD),
    Arm(f"machine_plus_best_of_{BEST_OF}", f"machine+, best of {BEST_OF}", True, True,
        best_of(_machine_run(_model_planner, ALL_FEATURES), BEST_OF),
        f"machine_plus, then up to {BEST_OF - 1} sampled runs in fresh copies; the first that passes the "
        "visible tests is kept (labkit.repoedit.best_of)", _plus_head(ALL_FEATURES)),
)})
"""The same k for the strongest baseline and the machine, so that the tests picking among answers is
measured on both sides, not given to one."""
BEST_OF_ARMS = (f"prompt_whole_best_of_{BEST_OF}", f"machine_plus_best_of_{BEST_OF}")
MODEL_ARMS = tuple(name for name, arm in ARMS.items() if arm.uses_model)
ABLATION_ARMS = tuple(f"machine_plus_no_{f.name}" for f in FEATURES)
DEFAULT_ARMS = (*(a for a in MODEL_ARMS if a not in (*ABLATION_ARMS, *BEST_OF_ARMS)), "machine_oracle",
                "machine_plus_oracle")
"""Every arm but the ablation and the best-of-k arms (opt-in: they cost up to k runs each)."""
