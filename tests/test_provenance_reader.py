"""One provenance reader for every committed recording: each stretch names its commit, start, mode and backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labkit.core.errors import LabkitError
from labkit.core.provenance import read_provenance

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDINGS = sorted(path.parent for path in DATA.rglob("runs.jsonl"))


@pytest.mark.parametrize("config", ["experiment.json", "compare.json", "dialog.json"])
def test_the_reader_is_tried_on_recordings_of_every_comparison(config: str) -> None:
    assert any((folder / config).exists() for folder in RECORDINGS)


@pytest.mark.parametrize("folder", RECORDINGS, ids=lambda f: f.relative_to(DATA).as_posix())
def test_every_committed_recording_is_read_by_the_one_reader(folder: Path) -> None:
    stretches = read_provenance(folder)
    assert stretches
    for stretch in stretches:
        assert len(stretch.commit.removesuffix("+dirty")) == 40, stretch.commit
        assert stretch.started_utc is None or (stretch.started_utc[:2] == "20" and stretch.started_utc.endswith("Z"))
        assert stretch.mode in ("live", "replay") and stretch.backend.get("backend") and stretch.machine


def test_a_resumed_recording_reads_as_one_stretch_per_segment(tmp_path: Path) -> None:
    segments = [{"labkit_commit": c * 40, "started_utc": f"2026-12-0{i}T00:00:00Z", "machine": {"cpu_count": 2},
                 "backend": {"backend": "llama_cpp", "model_sha256": "ab"}, "wall_s": 1.0}
                for i, c in enumerate("ab", start=1)]
    (tmp_path / "provenance.json").write_text(json.dumps({"mode": "live", **segments[-1], "segments": segments,
                                                           "config": {"arms": ["x"]}}), encoding="utf-8")
    stretches = read_provenance(tmp_path)
    assert [s.commit[0] for s in stretches] == ["a", "b"] and stretches[0].facts["config"] == {"arms": ["x"]}
    assert stretches[1].model_sha256 == "ab"


def test_a_folder_without_provenance_is_named(tmp_path: Path) -> None:
    with pytest.raises(LabkitError, match="holds no provenance"):
        read_provenance(tmp_path)
