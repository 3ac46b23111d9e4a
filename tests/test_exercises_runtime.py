"""Mutation tests for exercises 02a–04a: a realistic wrong answer gets a precise message.

Each test takes the reference solution, makes one mistake a learner plausibly makes, and checks
that the checker names that mistake (where it happened and what was expected) — not just "wrong".
"""

from __future__ import annotations

from pathlib import Path

from labkit.course.exercises import exercises_root, run_check


def _mutated(folder: str, old: str, new: str, tmp_path: Path, *more: tuple[str, str]) -> Path:
    """The solution of ``folder`` with ``old`` replaced by ``new`` (and any further pairs), as a file."""
    text = (exercises_root() / folder / "solution.py").read_text(encoding="utf-8")
    for before, after in ((old, new), *more):
        assert before in text, f"the mutation target is gone from {folder}/solution.py: {before!r}"
        text = text.replace(before, after)
    target = tmp_path / "mine.py"
    target.write_text(text, encoding="utf-8")
    return target


def test_02_an_executor_that_trusts_the_token_s_own_fields_opens_other_calls(tmp_path: Path):
    # the classic mistake: checking that the token is genuine, but not that it is *for this call*
    mine = _mutated("02a_validator",
                    "    if (token.action, token.args_sha256, token.policy_version) != "
                    "(action, digest, policy_version):\n        return False\n", "", tmp_path,
                    ("expected = sign(secret, token.action_id, action, digest, policy_version)",
                     "expected = sign(secret, token.action_id, token.action, token.args_sha256, token.policy_version)"))
    report = run_check("02a", mine)
    assert report.feedback == [
        "executor_accepts, a token for R03 used to read R04: returned True, but this token must be refused",
        "executor_accepts, a read token used for a write: returned True, but this token must be refused",
        "executor_accepts, a token used after the policy changed: returned True, but this token must be refused",
    ]


def test_02_checking_the_budget_before_the_schema_is_named(tmp_path: Path):
    mine = _mutated("02a_validator", "    try:\n        SCHEMAS[action].model_validate(args)",
                    "    if tool_calls_left < 1:\n"
                    "        return Denial(\"over_budget\", f\"no tool calls left for {action}\")\n"
                    "    try:\n        SCHEMAS[action].model_validate(args)", tmp_path)
    report = run_check("02a", mine)
    assert report.feedback == [
        "validate, bad arguments under an old policy (schema before policy): denied as 'over_budget', "
        "which is not the first rule it breaks (the order: allowlist, schema, policy, budget)",
        "validate, an old policy with no budget (policy before budget): denied as 'over_budget', "
        "which is not the first rule it breaks (the order: allowlist, schema, policy, budget)",
    ]


def test_04_a_chain_check_that_only_looks_at_seq_misses_a_swapped_in_event(tmp_path: Path):
    mine = _mutated("03a_replay_and_compare", "if event.seq != position or event.prev_hash != previous:",
                    "if event.seq != position:", tmp_path)
    report = run_check("03a", mine)
    assert report.feedback == [
        "first_broken_link, event 2 replaced by the same event of another run: returned None, which "
        "is not the first broken link"]


def test_04_a_reducer_that_counts_a_record_twice_is_stopped_at_the_second_read(tmp_path: Path):
    mine = _mutated("03a_replay_and_compare", "        if record not in state.records_read:\n"
                    "            changes[\"records_read\"]", "        if True:\n            changes[\"records_read\"]",
                    tmp_path)
    report = run_check("03a", mine)
    assert [f for f in report.feedback if "hidden" not in f] == [
        "reduce, run 'a record read twice': first wrong after #4 READING --read_ok--> READING "
        "{'record_id': 'r1', 'more': True}: records_read is ('r1', 'r2', 'r1') (that is not what "
        "the README's rules give here)"]


def test_03_a_write_timeout_predicted_as_failure_is_stopped_at_the_timeout(tmp_path: Path):
    mine = _mutated("02b_predict_states",
                    '"lost_write": ["UNKNOWN", "EXECUTING", "OBSERVING", "COMMITTING", "SUCCEEDED"]',
                    '"lost_write": ["FAILED"]', tmp_path,
                    ('    "lost_write": "succeeded",', '    "lost_write": "failed",'))
    report = run_check("02b", mine)
    assert report.feedback == ["lost_write: you predicted 1 state(s), but the window has 5 transition(s)"]


def test_05_a_machine_count_assumed_to_be_zero_is_caught_by_a_doctored_log(tmp_path: Path):
    mine = _mutated("04a_free_loop_vs_machine", "    if run.arm == \"machine\":\n        count = 0\n",
                    "    if run.arm == \"machine\":\n        return 0  # the machine never does that... does it?\n"
                    "        count = 0\n", tmp_path)
    report = run_check("04a", mine)
    assert report.feedback == [
        "unknown_writes_as_success(doctored: write committed unobserved): returned 0, which is not "
        "the count in this run's logs"]
