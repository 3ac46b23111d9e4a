"""Prefix reuse across turns (issue 24, part 4): each step's prompt head is declared, and cache reads are recorded.

The declared heads are checked against the prompts the recordings really sent (every arm, every
call, re-asks included), so a head that stopped being the start of its prompts fails here. How many
tokens reuse saves, and whether the two-batch cut changes an answer, is measured on the real model
(``scripts/bench_dialog_prefix.py``, ``data/bench/dialog-prefix.json``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from labkit.core.store import read_jsonl
from labkit.dialog.arms import declared_prefixes
from labkit.dialog.comparison import read_config
from labkit.dialog.events import CacheRead, ModelCalled
from labkit.dialog.history import recorded_arm
from labkit.dialog.simulate import load_scenarios, run_user
from labkit.dialog.users import load_user_scripts
from labkit.llm.backend import Completion, Request
from labkit.llm.fake import ScriptedBackend
from labkit.llm.prefix_cache import longest_declared
from labkit.llm.server_kinds import cached_prompt_tokens

DATA = Path(__file__).resolve().parents[1] / "data" / "dialog"
SCENARIOS = load_scenarios(DATA)
RECORDINGS = sorted(p for split in ("runs", "runs_test", "runs_dev") for p in (DATA / split).glob("*")
                    if (p / "dialog.json").exists() or (p / "logs").exists())


def _heads(arm_name: str, scenario_name: str, *, recorded: bool = False) -> tuple[str, ...]:
    """The heads of today's arm ``arm_name``, or (``recorded``) of the arm a recording under the old names calls so."""
    arm = recorded_arm(arm_name) if recorded else arm_name
    return declared_prefixes([arm], [SCENARIOS[scenario_name]], ScriptedBackend([]))


