"""The comparison, version 2: task families where reading matters, a held-out split, paired statistics.

``labkit compare reading`` and notebook 06 run this version, on the one runner (:mod:`labkit.compare.runs`);
``labkit bench equality`` and ``labkit bench experiment`` replay and re-run its prompts. (Version 1, one
compare family, is retired; see the parent package.)
The parts:

- :mod:`~labkit.experiment.v2.taskfile` — the task file format (pydantic): one entry per task, each of
  a declared family, carrying its own messages and records, so a teacher adds a task without code
- :mod:`~labkit.experiment.v2.generate` — the seeded generator of the dev and test splits
  (``scripts/make_tasks_v2.py`` writes ``data/tasks/v2/dev.json`` and ``test.json``)
- :mod:`~labkit.experiment.v2.families` — the families (triage, extraction, selection, compare) as
  declarations: draft format, compose helpers, the one verifier every arm is graded by
- :mod:`~labkit.experiment.v2.world` — a task's world served through the runtime's tools
  (``read_message``, ``read_record``, ``save_draft``) and the runtime task a machine run drives
- :mod:`~labkit.experiment.v2.answers` — the model's answers as pydantic models, one parser for every arm
- :mod:`~labkit.experiment.v2.prompts` — the whole-task prompt and the per-decision prompts (dev examples)
- :mod:`~labkit.experiment.v2.rules` — the strongest rules written on dev (arm 5)
- :mod:`~labkit.experiment.v2.choosers` — who decides in the machine: model, rule, random, oracle
- :mod:`~labkit.experiment.v2.machine` — the machine arms' planner (code for steps, a chooser for decisions)
- :mod:`~labkit.experiment.v2.free` — the prompt-only arms' loop (declared actions and helpers)
- :mod:`~labkit.experiment.v2.free_log` — what a free loop's log says, for ``labkit replay``
- :mod:`~labkit.experiment.v2.events` — ``model_asked`` and ``loop_ended`` facts (counts come from them)
- :mod:`~labkit.experiment.v2.arms` — the seven arms as declarations, one run of one arm, counting
- :mod:`~labkit.experiment.v2.runner` — arms × splits × tasks × seeds, logs and cassettes per run
- :mod:`~labkit.experiment.v2.report` — intervals, pass^k, paired tests, the headline, the ladder plot
- :mod:`~labkit.experiment.v2.view` — a recorded run's prompts, answers and grade, for the lesson
- :mod:`~labkit.experiment.v2.speed` — ``labkit bench experiment``: optimisations off, then on
- :mod:`~labkit.experiment.v2.cli` — ``labkit compare reading``

Statistics (Wilson intervals, pass^k, the exact paired sign test) are in :mod:`labkit.compare.stats`.
"""
