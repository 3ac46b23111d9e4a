"""Re-score recorded conversations on the measure, from their event logs alone (no model).

``logs/<arm>/<user>.jsonl`` holds every message, variable change and move, so a new measure applies to an old
recording without a model or a cassette. Users a recording does not cover are left out (never scored as
failures); :func:`score_runs` says which users each recording covers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.store import read_jsonl
from labkit.dialog import history
from labkit.dialog.arms import ARMS
from labkit.dialog.measure import Score, compare_arms, score, summarize_scores, table
from labkit.dialog.scenario import Scenario
from labkit.dialog.users import UserScript, check_user


def score_recording(run_dir: str | Path, scenarios: dict[str, Scenario], users: list[UserScript],
                    split: str | None = None) -> dict[str, list[Score]]:
    """One recording (``runs/<model>``) scored per arm; ``split`` keeps only dev or test users."""
    run = Path(run_dir)
    provenance = json.loads((run / "provenance.json").read_text(encoding="utf-8"))
    by_name = {u.name: u for u in users}
    missing = sorted(set(provenance["users"]) - set(by_name))
    if missing:
        raise LabkitError(f"{run}: the recording covers users with no script: {', '.join(missing)}",
                          "restore their files in data/dialog/users, or record again.")
    out: dict[str, list[Score]] = {}
    for arm in provenance["arms"]:
        scores = []
        for name in provenance["users"]:
            user = by_name[name]
            if split is not None and user.split != split:
                continue
            scenario = scenarios[user.scenario]
            check_user(user, scenario)
            events = read_jsonl(run / "logs" / arm / f"{name}.jsonl").events
            scores.append(score(events, scenario, user, arm))
        out[arm] = scores
    return out


def score_folder(folder: str | Path, scenarios: dict[str, Scenario], users: list[UserScript],
                 split: str | None = None) -> dict[str, list[Score]]:
    """A recording of ``labkit compare dialog`` (:mod:`labkit.dialog.comparison`) scored per arm, from its logs.

    Arms in the configuration's order, users in the order of ``runs.jsonl``; an arm recorded for some
    users only is scored on those (a paired test pairs users both arms hold).
    """
    from labkit.compare.runs import read_rows
    from labkit.dialog.comparison import log_path, read_config

    run = Path(folder)
    config = read_config(run)
    by_name = {u.name: u for u in users}
    rows = read_rows(run / "runs.jsonl")
    missing = sorted({r["task"] for r in rows} - set(by_name))
    if missing:
        raise LabkitError(f"{run}: the recording covers users with no script: {', '.join(missing)}",
                          "restore their files in data/dialog/users, or record again.")
    out: dict[str, list[Score]] = {arm: [] for arm in config.arms}
    for row in rows:
        user = by_name[row["task"]]
        if split is not None and user.split != split:
            continue
        scenario = scenarios[user.scenario]
        events = read_jsonl(log_path(run, row["arm"], user.name)).events
        out[row["arm"]].append(score(events, scenario, user, row["arm"]))
    return {arm: scores for arm, scores in out.items() if scores}


def score_runs(runs_dir: str | Path, scenarios: dict[str, Scenario], users: list[UserScript],
               split: str | None = None) -> dict[str, dict[str, list[Score]]]:
    """Every recording under ``runs_dir`` (one folder per model), scored per arm."""
    from labkit.dialog.comparison import CONFIG_FILE

    found: dict[str, dict[str, list[Score]]] = {}
    for p in sorted(Path(runs_dir).iterdir()):
        if (p / CONFIG_FILE).is_file():
            found[p.name] = score_folder(p, scenarios, users, split)
        elif (p / "provenance.json").is_file():
            found[p.name] = score_recording(p, scenarios, users, split)
    return found


PAIRS = (("machine", "prompt_only_checked"), ("machine", "bare_machine"), ("bare_machine", "prompt_only"))
"""The paired comparisons a report makes of today's arms, where a recording holds both."""


