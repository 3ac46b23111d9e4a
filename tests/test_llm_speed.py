"""Lazy grammar and prefix reuse: the logic without a model, and the recorded equality proof.

The live checks (the same token ids on real recorded prompts) are in tests/test_llm_llamacpp.py; the
recorded proof (the v2 recording's prompts, the first 25 of each arm) is data/bench/equality.json, written by
`labkit bench equality --limit 25`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labkit.llm.backend import Request
from labkit.llm.cassette import read_cassette
from labkit.llm.errors import BackendError
from labkit.llm.lazy_grammar import GRAMMAR_MODES, check_grammar_mode, lazy_for
from labkit.llm.prefix_cache import MIN_PREFIX_TOKENS, PrefixEvaluator, longest_declared, split_point
from labkit.reading.arms import ReadingRun
from labkit.reading.equality import (
    COMPARISONS,
    DEFAULT_RECORDING,
    PATHS,
    Prompt,
    compare,
    declared_prefixes_by_arm,
    default_problems,
    prefix_evaluations,
    recorded_prompts,
)
from labkit.reading.speed import differences, per_arm

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / DEFAULT_RECORDING
EQUALITY = ROOT / "data" / "bench" / "equality.json"


# --- lazy grammar: which calls are lazy ---------------------------------------------------------------

def test_auto_is_lazy_only_for_greedy_calls_and_the_other_modes_are_fixed():
    assert lazy_for("auto", 0.0) and not lazy_for("auto", 0.5)
    assert lazy_for("lazy", 0.0) and lazy_for("lazy", 0.7)
    assert not lazy_for("mask", 0.0) and not lazy_for("mask", 0.7)
    assert set(GRAMMAR_MODES) == {"auto", "lazy", "mask"}


def test_an_undeclared_grammar_mode_is_a_clear_error():
    with pytest.raises(BackendError, match="grammar_mode 'fast' is not one of auto, lazy, mask") as info:
        check_grammar_mode("fast")
    assert "auto" in info.value.hint


# --- prefix reuse: where a prompt is cut, and what is evaluated ---------------------------------------

def test_the_cut_is_the_common_token_start_and_leaves_one_token_to_sample_from():
    prefix = list(range(40))
    assert split_point([*prefix, 99, 98], prefix) == 40
    assert split_point([*prefix[:30], 7, 8], prefix) == 30  # the tokenizer merged across the boundary
    assert split_point(prefix, prefix) == 39  # the whole prompt is the prefix: the last token stays
    assert split_point([*range(MIN_PREFIX_TOKENS - 1), 99], prefix) == 0  # too short to be worth it


def test_the_longest_declared_prefix_wins_and_nothing_is_guessed():
    assert longest_declared("abcdef", ["ab", "abcd", "x"]) == "abcd"
    assert longest_declared("zzz", ["ab"]) is None
    assert longest_declared("abc", ["", "a"]) == "a"


class _FakeContext:
    def __init__(self, llm: _FakeLlama) -> None:
        self.llm = llm

    def kv_cache_seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        self.llm.log.append(("seq_rm", p0))
        self.llm.cells = self.llm.cells[:p0]
        return self.llm.rm_ok


class _FakeLlama:
    """Just enough of llama_cpp.Llama to watch what the evaluator evaluates."""

    def __init__(self) -> None:
        self.log: list[tuple[str, object]] = []
        self.cells: list[int] = []
        self.n_tokens = 0
        self.rm_ok = True
        self._ctx = _FakeContext(self)

    def reset(self) -> None:
        self.log.append(("reset", None))
        self.n_tokens = 0

    def eval(self, tokens: list[int]) -> None:
        self.log.append(("eval", tuple(tokens)))
        self.cells = self.cells[:self.n_tokens] + list(tokens)
        self.n_tokens += len(tokens)


class _Evaluator(PrefixEvaluator):
    def cache_span(self) -> tuple[int, int]:
        return (0, len(self.llm.cells) - 1)


def test_reuse_evaluates_the_prefix_once_and_then_only_each_rest():
    llm = _FakeLlama()
    ev = _Evaluator(llm)
    assert ev.evaluate([1, 2, 3, 10, 11], 3, reuse=True) is False
    assert ev.evaluate([1, 2, 3, 20], 3, reuse=True) is True
    assert [e for e in llm.log if e[0] == "eval"] == [("eval", (1, 2, 3)), ("eval", (10, 11)), ("eval", (20,))]
    assert llm.cells == [1, 2, 3, 20] and llm.n_tokens == 4
    assert (ev.stats.evaluated, ev.stats.reused) == (1, 1)


def test_fresh_and_reused_evaluation_give_the_model_the_same_batches_after_the_prefix():
    fresh, kept = _FakeLlama(), _FakeLlama()
    ev_fresh, ev_kept = _Evaluator(fresh), _Evaluator(kept)
    for tokens in ([1, 2, 3, 10, 11], [1, 2, 3, 20], [1, 2, 3, 30, 31, 32]):
        ev_fresh.evaluate(tokens, 3, reuse=False)
        ev_kept.evaluate(tokens, 3, reuse=True)
        assert fresh.cells == kept.cells == tokens  # same cache contents before sampling
        assert fresh.log[-1] == kept.log[-1] == ("eval", tuple(tokens[3:]))  # the same second batch
    assert ev_fresh.stats.reused == 0 and ev_kept.stats.reused == 2


def test_a_different_prefix_or_a_refused_truncation_evaluates_the_prefix_again():
    llm = _FakeLlama()
    ev = _Evaluator(llm)
    ev.evaluate([1, 2, 3, 10], 3, reuse=True)
    assert ev.evaluate([1, 2, 4, 10], 3, reuse=True) is False  # another prefix
    llm.rm_ok = False
    assert ev.evaluate([1, 2, 4, 11], 3, reuse=True) is False  # the cache could not be cut back
    assert llm.cells == [1, 2, 4, 11]
    with pytest.raises(ValueError, match="must leave tokens on both sides"):
        ev.evaluate([1, 2], 2, reuse=True)


# --- the declared prefixes -----------------------------------------------------------------------------

def test_every_recorded_prompt_of_an_arm_that_declares_a_prefix_starts_with_one_of_them():
    """The prefixes rebuilt from experiment.json are the ones the recording's prompts really begin with."""
    declared = declared_prefixes_by_arm(RECORDING)
    assert set(declared) == {"prompt-only", "prompt-grammar", "prompt-helpers"}  # the machine declares none
    for arm, prefixes in declared.items():
        prompts = [c["request"]["prompt"] for f in sorted((RECORDING / "cassettes" / arm).rglob("*.jsonl"))
                   for c in read_cassette(f)[1]]
        assert prompts and all(longest_declared(p, prefixes) for p in prompts), arm


