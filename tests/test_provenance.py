"""``git_commit``: a changed tracked file is dirt, the recording's own output folder is not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from labkit.core.provenance import git_commit


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_own_output_folder_is_not_dirt_but_other_changes_are(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "results.json").write_text("[]\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")

    (tmp_path / "runs" / "results.json").write_text("[1]\n")  # a batch appended to the recording
    assert not git_commit(own_output=tmp_path / "runs", repo=tmp_path).endswith("+dirty")
    assert git_commit(repo=tmp_path).endswith("+dirty")  # without the exclusion it is a change

    (tmp_path / "code.py").write_text("x = 2\n")  # the code changed: dirty either way
    assert git_commit(own_output=tmp_path / "runs", repo=tmp_path).endswith("+dirty")
