"""Where a ``--tasks`` value leads: a task file, or a benchmark source built into the cache on first use."""

from __future__ import annotations

from pathlib import Path

from labkit.repoedit import humaneval, pypi_seeded
from labkit.repoedit.tasks import RepoTask, load_tasks


def is_benchmark_source(spec: str | Path) -> bool:
    """Whether ``spec`` names a benchmark source (``humaneval:fix``, ``pypi:seeded``) rather than a file."""
    return str(spec).startswith(humaneval.SOURCE) or pypi_seeded.is_source(str(spec))


def resolve_task_file(spec: str | Path) -> Path:
    """A task file's path, or a benchmark source's (``humaneval:fix``, ``humaneval:implement``, ``pypi:seeded``,
    ``pypi:seeded:dev``, ``pypi:seeded:test``) ``tasks.yaml``, built on first use."""
    if pypi_seeded.is_source(str(spec)):
        return pypi_seeded.tasks_file(str(spec))
    if str(spec).startswith(humaneval.SOURCE):
        return humaneval.tasks_file(str(spec))
    return Path(spec)


def tasks_of(spec: str | Path) -> dict[str, RepoTask]:
    """The tasks of a task file or a benchmark source, by id. Every command that takes ``--tasks`` reads it here."""
    return load_tasks(resolve_task_file(spec))
