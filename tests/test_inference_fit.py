"""The fit estimator's logic and the GGUF header reader (fast: no model is loaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.core.errors import LabkitError
from labkit.inference.bench import default_model_path
from labkit.inference.fit import (
    GIB,
    MIB,
    check_fit,
    estimate_memory,
    kv_type_bytes,
    nominal_arch,
    render_fit_table,
    worked_example,
)
from labkit.inference.gguf_meta import ArchSpec, GGUFError, read_gguf, read_gguf_arch
from labkit.inference.gpu import gpu_advice
from labkit.inference.loadlog import parse_buffers


def _toy(n_layer: int = 4, n_head_kv: int = 2, swa: tuple[bool, ...] = (), n_swa: int = 0,
         tied: bool = False) -> ArchSpec:
    return ArchSpec(name="toy", architecture="toy", n_layer=n_layer, n_embd=64, n_head=8,
                    n_head_kv=(n_head_kv,) * n_layer, head_dim_k=16, head_dim_v=16, n_vocab=1000,
                    n_ctx_train=4096, layer_bytes=tuple(1000 * (i + 1) for i in range(n_layer)),
                    input_bytes=50_000, output_bytes=50_000 + 256 if tied else 30_000, n_swa=n_swa,
                    swa_layers=swa, tied_output=tied)


@pytest.fixture(scope="module")
def gemma() -> ArchSpec:
    return read_gguf_arch(default_model_path())


def test_embedded_model_metadata_is_read_from_the_file(gemma: ArchSpec) -> None:
    assert (gemma.architecture, gemma.n_layer, gemma.n_embd, gemma.n_head) == ("gemma3", 18, 640, 4)
    assert set(gemma.n_head_kv) == {1} and gemma.head_dim_k == gemma.head_dim_v == 256
    assert gemma.n_vocab == 262144 and gemma.n_swa == 512
    # Gemma 3: every 6th layer is global, the others use the sliding window (layers 5, 11, 17 global).
    assert [i for i, s in enumerate(gemma.swa_layers) if not s] == [5, 11, 17]
    assert gemma.tied_output  # no output.weight: the head reuses the token embedding
    assert gemma.weight_bytes == 246_587_904  # sum of the tensor table's exact sizes


def test_kv_cache_counts_gqa_heads_and_pads_to_256_cells() -> None:
    est = estimate_memory(_toy(n_head_kv=2), n_ctx=1000)
    assert est.n_cells == 1024
    assert est.kv == 4 * 1024 * 2 * (16 * 2 + 16 * 2)  # layers x cells x kv heads x (K + V) f16 bytes
    assert estimate_memory(_toy(n_head_kv=8), 1000).kv == 4 * est.kv  # 8 KV heads instead of 2


def test_sliding_window_layers_shrink_only_without_swa_full() -> None:
    arch = _toy(swa=(True, True, True, False), n_swa=100)
    full = estimate_memory(arch, 4096, swa_full=True)
    small = estimate_memory(arch, 4096, swa_full=False, n_ubatch=512)
    assert full.swa_cells == 4096 and small.swa_cells == 768  # pad256(100 + 512)
    per_cell = 2 * (16 * 2 + 16 * 2)
    assert small.kv == per_cell * (3 * 768 + 4096)
    assert full.kv == per_cell * 4 * 4096


def test_quantised_kv_types_use_block_sizes() -> None:
    assert kv_type_bytes("f16") == 2 and kv_type_bytes("q8_0") == 34 / 32
    with pytest.raises(LabkitError, match="unknown KV cache type"):
        kv_type_bytes("f12")


def test_offload_places_last_layers_and_output_head_on_gpu() -> None:
    arch = _toy()
    none, two, every = (estimate_memory(arch, 512, k) for k in (0, 2, -1))
    assert none.gpu_total == 0 and none.host_weights == arch.weight_bytes
    assert two.gpu_weights == 3000 + 4000 and not two.output_on_gpu  # blocks 2 and 3
    assert every.gpu_weights == sum(arch.layer_bytes) + 30_000 and every.host_weights == 50_000
    assert estimate_memory(arch, 512, 99).gpu_weights == every.gpu_weights


def test_tied_output_head_is_copied_to_the_gpu_but_not_counted_twice_on_cpu() -> None:
    arch = _toy(tied=True)
    assert arch.weight_bytes == 50_000 + sum(arch.layer_bytes) + 256
    assert estimate_memory(arch, 512, 0).host_weights == arch.weight_bytes
    assert estimate_memory(arch, 512, -1).gpu_weights == sum(arch.layer_bytes) + 50_256


def test_fit_decision_and_largest_layer_count() -> None:
    arch = nominal_arch("7b", "Q4_K_M")
    small = check_fit(arch, 4096, vram_gib=12)
    assert small.fits and small.max_gpu_layers == arch.n_layer + 1
    big = check_fit(arch, 16384, vram_gib=12)
    assert not big.fits and 0 < big.max_gpu_layers < arch.n_layer
    # the layer count it proposes does fit, one more does not
    assert check_fit(arch, 16384, 12, big.max_gpu_layers).fits
    assert not check_fit(arch, 16384, 12, big.max_gpu_layers + 1).fits
    assert not check_fit(arch, 4096, vram_gib=1).fits


def test_largest_layer_count_on_a_tiny_card_is_counted_by_hand() -> None:
    # 1 GiB card, 0.5 GiB reserved: 512 MiB for Llama-2 7B Q4_K_M at 4096 tokens. Each offloaded
    # block costs its weights plus its f16 KV cache (4096 cells x 32 KV heads x (128 + 128) x 2 bytes
    # = 64 MiB); the compute buffer (4 x 512 x max(32000 vocab, 32 heads x 4096 cells) = 256 MiB)
    # comes with the first block. One block: ~437 MiB fits; two: ~618 MiB do not.
    arch = nominal_arch("7b", "Q4_K_M")
    kv_per_block = 4096 * 32 * (128 * 2 + 128 * 2)
    compute = 4 * 512 * max(32_000, 32 * 4096)
    assert kv_per_block == 64 * MIB and compute == 256 * MIB
    budget = (1 - 0.5) * GIB
    need = [sum(arch.layer_bytes[arch.n_layer - k:]) + k * kv_per_block + compute for k in (1, 2)]
    assert need[0] <= budget < need[1]
    assert check_fit(arch, 4096, 1).max_gpu_layers == 1


def test_nominal_llama2_matches_published_parameter_counts() -> None:
    # Llama 2 7B has 6.74e9 parameters and 13B 13.0e9 (paper); Q8_0 stores 8.5 bits each.
    for size, params in (("7b", 6.74e9), ("13b", 13.0e9)):
        arch = nominal_arch(size, "Q8_0")
        assert arch.weight_bytes * 8 / 8.5 == pytest.approx(params, rel=0.01)
    with pytest.raises(LabkitError, match="no nominal architecture"):
        nominal_arch("70b", "Q8_0")
    with pytest.raises(LabkitError, match="bits-per-weight"):
        nominal_arch("7b", "IQ2_XS")


def test_worked_example_table_is_deterministic_and_complete() -> None:
    rows = worked_example(vram_gib=12.0)
    assert len(rows) == 2 * 3 * 2
    fits = {(d.estimate.arch, d.estimate.n_ctx): d.fits for d in rows}
    assert fits[("Llama-2-7B Q4_K_M", 4096)] and not fits[("Llama-2-13B Q8_0", 4096)]
    assert render_fit_table(rows) == render_fit_table(worked_example(vram_gib=12.0))
    # Llama-2-7B f16 KV at 4096 tokens: 2 x 32 layers x 4096 x 4096 x 2 bytes = 2 GiB exactly
    assert rows[0].estimate.kv == 2 * GIB


def test_bad_estimator_input_is_explained() -> None:
    arch = _toy()
    with pytest.raises(LabkitError, match="context length"):
        estimate_memory(arch, 0)
    with pytest.raises(LabkitError, match="n_gpu_layers"):
        estimate_memory(arch, 512, -2)
    with pytest.raises(LabkitError, match="VRAM"):
        check_fit(arch, 512, 0)
    with pytest.raises(LabkitError, match="per-layer"):
        ArchSpec(name="x", architecture="x", n_layer=2, n_embd=8, n_head=1, n_head_kv=(1,), head_dim_k=8,
                 head_dim_v=8, n_vocab=10, n_ctx_train=8, layer_bytes=(1, 1), input_bytes=1, output_bytes=1)


def test_non_gguf_missing_and_truncated_files_give_clear_errors(tmp_path: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("hello, not a model\n")
    with pytest.raises(GGUFError, match="not a GGUF file") as err:
        read_gguf(text)
    assert err.value.hint and "convert" in err.value.hint
    with pytest.raises(GGUFError, match="not found"):
        read_gguf(tmp_path / "absent.gguf")
    with pytest.raises(GGUFError, match="not a file"):
        read_gguf(tmp_path)
    truncated = tmp_path / "cut.gguf"
    with default_model_path().open("rb") as model:
        truncated.write_bytes(model.read(4096))
    with pytest.raises(GGUFError, match=r"ends inside its GGUF header|past the end"):
        read_gguf(truncated)


def test_parse_buffers_sums_by_kind_and_device() -> None:
    log = ("load_tensors:   CPU_Mapped model buffer size =   235.16 MiB\n"
           "load_tensors:        CUDA0 model buffer size =  1000.50 MiB\n"
           "llama_kv_cache:        CPU KV buffer size =    12.00 MiB\n"
           "llama_kv_cache:        CPU KV buffer size =    60.00 MiB\n"
           "sched_reserve:        CPU compute buffer size =   514.50 MiB\n"
           "~llama_context:        CPU compute buffer size is 514.5020 MiB, matches expectation\n")
    report = parse_buffers(log)
    assert report.model == {"CPU_Mapped": 235.16, "CUDA0": 1000.5}
    assert report.kv == {"CPU": 72.0} and report.compute == {"CPU": 514.5}
    assert MIB == 2**20


def test_gpu_advice_names_every_backend_when_offload_is_missing() -> None:
    linux = gpu_advice(False, "0.3.36", platform="linux")
    assert 'CMAKE_ARGS="-DGGML_CUDA=on" pip install --force-reinstall --no-cache-dir' in linux
    assert "-DGGML_VULKAN=on" in linux and "llama-cpp-python==0.3.36" in linux
    assert "-DGGML_METAL=on" in gpu_advice(False, "0.3.36", platform="darwin")
    assert "can offload" in gpu_advice(True, "0.3.36", platform="linux")