# --- the equality benchmark's logic ----------------------------------------------------------------------

def _prompt(key: str, arm: str = "a", schema: dict | None = None, prefix: str | None = "P") -> Prompt:
    return Prompt(arm, key, Request(prompt="P rest", schema=schema), prefix)


def test_each_prompt_runs_only_the_paths_its_comparisons_need():
    assert _prompt("k", schema={"enum": ["x"]}).paths() == set(PATHS)
    assert _prompt("k").paths() == {"mask", "split-fresh", "split-reuse"}  # no grammar: lazy is mask
    assert _prompt("k", schema={"enum": ["x"]}, prefix=None).paths() == {"mask", "lazy"}


def test_compare_reports_exactly_the_prompts_whose_token_ids_differ():
    g, f = _prompt("g", schema={"enum": ["x"]}), _prompt("f")
    ids = {("g", p): (1, 2) for p in PATHS} | {("f", p): (3,) for p in PATHS}
    ids[("f", "split-reuse")] = (4,)
    rows = {r["comparison"]: r for r in compare([g, f], ids)}
    assert rows["lazy-vs-mask"]["prompts"] == 1 and rows["lazy-vs-mask"]["differ"] == 0
    assert rows["reuse-vs-fresh"]["prompts"] == 2 and rows["reuse-vs-fresh"]["differ"] == 1
    assert rows["reuse-vs-fresh"]["differing"] == [{"key": "f", "split-reuse": [4], "split-fresh": [3]}]
    assert rows["two-batches-vs-one"]["differ"] == 0 and rows["optimised-vs-today"]["differ"] == 1