@pytest.mark.parametrize("folder", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recorded_prompt_starts_with_the_head_its_arm_declares_for_its_step(folder: Path) -> None:
    checked = 0
    for log in sorted((folder / "logs").glob("*/*.jsonl")):
        arm_name, events = log.parent.name, read_jsonl(log).events
        scenario = next(e.params["scenario"] for e in events if e.type == "run_started").removesuffix("-prompt-only")
        old_names = read_config(folder).arm_names == "rounds" if (folder / "dialog.json").exists() else True
        heads = {h: h for h in _heads(arm_name, scenario, recorded=old_names)}
        for call in (e for e in events if isinstance(e, ModelCalled)):
            head = longest_declared(call.prompt, tuple(heads))
            assert head is not None, f"{log}: a {call.step} prompt starts with no declared head"
            if "prompt_only" not in arm_name:  # the machine's head is its step's own
                assert f"Current step: {call.step}.\n" in head, log
            checked += 1
    assert checked > 0


def test_a_machine_declares_one_head_per_step_and_the_prompt_only_bot_one_in_all() -> None:
    support = SCENARIOS["support"]
    assert len(_heads("machine", "support")) == len(support.steps)
    assert len(_heads("bare_machine", "support")) == len(support.steps)
    (whole,) = _heads("prompt_only_checked", "support")
    assert whole.startswith(support.full_script())
    both = declared_prefixes(["bare_machine", "machine", "prompt_only"], SCENARIOS.values(), ScriptedBackend([]))
    assert len(both) == len(set(both)) == sum(2 * len(s.steps) + 1 for s in SCENARIOS.values())


class _Caching(ScriptedBackend):
    """Scripted answers that say the first ``cached`` prompt tokens came from a cache, on calls after the first."""

    def __init__(self, script, cached: int) -> None:  # type: ignore[no-untyped-def]
        super().__init__(script)
        self.cached = cached

    def _complete(self, request: Request) -> Completion:
        first = not self.requests
        out = super()._complete(request)
        return out if first else dataclasses.replace(out, cached_tokens=self.cached)


def test_a_cache_read_is_an_event_the_state_and_the_row_count() -> None:
    user = next(u for u in load_user_scripts(DATA / "users") if u.name.startswith("a01"))
    answer = json.dumps({"message": "What is the goal?", "signal": "stay", "results": {}, "summary": ""})
    backend = _Caching(lambda request: answer, cached=120)
    bot = recorded_arm("machine_plus").make(SCENARIOS[user.scenario], backend)
    run_user(bot, user, "machine_plus")
    reads = [e for e in bot.events if isinstance(e, CacheRead)]
    calls = [e for e in bot.events if isinstance(e, ModelCalled)]
    assert len(reads) == len(calls) - 1 and {e.tokens for e in reads} == {120}
    assert bot.state.cached_tokens == 120 * (len(calls) - 1)


def test_a_recording_made_without_a_cache_records_no_cache_read() -> None:
    folder = DATA / "runs_test" / "qwen2.5-coder-1.5b"
    assert read_config(folder).arms
    logs = sorted((folder / "logs").glob("*/*.jsonl"))
    assert logs and not any(isinstance(e, CacheRead) for log in logs for e in read_jsonl(log).events)


@pytest.mark.parametrize("answer, cached", [
    ({"usage": {"prompt_tokens": 90, "prompt_tokens_details": {"cached_tokens": 64}}}, 64),  # OpenAI, vLLM
    ({"usage": {"prompt_tokens": 90}, "timings": {"cache_n": 48, "prompt_n": 42}}, 48),  # llama-server
    ({"usage": {"prompt_tokens": 90, "prompt_tokens_details": None}}, 0),  # llama_cpp.server says nothing
    ({"usage": {"prompt_tokens": 90}}, 0),
])
def test_the_cached_tokens_a_server_reports_are_read_from_its_own_field(answer: dict, cached: int) -> None:
    assert cached_prompt_tokens(answer) == cached


def test_the_prefix_cache_is_refused_for_a_server_before_anything_runs(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture) -> None:
    from labkit.cli import main

    code = main(["compare", "dialog", "--server", "http://127.0.0.1:9", "--prefix-cache", "--split", "dev",
                 "--only", "a01", "--out", str(tmp_path / "rec")])
    assert code != 0 and "--prefix-cache is for the in-process model" in capsys.readouterr().err
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize(("extra", "said"), [
    (["--replay", "data/dialog/runs_dev/qwen2.5-coder-1.5b-next9"], "--reuse is for a live recording"),
    (["--prefix-cache", "--split", "dev", "--only", "a01"], "would mix answers evaluated two ways"),
])
def test_reuse_is_refused_where_its_answers_would_not_be_this_recordings(tmp_path: Path, extra: list[str], said: str,
                                                                        capsys: pytest.CaptureFixture) -> None:
    from labkit.cli import main

    code = main(["compare", "dialog", "--reuse", str(DATA / "runs_dev" / "qwen2.5-coder-1.5b-next8"), *extra,
                 "--out", str(tmp_path / "rec")])
    assert code != 0 and said in capsys.readouterr().err
    assert not (tmp_path / "rec").exists()


def test_the_committed_prefix_bench_says_what_the_docs_say() -> None:
    """data/bench/dialog-prefix.json: keeping the head changed no row and read tokens only under K."""
    record = json.loads((DATA.parents[0] / "bench" / "dialog-prefix.json").read_text(encoding="utf-8"))
    assert record["order"] == ["F", "K", "K", "F"] and all(len(t) == 2 for t in record["wall_s"].values())
    assert record["rows_K_same_as_F"] is True
    assert record["cached_tokens_per_message"]["F"] == 0 < record["cached_tokens_per_message"]["K"]
    assert record["ratio_K_to_F"] == round(record["median_s"]["K"] / record["median_s"]["F"], 3) < 1
    assert all(u.split("_")[0] in {x.name.split("_")[0] for x in load_user_scripts(DATA / "users")
                                   if x.split == "dev"} for u in record["users"])
    assert "+dirty" not in record["commit"]
