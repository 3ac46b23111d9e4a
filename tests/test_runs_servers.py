"""The one runner across two real servers: two ``python -m labkit.llm.serve`` processes (llama_cpp.server with
the embedded model) on loopback give the rows that one of them gives alone, run after run — for each of the three
comparisons (reading tasks v2, the code comparison, the dialog measurement)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from labkit.compare.runs import Answers, read_rows
from labkit.llm.cassette import read_cassette
from labkit.llm.http import OpenAICompatBackend
from labkit.llm.pool import ServerPool
from labkit.reading.runner import ReadingConfig, run_reading

TASKS = ["dev-triage-01", "test-triage-01"]  # both splits, one short model call per run


@pytest.mark.slow
def test_the_reading_comparison_spread_over_two_real_servers_gives_one_servers_rows(
        start_llama_server: Any, tmp_path: Path) -> None:
    config = ReadingConfig(arms=["machine-model", "machine-rule"], task_ids=TASKS, seeds=[0, 1])

    def client(url: str) -> OpenAICompatBackend:
        return OpenAICompatBackend(url, timeout_s=120, cache_dir=tmp_path / "cache")

    with start_llama_server() as first, start_llama_server() as second:
        alone = run_reading(config, Answers(live=client(first)), tmp_path / "one")
        pool = ServerPool([client(first), client(second)])
        spread = run_reading(config, Answers(live=pool), tmp_path / "two")

    def rows(folder: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k != "wall_s"} for row in read_rows(tmp_path / folder / "runs.jsonl")]

    assert len(alone) == len(spread) == len(TASKS) * 2 * 2
    assert rows("two") == rows("one")  # line for line, in job order
    assert any(r.llm_calls for _, r in spread if r.arm == "machine-model")
    assert pool.runs_per_server()[first] > 0 and pool.runs_per_server()[second] > 0
    servers = set()
    for path in (tmp_path / "two" / "cassettes").rglob("*.jsonl"):
        servers |= {c["server"] for c in read_cassette(path)[1]}
    assert servers == {first, second}  # each call names the server that answered it


@pytest.mark.slow
def test_the_dialog_measurement_spread_over_two_real_servers_gives_one_servers_rows(
        start_llama_server: Any, tmp_path: Path) -> None:
    from labkit.dialog.comparison import DialogConfig, record

    data = Path(__file__).resolve().parents[1] / "data" / "dialog"
    settings = DialogConfig(model="gemma3-270m", arms=("machine",), scenarios=str(data),
                            users_dir=str(data / "users"))
    users = ["s03", "s20"]  # one message each (a dev and a test user): the shortest conversations there are

    def client(url: str) -> OpenAICompatBackend:
        return OpenAICompatBackend(url, timeout_s=120, cache_dir=tmp_path / "cache")

    with start_llama_server() as first, start_llama_server() as second:
        alone = record(settings, Answers(live=client(first)), tmp_path / "one", only=users)
        pool = ServerPool([client(first), client(second)])
        spread = record(settings, Answers(live=pool), tmp_path / "two", only=users)
    assert len(alone) == 2 and spread == alone  # row for row, in one order
    assert all(r["calls"] >= r["user_messages"] > 0 for r in alone)
    assert pool.runs_per_server()[first] > 0 and pool.runs_per_server()[second] > 0

    def events(folder: str, arm: str, user: str) -> list[dict[str, Any]]:
        """A log's events without what a live call cannot repeat: its wall time (and the hashes over it)."""
        lines = (tmp_path / folder / "logs" / arm / f"{user}.jsonl").read_text().splitlines()
        return [{k: v for k, v in json.loads(line).items() if k not in ("seconds", "hash", "prev_hash")}
                for line in lines]

    for arm in settings.arms:
        for user in ("s03_cancel", "s20_stops_after_issue"):
            assert events("one", arm, user) == events("two", arm, user)


@pytest.mark.bench  # real servers: the runner above; this comparison over a pool: test_repoedit_compare.py
def test_the_code_comparison_spread_over_two_real_servers_gives_one_servers_rows(
        start_llama_server: Any, tmp_path: Path) -> None:
    from labkit.repoedit.compare import REPLAY_IGNORED, CompareConfig, run_compare

    # the one-call arm on two tasks, so each server gets a run (the machine's calls take minutes on one thread:
    # the v2 and dialog tests above already send grammar-constrained machine calls to these servers)
    config = CompareConfig(model="server", arms=["prompt_only"], split="dev", max_tokens=150)
    only = [("prompt_only", task) for task in ("wordcount-whitespace", "roman-subtractive")]

    def client(url: str) -> OpenAICompatBackend:
        return OpenAICompatBackend(url, timeout_s=120, cache_dir=tmp_path / "cache")

    with start_llama_server() as first, start_llama_server() as second:
        alone = run_compare(config, Answers(live=client(first)), tmp_path / "one", only=only)
        pool = ServerPool([client(first), client(second)])
        spread = run_compare(config, Answers(live=pool), tmp_path / "two", only=only)

    def rows(found: list[Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.to_dict().items() if k not in REPLAY_IGNORED} for r in found]

    assert len(alone) == len(only) and rows(spread) == rows(alone)  # row for row, one order
    assert all(r.llm_calls > 0 for r in alone)  # every run asked the model
    assert pool.runs_per_server()[first] > 0 and pool.runs_per_server()[second] > 0
