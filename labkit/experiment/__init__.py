"""The comparison experiment: the same small model in four ways of working, graded by one verifier.

Modules (one concept each):

- :mod:`~labkit.experiment.tasks` — task files (the runtime's ``Task`` JSON) and their checks
- :mod:`~labkit.experiment.menu` — what code reads off a task's text, the menu, the draft code composes
- :mod:`~labkit.experiment.prompts` — the whole-task prompt and the short per-decision prompt
- :mod:`~labkit.experiment.planners` — the planners of the arms (prompt-only, model step choice, random)
- :mod:`~labkit.experiment.metered` — per-run counting of model calls and tokens
- :mod:`~labkit.experiment.arms` — the arms, and one run of one arm on one task and seed
- :mod:`~labkit.experiment.metrics` — success k/n, pass^k and the per-arm summary
- :mod:`~labkit.experiment.runner` — arms × tasks × seeds, incremental results, cassettes, concurrency
- :mod:`~labkit.experiment.report` — Markdown, CSV, plots and provenance
- :mod:`~labkit.experiment.cli` — ``labkit experiment-v1`` (the first comparison)
- :mod:`~labkit.experiment.speed` — ``labkit bench experiment``: inference optimisations off, then on
"""

from labkit.experiment.arms import ARMS, Arm, RunRecord, run_one
from labkit.experiment.metrics import counts_only, pass_hat_k, summarize
from labkit.experiment.planners import Decoding, PromptOnlyPlanner, RandomMenuPlanner, StepChoicePlanner
from labkit.experiment.runner import BackendSource, ExperimentConfig, load_runs, prepare_replay, run_experiment
from labkit.experiment.speed import bench_experiment, render_experiment_speed
from labkit.experiment.tasks import TaskFileError, load_tasks

__all__ = ["ARMS", "Arm", "BackendSource", "Decoding", "ExperimentConfig", "PromptOnlyPlanner",
           "RandomMenuPlanner", "RunRecord", "StepChoicePlanner", "TaskFileError", "bench_experiment", "counts_only",
           "load_runs", "load_tasks", "pass_hat_k", "prepare_replay", "render_experiment_speed", "run_experiment",
           "run_one", "summarize"]
