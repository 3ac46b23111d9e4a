"""The fit estimator against what llama.cpp itself allocates when it loads the embedded model.

Error bounds, and why: weights and KV cache follow llama.cpp's own byte rules (tensor sizes from the
GGUF table, cells x KV heads x head dims x 2 bytes), so they may differ from the log only by its
rounding to 0.01 MiB: bound 0.1 %. The compute buffer is a rule of thumb (the logits of one 512-token
micro-batch); on this model it measured 0.5-0.7 % below llama.cpp's figure. A bound of 2 % on it and on
the total keeps room for small ggml graph changes while still failing on a wrong term: counting the
sliding-window layers wrongly would move the KV figure by hundreds of percent, and leaving out the
compute buffer would move the total by about 60 %.
"""

from __future__ import annotations

import pytest

from labkit.inference.bench import default_model_path
from labkit.inference.loadlog import capture_llama_log, check_against_load
from labkit.llm.native import open_llama

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("n_ctx", "swa_full"), [(300, True), (4096, True), (8192, False)])
def test_estimate_matches_llama_cpp_buffer_report(n_ctx: int, swa_full: bool) -> None:
    check = check_against_load(default_model_path(), n_ctx, swa_full=swa_full)
    rows = {name: (est, logged, err) for name, est, logged, err in check.rows()}
    assert all(logged > 0 for _, logged, _ in rows.values()), check.render()
    assert abs(rows["weights"][2]) < 0.1, check.render()
    assert abs(rows["KV cache"][2]) < 0.1, check.render()
    assert abs(rows["compute"][2]) < 2.0, check.render()
    assert abs(rows["total"][2]) < 2.0, check.render()
    # the sliding window really is what shrinks the cache: 3 global layers x 8192 + 15 x 1024 cells
    if not swa_full:
        assert check.estimate.swa_cells == 1024 and rows["KV cache"][1] == pytest.approx(39.0)


def test_log_capture_is_released_after_the_block() -> None:
    with capture_llama_log() as log:
        open_llama(default_model_path(), n_ctx=256, verbose=False).close()
    seen = len(log.lines)
    assert seen > 0 and "model buffer size" in log.text
    open_llama(default_model_path(), n_ctx=256, verbose=False).close()
    assert len(log.lines) == seen  # our callback is no longer installed
