"""The comparison, version 2: task families where reading matters, a held-out split, paired statistics.

Version 1 (the parent package) stays as it is; its recording is what notebook 05 replays. This
package adds, next to it:

- :mod:`~labkit.experiment.v2.taskfile` — the task file format (pydantic): one entry per task, each of
  a declared family, carrying its own messages and records, so a teacher adds a task without code
- :mod:`~labkit.experiment.v2.families` — the families (triage, extraction, selection, compare) as
  declarations: draft format, the one verifier every arm is graded by, the oracle answer
- :mod:`~labkit.experiment.v2.world` — a task's world (messages, records, a draft area) served through
  the runtime's tools, and the runtime ``Task`` a machine run is driven by
- ``scripts/make_tasks_v2.py`` — the seeded generator of ``data/tasks/v2/dev.json`` and ``test.json``

Statistics (Wilson intervals, pass^k, the exact paired sign test) are in :mod:`labkit.stats`.
"""