def test_only_differences_behind_a_default_are_problems():
    rows = [{"comparison": "two-batches-vs-one", "arm": "prompt-only", "differ": 3, "prompts": 9},
            {"comparison": "lazy-vs-mask", "arm": "prompt-grammar", "differ": 0, "prompts": 9}]
    assert default_problems({"comparisons": rows}, ["machine-model"]) == []
    assert default_problems({"comparisons": rows}, ["prompt-only"]) == ["two-batches-vs-one on prompt-only: 3 of 9 "
                                                                         "prompts differ"]
    rows[1]["differ"] = 1
    assert default_problems({"comparisons": rows}, []) == ["lazy-vs-mask on prompt-grammar: 1 of 9 prompts differ"]


def test_recorded_prompts_are_read_once_each_made_greedy_and_limited_per_arm(tmp_path):
    split = tmp_path / "prompt-grammar" / "dev"
    split.mkdir(parents=True)
    call = {"type": "call", "key": "k", "model": "m", "completion": {"text": "x"},
            "request": {"prompt": "P one", "max_tokens": 8, "stop": [], "schema": {"enum": ["a"]},
                        "temperature": 0.5, "seed": 3, "sampling": {"top_k": 40}}}
    other = {**call, "request": {**call["request"], "prompt": "Q two", "seed": 4}}
    (split / "t.jsonl").write_text("\n".join(json.dumps(c) for c in (call, call, other)) + "\n")
    found = recorded_prompts(tmp_path, {"prompt-grammar": ("Q", "P ", "P")})
    assert [(p.request.prompt, p.request.temperature, p.request.seed, p.prefix) for p in found] == [
        ("P one", 0.0, 0, "P "), ("Q two", 0.0, 0, "Q")]  # the longest declared prefix each starts with
    assert [p.prefix for p in recorded_prompts(tmp_path, {})] == [None, None]
    assert len(recorded_prompts(tmp_path, {}, limit=1)) == 1
    with pytest.raises(Exception, match="no recorded calls"):
        recorded_prompts(tmp_path, {}, arms=["prompt-only"])


def test_the_reuse_pass_evaluates_a_prefix_at_the_start_and_at_each_change():
    a, b = [_prompt(k, prefix="A") for k in "abc"], [_prompt(k, prefix="B") for k in "de"]
    assert prefix_evaluations([*a, _prompt("n", prefix=None), *b, a[0]]) == 3  # A, then B, then A again
    assert prefix_evaluations([_prompt("n", prefix=None)]) == 0


# --- the recorded proof --------------------------------------------------------------------------------------

def _recorded_equality() -> tuple[dict, dict[str, tuple[str, ...]], list[Prompt]]:
    """The committed equality record, the prefixes its recording declared, and the prompts it replayed."""
    result = json.loads(EQUALITY.read_text(encoding="utf-8"))
    declared = declared_prefixes_by_arm(ROOT / result["source"])
    return result, declared, recorded_prompts(ROOT / result["source"] / "cassettes", declared, None,
                                              result["limit_per_arm"])  # limit None: every recorded prompt


def test_the_recorded_equality_run_replayed_the_reading_recording_on_every_path_it_needs():
    """data/bench/equality.json covers what the committed recording and its declared prefixes say it must."""
    result, declared, prompts = _recorded_equality()
    assert result["source"] == DEFAULT_RECORDING  # the prompts of the committed v2 recording
    assert result["prefixes_tested"] == sorted(declared)
    assert result["default_problems"] == default_problems(result, declared)  # judged as the code judges now
    assert all(r["differ"] == len(r["differing"]) for r in result["comparisons"])
    assert result["prompts"] == {arm: sum(1 for p in prompts if p.arm == arm) for arm in result["prompts"]}
    covered = {(r["comparison"], r["arm"]): r["prompts"] for r in result["comparisons"]}
    for arm in declared:
        with_prefix = sum(1 for p in prompts if p.arm == arm and p.prefix is not None)
        assert all(covered[(c.name, arm)] == with_prefix for c in COMPARISONS if c.needs == "prefix"), arm
    grammar = {arm: sum(1 for p in prompts if p.arm == arm and p.has_grammar) for arm in result["prompts"]}
    assert {arm: covered[("lazy-vs-mask", arm)] for arm, n in grammar.items() if n} == \
        {arm: n for arm, n in grammar.items() if n}
    # the prefix is evaluated where the reuse pass meets a new one, and reused everywhere else
    assert result["prefix_evaluations"] == result["prefix_evaluations_expected"] == prefix_evaluations(prompts)
    assert result["reuse_hits"] == sum(1 for p in prompts if p.prefix is not None) - prefix_evaluations(prompts)
    from labkit.llm.modelfile import embedded_model_sha256

    assert result["model_sha256"] == embedded_model_sha256()


