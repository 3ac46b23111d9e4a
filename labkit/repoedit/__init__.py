"""The repo-editing machine: a small model edits a real Python project under an explicit state machine.

DISCOVER_PROJECT indexes the project (code, not the model), PLAN_CHANGE checks the planner's plan
against that index, EDIT_FILE applies one schema-checked, guarded edit per planned file, RUN_TESTS
runs the project's real tests in a subprocess, and the result routes the run to DONE, to a targeted
fix, or to ROLLBACK_OR_FIX, which restores the tree the run started from. Every run works in a
temporary git copy, so the shipped projects under ``data/repos/`` never change.

Modules: :mod:`~labkit.repoedit.tasks` (the task file), :mod:`~labkit.repoedit.workspace` (git copy,
pytest subprocess), :mod:`~labkit.repoedit.index` (files, symbols, tests), :mod:`~labkit.repoedit.edits`
(the proposal schemas and the guards), :mod:`~labkit.repoedit.tools` (one declaration per tool),
:mod:`~labkit.repoedit.events`, :mod:`~labkit.repoedit.routing`, :mod:`~labkit.repoedit.machine`,
:mod:`~labkit.repoedit.planners`, :mod:`~labkit.repoedit.features` (the machine's switchable features),
:mod:`~labkit.repoedit.formats` (edit formats), :mod:`~labkit.repoedit.arms` (the comparison's arms),
:mod:`~labkit.repoedit.history` (recorded arm names), :mod:`~labkit.repoedit.trace`, :mod:`~labkit.repoedit.cli`.
"""
