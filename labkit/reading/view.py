"""What a recorded run looked like: its model calls (prompt and answer) and its verdict, from its cassette
and ``runs.jsonl`` line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from labkit.llm.cassette import read_cassette
from labkit.reading.prompts import PREFIX_END
from labkit.reading.runner import cassette_path, load_reading_runs


@dataclass(frozen=True)
class Call:
    """One model call of a recorded run."""

    prompt: str
    answer: str
    prompt_tokens: int
    completion_tokens: int


def recorded_calls(folder: str | Path, arm: str, split: str, task_id: str) -> list[Call]:
    """The model calls of one (arm, split, task) in the order they were made (empty for an arm without a model)."""
    path = cassette_path(Path(folder), arm, split, task_id)
    if not path.exists():
        return []
    _, completions = read_cassette(path)
    return [Call(c["request"]["prompt"], c["completion"]["text"], int(c["completion"]["prompt_tokens"]),
                 int(c["completion"]["completion_tokens"])) for c in completions]


def show_calls(calls: Sequence[Call], *, first: int = 1, last: int = 0, width: int = 110) -> str:
    """The calls as text (a prompt-only prompt from the task on); ``first``/``last`` printed in full."""
    out: list[str] = []
    shown = {*range(min(first, len(calls))), *range(max(len(calls) - last, 0), len(calls))}
    for n, call in enumerate(calls):
        if n not in shown:
            if n - 1 in shown:
                out.append(f"... {len(calls) - len(shown)} more call(s) ...")
            continue
        prompt = call.prompt
        head = f"--- call {n + 1}: prompt {call.prompt_tokens} tokens"
        if PREFIX_END in prompt:
            cut = prompt.index(PREFIX_END) + len(PREFIX_END)
            head += f" (its first {cut} characters, instructions and worked episodes, not shown)"
            prompt = prompt[cut:]
        out += [head, *(line[:width] for line in prompt.splitlines()), f">>> answer: {call.answer.strip()[:300]}"]
    return "\n".join(out)


def verdict(folder: str | Path, arm: str, split: str, task_id: str, seed: int = 0) -> str:
    """The recorded run's grade in one line: passed or which checks failed and why."""
    for s, run in load_reading_runs(Path(folder) / "runs.jsonl"):
        if (s, run.arm, run.task, run.seed) == (split, arm, task_id, seed):
            if run.passed:
                return f"{arm}: passed ({run.termination}, {run.llm_calls} model calls)"
            return f"{arm}: failed ({run.termination}, {run.llm_calls} model calls): " + "; ".join(
                run.details or run.failed_checks)
    return f"{arm}: no run of {split}/{task_id} seed {seed} in {folder}"


__all__ = ["Call", "recorded_calls", "show_calls", "verdict"]