def test_the_optimisations_themselves_changed_no_token_on_any_recorded_prompt():
    """Lazy grammar and a kept prefix (against the same two batches afresh) are the kit's speed-ups for every arm."""
    result, _, _ = _recorded_equality()
    rows = [r for r in result["comparisons"] if r["comparison"] in ("lazy-vs-mask", "reuse-vs-fresh")]
    assert rows and all(r["differ"] == 0 for r in rows), [(r["comparison"], r["arm"], r["differ"]) for r in rows]


@pytest.mark.xfail(strict=True, reason="data/bench/equality.json: on 7 of the first 25 prompt-helpers prompts the "
                   "declared prefix's two batches give other tokens than one batch; the reading comparison declares "
                   "that prefix all the same (its recording is made with two batches), so this default is not proven")
def test_no_recorded_difference_stands_behind_a_default():
    """Fails while data/bench/equality.json says a declared prefix changes an answer against one batch."""
    result, _, _ = _recorded_equality()
    assert result["default_problems"] == []


# --- the back-to-back experiment's comparison ---------------------------------------------------------------

def _run(arm: str = "machine-model", seed: int = 0, **changes: object) -> tuple[str, ReadingRun]:
    fields = {"arm": arm, "task": "test-triage-01", "family": "triage", "seed": seed, "passed": True,
              "failed_checks": [], "termination": "done", "llm_calls": 3, "decisions": 3, "reasks": 0,
              "schema_invalid": 0, "violations": 0, "guard_rejections": 0, "tool_calls": 4, "prompt_tokens": 900,
              "completion_tokens": 12, "wall_s": 2.0}
    fields.update(changes)
    return "test", ReadingRun(**fields)  # type: ignore[arg-type]


def test_runs_that_differ_only_in_time_are_identical_and_any_count_or_grade_change_is_named():
    off = [_run(), _run(seed=1)]
    assert differences(off, [_run(wall_s=0.5), _run(seed=1, wall_s=0.1)]) == []
    found = differences(off, [_run(completion_tokens=13), _run(seed=1, passed=False)])
    assert found == ["run ('test', 'machine-model', 'test-triage-01', 0): completion_tokens differ",
                     "run ('test', 'machine-model', 'test-triage-01', 1): passed differ"]
    assert differences(off, off[:1]) == ["run ('test', 'machine-model', 'test-triage-01', 1) only in one variant"]


def test_per_arm_totals():
    rows = per_arm([_run(), _run(seed=1, passed=False, wall_s=4.5), _run(arm="machine-rule", llm_calls=0)])
    assert rows["machine-model"] == {"runs": 2, "passed": 1, "llm_calls": 6, "prompt_tokens": 1800,
                                     "completion_tokens": 24, "wall_s": 6.5}
    assert rows["machine-rule"]["llm_calls"] == 0 and rows["machine-rule"]["runs"] == 1


@pytest.mark.bench  # `labkit bench experiment` checks this identity on every arm (experiment-speed-v2.json)
def test_the_reading_bench_runs_off_then_on_on_the_real_model_and_finds_them_identical(tmp_path):
    """Off (mask, prefix afresh) and on (lazy, prefix kept) give the same runs; on reuses the prefix."""
    from labkit.reading.runner import ReadingConfig
    from labkit.reading.speed import bench_reading, render_experiment_speed

    config = ReadingConfig(arms=["prompt-grammar", "machine-model"], splits=["test"], task_ids=["test-triage-01"])
    result = bench_reading(config, workdir=tmp_path)
    assert result["identical"], result["differences"]
    on = result["arms"]["on"]
    assert on["prompt-grammar"]["llm_calls"] >= 2 and on["machine-model"]["llm_calls"] >= 1
    assert result["prefix_reuse_on"]["evaluated"] == 1 and result["prefix_reuse_on"]["reused"] >= 1
    assert "identical" in render_experiment_speed(result) and not result["default_configuration"]
