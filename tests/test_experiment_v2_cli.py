"""``labkit experiment`` / ``labkit bench experiment``: which runs the options choose."""

from __future__ import annotations

import pytest

from labkit.cli import build_parser
from labkit.errors import LabkitError
from labkit.experiment.v2.cli import _config, default_config


def _parsed(*argv: str):
    return _config(build_parser().parse_args(["experiment", *argv]))


def test_no_options_choose_the_headline_ten_on_the_test_split() -> None:
    config = _parsed()
    assert config.splits == ["test"] and len(config.task_ids) == 10
    assert config.to_dict() == default_config().to_dict()


@pytest.mark.parametrize("argv", [["--full"], ["--seeds", "2"], ["--arms", "prompt-only"], ["--temperature", "0.5"],
                                  ["--task-ids", "t-tri-01"], ["--first-seed", "1"]])
def test_any_choice_of_runs_is_not_the_default_configuration(argv: list[str]) -> None:
    """The bench marks its record as `make experiment`'s only when the configuration is the default one."""
    assert _parsed(*argv).to_dict() != default_config().to_dict()


def test_two_ways_of_choosing_tasks_are_refused() -> None:
    with pytest.raises(LabkitError, match="choose tasks in different ways"):
        _parsed("--full", "--per-family", "2")
