"""Reading a recorded experiment back: prompt sizes per call, typical failures, the model's share.

These are what notebook 05 shows; they live here (tested) so the notebook stays short.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from labkit.experiment.arms import RunRecord
from labkit.llm.cassette import read_cassette


def prompt_sizes(folder: str | Path) -> list[dict[str, Any]]:
    """One row per recorded model call: arm, task, seed, step, prompt and completion tokens, grammar.

    The step is read back from the call's sampling seed (``seed * 1000 + step``, see
    :class:`~labkit.experiment.planners.Decoding`).
    """
    rows = []
    root = Path(folder) / "cassettes"
    for path in sorted(root.glob("*/*.jsonl")):
        _, calls = read_cassette(path)
        for call in calls:
            seed = int(call["request"]["seed"])
            done = call["completion"]
            rows.append({"arm": path.parent.name, "task": path.stem, "seed": seed // 1000, "step": seed % 1000,
                         "prompt_tokens": int(done["prompt_tokens"]),
                         "completion_tokens": int(done["completion_tokens"]),
                         "grammar": call["request"].get("schema") is not None})
    return rows


def prompt_size_table(rows: Sequence[Mapping[str, Any]], max_step: int = 6) -> list[list[Any]]:
    """Per arm: calls, mean/max prompt tokens, and the mean prompt tokens at steps 0 … ``max_step - 1``."""
    by_arm: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_arm.setdefault(str(r["arm"]), []).append(r)
    table = []
    for arm, calls in by_arm.items():
        sizes = [int(c["prompt_tokens"]) for c in calls]
        per_step = []
        for step in range(max_step):
            at = [int(c["prompt_tokens"]) for c in calls if c["step"] == step]
            per_step.append(round(sum(at) / len(at)) if at else "-")
        table.append([arm, len(calls), round(sum(sizes) / len(sizes)), max(sizes), *per_step])
    return table


def typical_failure(records: Sequence[RunRecord], arm: str) -> RunRecord | None:
    """The first failed run (task, then seed order) whose failure source is the arm's most common one."""
    failed = [r for r in records if r.arm == arm and not r.passed]
    if not failed:
        return None
    source, _ = Counter(r.failure_source for r in failed).most_common(1)[0]
    return next(r for r in failed if r.failure_source == source)


def success_rates(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Arm -> verified success rate over all its runs."""
    return {str(r["arm"]): r["successes"] / r["runs"] for r in rows if r["runs"]}


def per_task_successes(records: Sequence[RunRecord], arms: Sequence[str]) -> list[list[Any]]:
    """Rows ``[task, c/n for each arm]`` (c successes of n seeds)."""
    tasks = list(dict.fromkeys(r.task for r in records))
    out = []
    for task in tasks:
        row: list[Any] = [task]
        for arm in arms:
            runs = [r for r in records if r.task == task and r.arm == arm]
            row.append(f"{sum(r.passed for r in runs)}/{len(runs)}" if runs else "-")
        out.append(row)
    return out


def free_loop_breakdown(records: Sequence[RunRecord], tasks: Sequence[Any], arm: str) -> dict[str, int]:
    """How far the prompt-only arm's runs got, step by step, read from the model's own JSON lines.

    Counts runs in which the model (a) wrote only parsable actions, (b) read every record the task needs,
    (c) asked to read a record the task forbids, (d) saved a draft at all, (e) saved it under the task's key,
    (f) saved more than once, (g) said done.
    """
    import json

    goals = {t.id: t for t in tasks}
    out = Counter()
    for r in (x for x in records if x.arm == arm):
        task = goals[r.task]
        actions = []
        for raw in r.outputs:
            try:
                data = json.loads(raw)
            except ValueError:
                data = None
            actions.append(data if isinstance(data, dict) else None)
        ok = [a for a in actions if a is not None]
        reads = {str((a.get("args") or {}).get("id")) for a in ok if a.get("action") == "read_record"}
        saves = [a for a in ok if a.get("action") == "save_draft"]
        out["runs"] += 1
        out["only parsable actions"] += int(len(ok) == len(actions))
        out["read every needed record"] += int(set(task.goal.reads) <= reads)
        out["asked to read a forbidden record"] += int(bool(reads & set(task.forbidden_records)))
        out["saved a draft"] += int(bool(saves))
        out["saved under the task's key"] += int(any((a.get("args") or {}).get("key") == task.goal.draft_key
                                                     for a in saves))
        out["saved more than once"] += int(len(saves) > 1)
        out["said done"] += int(any(a.get("action") == "done" for a in ok))
    return dict(out)


def menu_decisions(folder: str | Path, arm: str = "machine-model") -> list[dict[str, Any]]:
    """Every recorded menu decision of ``arm``: task, seed, step, options, the model's choice, and what the
    naive rule "first option in the order the task text names it, save last" would have chosen.

    Why: if the model only ever agreed with that rule, code could replace it; where they disagree is where
    the model did something of its own (for better or worse).
    """
    import json

    from labkit.experiment.menu import SAVE, record_ids_in

    rows = []
    for path in sorted((Path(folder) / "cassettes" / arm).glob("*.jsonl")):
        _, calls = read_cassette(path)
        for call in calls:
            request = call["request"]
            options = list((request.get("schema") or {}).get("enum", []))
            task_line = [line for line in request["prompt"].splitlines() if line.startswith("Task: ")][-1]
            named = record_ids_in(task_line)
            rule = next((r for r in named if r in options), SAVE)
            try:
                choice = json.loads(call["completion"]["text"])
            except ValueError:
                choice = None
            rows.append({"task": path.stem, "seed": int(request["seed"]) // 1000, "step": int(request["seed"]) % 1000,
                         "options": options, "model": choice, "text_order_rule": rule})
    return rows


def decision_table(decisions: Sequence[Mapping[str, Any]], tasks: Sequence[Any]) -> list[list[Any]]:
    """Per task: menu decisions asked of the model, how many agree with the text-order rule, how many
    picked a record the task leaves out, how many chose save while a needed record was still unread."""
    goals = {t.id: set(t.goal.reads) for t in tasks}
    rows = []
    for task in dict.fromkeys(str(d["task"]) for d in decisions):
        mine = [d for d in decisions if d["task"] == task]
        left_out = sum(1 for d in mine if d["model"] not in ("save", None) and d["model"] not in goals[task])
        early = sum(1 for d in mine if d["model"] == "save" and goals[task] & set(d["options"]))
        rows.append([task, len(mine), sum(d["model"] == d["text_order_rule"] for d in mine), left_out, early])
    return rows