def pairs_of(arms: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The pairs a report makes of a recording with these arms: a recording that holds an arm only the design
    rounds had is read under their names (:data:`labkit.dialog.history.PAIRS`; ``machine`` there is the bare
    machine), any other under today's (:data:`PAIRS`)."""
    names = set(arms)
    old = names - {a.name for a in ARMS}
    chosen = [p for p in history.PAIRS if p != ("machine", "prompt_only")] if old else PAIRS
    return tuple((a, b) for a, b in chosen if {a, b} <= names)


def report(scored: dict[str, dict[str, list[Score]]]) -> dict[str, Any]:
    """The summaries per (model, arm), the paired tests of :data:`PAIRS`, and a Markdown table.

    ``paired[model]`` is machine vs prompt-only (the first recording's comparison);
    ``paired_arms[model]["a vs b"]`` holds every pair of :func:`pairs_of` the recording has.
    """
    summaries = {(model, arm): summarize_scores(scores) for model, arms in scored.items()
                 for arm, scores in arms.items()}
    tests = {model: {part: t.describe() for part, t in compare_arms(arms["machine"], arms["prompt_only"]).items()}
             for model, arms in scored.items() if {"machine", "prompt_only"} <= set(arms)}
    pairs = {model: {f"{a} vs {b}": {part: t.describe() for part, t in compare_arms(arms[a], arms[b]).items()}
                     for a, b in pairs_of(arms)}
             for model, arms in scored.items()}
    return {"summaries": summaries, "paired": tests, "paired_arms": pairs, "table": table(summaries)}


def counts(folder: str | Path) -> dict[str, dict[str, Any]]:
    """The call and contract counts per arm of a recording (calls per user message, re-asks, violations,
    prompt tokens), from its rows: what the measure's parts do not say."""
    from labkit.compare.runs import read_rows
    from labkit.dialog.comparison import read_config
    from labkit.dialog.simulate import result_from_dict, summarize

    rows = read_rows(Path(folder) / "runs.jsonl")
    return {arm: summarize([result_from_dict(r) for r in rows if r["arm"] == arm])
            for arm in read_config(Path(folder)).arms if any(r["arm"] == arm for r in rows)}


def recordings_table(folders: dict[str, Path], scenarios: dict[str, Scenario], users: list[UserScript]) -> str:
    """A Markdown table of several recordings (``{label: folder}``), one row per arm: each part's count, adherence
    with its Wilson interval, false completions and calls per user message (docs/results.md and notebook 05 show it)."""
    from labkit.dialog.comparison import read_config
    from labkit.dialog.measure import PARTS

    lines = ["| recording | model | arm | n | " + " | ".join(PARTS) + " | adhered (95% Wilson) | false completions "
             "| calls / user message |", "|---|---|---|---|" + "---|" * len(PARTS) + "---|---|---|"]
    for label, folder in folders.items():
        model = read_config(folder).model
        calls = counts(folder)
        for arm, scores in score_folder(folder, scenarios, users).items():
            row = summarize_scores(scores)
            low, high = row["adhered"]["ci95"]
            lines.append(f"| {label} | {model} | {arm} | {row['conversations']} | "
                         + " | ".join(str(row[p]["count"]) for p in PARTS)
                         + f" | {row['adhered']['count']} ({low:.0%}–{high:.0%}) | {row['false_completions']['count']} "
                         f"| {calls[arm]['calls_per_message']} |")
    return "\n".join(lines)


def headline(folder: str | Path, scenarios: dict[str, Scenario], users: list[UserScript],
             arms: tuple[str, str] | None = None, shown: Callable[[str], str] = str) -> str:
    """One sentence of a recording: each of two arms' adherence with its Wilson interval, and the paired exact
    test by user between them (the README's line; computed, so it cannot drift from the recording). By default
    ``machine`` against ``prompt_only_checked`` (in a recording under the old names, :data:`history.HEADLINE`);
    ``shown`` gives the name an arm is written as."""
    from labkit.dialog.comparison import read_config

    if arms is None:
        old_names = read_config(Path(folder)).arm_names == "rounds"
        arms = history.HEADLINE if old_names else ("machine", "prompt_only_checked")

    scored = score_folder(folder, scenarios, users)
    missing = [a for a in arms if a not in scored]
    if missing:
        raise LabkitError(f"{folder} holds no conversations of {missing}", "record those arms first.")
    parts = []
    for arm in arms:
        row = summarize_scores(scored[arm])["adhered"]
        low, high = row["ci95"]
        parts.append(f"{shown(arm)} adhered in {row['count']}/{row['of']} ({low:.0%}–{high:.0%})")
    test = compare_arms(scored[arms[0]], scored[arms[1]])["adhered"]
    return f"{read_config(Path(folder)).model}: {', '.join(parts)}; paired exact sign test p = {test.p_value:.3g}"
