"""The report of the code comparison: per model, fixed with Wilson intervals, broken trees, cost; paired tests.

The unit is the task: each arm runs each task once (greedy), a task is fixed when the verifier says so,
and two arms are compared by the exact sign test over the tasks both ran (:mod:`labkit.compare.stats`).
The headline is the seed's form "prompt-only x/10 → machine y/10", and :func:`meaning` says in words
what the numbers do and do not show, whichever way they came out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from labkit.compare.features import ablation_sentence
from labkit.compare.report import markdown_table
from labkit.compare.stats import paired_test, solved_cell, stored_p, wilson_interval
from labkit.core.errors import LabkitError
from labkit.core.provenance import read_provenance
from labkit.repoedit.arms import ARMS, BEST_OF
from labkit.repoedit.arms import arm as arm_named
from labkit.repoedit.compare import RunRow, load_rows, read_config
from labkit.repoedit.features import FEATURES
from labkit.repoedit.history import RENAMED, recorded_path, today

BEST_M, BEST_P = f"machine_best_of_{BEST_OF}", f"prompt_whole_best_of_{BEST_OF}"
EQUAL_COMPUTE = ("prompt_excerpt_best_of_6", BEST_P)
"""One prompt given about the machine's compute (several tries, the visible tests picking): the baselines that
separate what the machine's structure buys from what more calls and test feedback buy; the first recorded counts."""
# (a, b): what the machine adds over one prompt and over a free loop with the same tools; what the features add
# over the bare machine; what best of k adds. A pair is reported where a recording holds both arms.
COMPARISONS = (("machine_bare", "prompt_only"), ("machine_bare", "prompt_tools"), ("machine", "prompt_excerpt"),
               ("machine", "prompt_whole"),
               ("machine", "prompt_tools"), ("machine", "prompt_only"), ("machine", "machine_bare"),
               (BEST_M, BEST_P), (BEST_M, "machine"), (BEST_P, "prompt_whole"), (BEST_M, "prompt_whole"),
               *(("machine", baseline) for baseline in EQUAL_COMPUTE))
HEADLINES = (("prompt_whole", "machine"), ("prompt_excerpt", "machine"), ("prompt_only", "machine"),
             ("prompt_only", "machine_bare"))
"""(one prompt, machine) pairs for the seed's "x/n → y/n" form: of those a recording holds with the first machine
it holds, the one whose prompt fixed most (the strongest one-prompt baseline; in a real package no whole file
fits the context, and the excerpt is it), the first of them on a tie."""
ORACLES = tuple(name for name, spec in ARMS.items() if spec.machine and spec.planner == "oracle")
DEFAULT_TASKS = "data/repos/tasks.yaml"
# What a paired test compares per task: the fix, and the tree left no worse (no test broken that passed before).
MEASURES: dict[str, Callable[[RunRow], bool]] = {
    "fixed": lambda r: r.fixed,
    "no test left broken": lambda r: not r.broken_left,
}


def arm_rows(rows: Sequence[RunRow]) -> list[dict[str, Any]]:
    """One summary per arm (in :data:`ARMS` order): fixed with its interval, broken trees, cost."""
    out = []
    for arm in ARMS:
        mine = [r for r in rows if r.arm == arm]
        if not mine:
            continue
        fixed = sum(r.fixed for r in mine)
        out.append({
            "arm": arm, "label": arm_named(arm).label, "tasks": len(mine), "tasks_solved": fixed,
            "ci95": list(wilson_interval(fixed, len(mine))),
            "broken_trees": sum(bool(r.broken_left) for r in mine),
            "broken_tests": sum(len(r.broken_left) for r in mine),
            "tests_changed": sum(bool(r.tests_changed) for r in mine),
            "outside_written": sum(bool(r.outside_written) for r in mine),
            "green_but_not_fixed": sum(r.outcome == "passed" and not r.fixed for r in mine),
            "hidden_graded": sum(r.hidden_passed is not None for r in mine),
            "visible_green_hidden_red": sum(r.outcome == "passed" and r.hidden_passed is False for r in mine),
            "test_runs": sum(r.test_runs for r in mine), "llm_calls": sum(r.llm_calls for r in mine),
            "prompt_tokens": sum(r.prompt_tokens for r in mine),
            "completion_tokens": sum(r.completion_tokens for r in mine),
            "model_s": round(sum(r.model_s for r in mine), 1), "wall_s": round(sum(r.wall_s for r in mine), 1)})
    return out


def _by_task(rows: Sequence[RunRow], arm: str, measure: str = "fixed") -> dict[str, tuple[int, int]]:
    return {r.task: (int(MEASURES[measure](r)), 1) for r in rows if r.arm == arm}


def paired_rows(rows: Sequence[RunRow]) -> list[dict[str, Any]]:
    """The exact sign test of each comparison in :data:`COMPARISONS` on each of :data:`MEASURES`, over the
    tasks both arms ran."""
    out = []
    for measure in MEASURES:
        for a, b in COMPARISONS:
            ca, cb = _by_task(rows, a, measure), _by_task(rows, b, measure)
            common = sorted(set(ca) & set(cb))
            if not common:
                continue
            test = paired_test({t: ca[t] for t in common}, {t: cb[t] for t in common}, names=(a, b))
            out.append({"measure": measure, "a": a, "b": b, "tasks": test.tasks, "a_better": test.a_better,
                        "b_better": test.b_better, "ties": test.ties, "p_value": stored_p(test.p_value)})
    return out


def headline_pair(rows: Sequence[RunRow]) -> tuple[str, str, list[str]] | None:
    """The pair of :data:`HEADLINES` the seed's form reports, and the tasks both its arms ran (None if none)."""
    found = []
    for lower, upper in HEADLINES:
        ca, cb = _by_task(rows, lower), _by_task(rows, upper)
        if common := sorted(set(ca) & set(cb)):
            found.append((lower, upper, common, sum(ca[t][0] for t in common)))
    if not found:
        return None
    first = [f for f in found if f[1] == found[0][1]]
    lower, upper, common, _ = max(first, key=lambda f: f[3])  # max keeps the first of equals
    return lower, upper, common


def headline(rows: Sequence[RunRow]) -> str | None:
    """The seed's form, "prompt-only x/n → machine y/n", for :func:`headline_pair`, over the tasks both arms
    ran (None if none)."""
    pair = headline_pair(rows)
    if pair is not None:
        lower, upper, common = pair
        ca, cb = _by_task(rows, lower), _by_task(rows, upper)
        x, y = sum(ca[t][0] for t in common), sum(cb[t][0] for t in common)
        if (lower, upper) == ("prompt_only", "machine_bare"):  # the seed's own words
            return f"prompt-only {x}/{len(common)} → machine {y}/{len(common)}"
        return f"{arm_named(lower).label} {x}/{len(common)} → {arm_named(upper).label} {y}/{len(common)}"
    return None


def seed_form(folder: Path) -> dict[str, Any] | None:
    """One recording in the seed's form, as numbers: the pair :func:`headline_pair` picks (one prompt,
    then the machine), tasks fixed by each over the tasks both ran, the paired exact sign test of the machine
    against the prompt, the trees each left with a test broken that passed before, and the tasks its split plans
    (a recording made in stretches holds fewer until it is complete) (None if no pair)."""
    config = read_config(folder)
    rows = load_rows(folder / "runs.jsonl")
    pair = headline_pair(rows)
    if pair is not None:
        lower, upper, common = pair
        ca, cb = _by_task(rows, lower), _by_task(rows, upper)
        test = paired_test({t: cb[t] for t in common}, {t: ca[t] for t in common}, names=(upper, lower))
        broken = {arm: sum(bool(r.broken_left) for r in rows if r.arm == arm and r.task in common)
                  for arm in (lower, upper)}
        return {"model": config.model, "split": config.split, "tasks_file": config.tasks_file,
                "tasks": len(common), "lower": lower, "upper": upper,
                "lower_fixed": sum(ca[t][0] for t in common), "upper_fixed": sum(cb[t][0] for t in common),
                "upper_better": test.a_better, "lower_better": test.b_better, "p_value": test.p_value,
                "broken": broken, "planned_tasks": len(config.task_ids) or len(common)}
    return None


def seed_form_text(folder: Path) -> str:
    """:func:`seed_form` in one line: "model, where: one prompt x/n → machine y/n; only the machine fixed a,
    only the prompt b, exact sign test p; trees left broken"."""
    f = seed_form(folder)
    if f is None:
        return f"{folder}: no pair of one prompt and the machine recorded."
    where = ("the kit's projects" if f["tasks_file"] == DEFAULT_TASKS else f"tasks {f['tasks_file']}")
    lower, upper, n = arm_named(f["lower"]).label, arm_named(f["upper"]).label, f["tasks"]
    so_far = f" (recorded so far: {n} of its {f['planned_tasks']} tasks)" if f["planned_tasks"] > n else ""
    return (f"{f['model']}, {where}, {f['split']} split{so_far}: {lower} {f['lower_fixed']}/{n} → {upper} "
            f"{f['upper_fixed']}/{n}; only the machine fixed {f['upper_better']}, only the prompt "
            f"{f['lower_better']}, exact sign test p = {f['p_value']:.2g}; trees left with a test broken: "
            f"{f['broken'][f['lower']]} and {f['broken'][f['upper']]}.")


def equal_compute_text(folders: Sequence[Path]) -> str | None:
    """The machine against the first :data:`EQUAL_COMPUTE` baseline the recordings hold, over the tasks both ran,
    in one line with what each spent (calls, test runs); None if no recording holds both."""
    rows = [r for folder in folders for r in load_rows(folder / "runs.jsonl")]
    machine = _by_task(rows, "machine")
    for baseline in EQUAL_COMPUTE:
        other = _by_task(rows, baseline)
        common = sorted(set(machine) & set(other))
        if not common:
            continue
        test = paired_test({t: machine[t] for t in common}, {t: other[t] for t in common}, names=("machine", baseline))
        ran = {arm: [r for r in rows if r.arm == arm and r.task in common] for arm in ("machine", baseline)}
        spent = {arm: (sum(r.llm_calls for r in mine), sum(r.test_runs for r in mine)) for arm, mine in ran.items()}
        n = len(common)
        return (f"At about equal compute, {arm_named(baseline).label}, the visible tests picking "
                f"({spent[baseline][0]} calls, {spent[baseline][1]} test runs), {sum(other[t][0] for t in common)}/{n} "
                f"against the machine's {sum(machine[t][0] for t in common)}/{n} ({spent['machine'][0]} calls, "
                f"{spent['machine'][1]} test runs); only the machine fixed {test.a_better}, only the baseline "
                f"{test.b_better}, exact sign test p = {test.p_value:.2g}.")
    return None


HIDDEN_RED = "visible green, hidden red"
FAILURES = ("fixed", "no edit", "every answer refused", "edited, still red", "edited, test files changed", HIDDEN_RED)
"""How a run ended, from its row alone: the failure table's columns, in order (the last only where a benchmark's
hidden grader judged the runs)."""


def failure_kind(row: RunRow) -> str:
    """Which of :data:`FAILURES` a run is: fixed; nothing written (the model skipped or said nothing usable);
    every answer refused by the contract or a guard; edits written but the tests still red (or a test file
    changed, which never counts as a fix)."""
    if row.fixed:
        return "fixed"
    if row.edits == 0:
        return "every answer refused" if row.refused else "no edit"
    if row.tests_changed:
        return "edited, test files changed"
    return HIDDEN_RED if row.outcome == "passed" and row.hidden_passed is False else "edited, still red"



def below_ceiling(rows: Sequence[RunRow], arm: str, ceiling: str = "oracle") -> dict[str, int]:
    """How ``arm``'s runs ended on the tasks ``ceiling`` fixed and ``arm`` did not, by :func:`failure_kind`: where
    the known fix got through the same machine, so the definition it changes was within the machine's reach."""
    fixed = {r.task for r in rows if r.arm == ceiling and r.fixed}
    kinds = [failure_kind(r) for r in rows if r.arm == arm and r.task in fixed and not r.fixed]
    return {kind: kinds.count(kind) for kind in FAILURES if kind in kinds}

def refusals_without_edit(folder: Path, arm: str) -> dict[tuple[str, ...], int]:
    """For the runs of ``arm`` that ended with no edit applied: how many ended after each set of refusal codes,
    read from their event logs, most common first (what the machine refused when nothing got through)."""
    from labkit.core.store import load_events
    from labkit.repoedit.events import ProposalRefused

    found: dict[tuple[str, ...], int] = {}
    for row in load_rows(folder / "runs.jsonl"):
        if row.arm == arm and row.edits == 0:
            events = load_events(recorded_path(folder, "logs", arm, f"{row.task}.jsonl"))
            codes = tuple(sorted({e.code for e in events if isinstance(e, ProposalRefused)}))
            found[codes] = found.get(codes, 0) + 1
    return dict(sorted(found.items(), key=lambda kv: -kv[1]))


def failure_rows(rows: Sequence[RunRow]) -> list[dict[str, Any]]:
    """Per arm, how many runs ended each way (:func:`failure_kind`)."""
    out = []
    for arm in ARMS:
        mine = [failure_kind(r) for r in rows if r.arm == arm]
        if mine:
            out.append({"arm": arm, "label": arm_named(arm).label, **{kind: mine.count(kind) for kind in FAILURES}})
    return out


def ablation_rows(rows: Sequence[RunRow]) -> list[dict[str, Any]]:
    """Per feature: tasks fixed by ``machine`` and by the arm without that feature, over the tasks both
    ran, with the exact sign test — how many tasks the feature buys (negative: it costs)."""
    full = _by_task(rows, "machine")
    out = []
    for feature in FEATURES:
        arm = f"machine_without_{feature.name}"
        without = _by_task(rows, arm)
        common = sorted(set(full) & set(without))
        if not common:
            continue
        test = paired_test({t: full[t] for t in common}, {t: without[t] for t in common},
                           names=("machine", arm))
        with_n, without_n = sum(full[t][0] for t in common), sum(without[t][0] for t in common)
        out.append({"feature": feature.name, "tasks": len(common), "with": with_n, "without": without_n,
                    "buys": with_n - without_n, "only_with": test.a_better, "only_without": test.b_better,
                    "p_value": stored_p(test.p_value)})
    return out


def meaning(arms: Sequence[Mapping[str, Any]], paired: Sequence[Mapping[str, Any]],
            failures: Sequence[Mapping[str, Any]] = ()) -> str:
    """What the numbers mean, in sentences built from them (so the text is right whichever way they came out);
    ``failures`` (:func:`failure_rows`) says how the known fix's misses ended."""
    by = {r["arm"]: r for r in arms}
    said = []
    one = next((p for p in paired if p["a"].startswith("machine") and p["measure"] == "fixed"
                and not arm_named(p["b"]).machine and arm_named(p["b"]).runner != "free_loop"), None)
    if one is not None:
        a, b, n = one["a_better"], one["b_better"], one["tasks"]
        if a == b == 0:
            said.append(f"On fixes the machine and one prompt are level: no task of these {n} is fixed by one and "
                        "not the other, so the sign test has nothing to weigh (p = 1); the difference, if any, "
                        "lies below what this model reaches.")
        elif a == b:
            said.append(f"On fixes the machine and one prompt are level on these {n} tasks ({a} fixed by one and "
                        f"not the other, each way; p = {one['p_value']:.3g}).")
        else:
            more, fewer = ("machine", "one prompt") if a > b else ("one prompt", "machine")
            said.append(f"The {more} fixed {abs(a - b)} task(s) more than the {fewer} ({max(a, b)} tasks only "
                        f"it fixed against {min(a, b)}).")
            said.append(f"With {n} tasks the exact sign test gives p = {one['p_value']:.3g}: " +
                        ("a split this uneven is unlikely if neither way were better." if one["p_value"] < 0.05
                         else "a split like this happens by chance often enough that it is a direction, not a "
                              "proof; more tasks would decide it."))
    broken = [f"{r['label']} {r['broken_trees']}" for r in arms if r["arm"] not in ORACLES]
    said.append("Trees left with a test broken that passed before: " + ", ".join(broken) + ".")
    kept = [p for p in paired if p["measure"] == "no test left broken" and p["a_better"] + p["b_better"]
            and p["a"].startswith("machine") and not p["b"].startswith("machine")]
    said += [f"Leaving the tree no worse, {'the machine' if len(kept) == 1 else arm_named(p['a']).label} beat "
             f"{arm_named(p['b']).label} on {p['a_better']} task(s) and lost on {p['b_better']} (exact sign test "
             f"p = {p['p_value']:.3g})." for p in kept]
    for p in paired:
        if p["measure"] == "fixed" and p["a"] == f"{p['b']}_best_of_{BEST_OF}":  # best_of_arm's name
            said.append(f"Best of {BEST_OF} (the visible tests picking among up to {BEST_OF} tries) fixed "
                        f"{p['a_better']} "
                        f"task(s) the greedy {arm_named(p['b']).label} did not and lost {p['b_better']} "
                        f"(exact sign test p = {p['p_value']:.3g}).")
    machine = by.get("machine_bare") or by.get("machine") or by.get(BEST_M)
    if machine is not None:
        said.append("The machine left none, as it must: it ends green or rolls back to the tree it started from."
                    if machine["broken_trees"] == 0 else
                    "The machine must leave none (it rolls back): this count is a bug to find.")
    tools = by.get("prompt_tools")
    if tools is not None and tools["tests_changed"]:
        said.append(f"The free loop changed test files in {tools['tests_changed']} run(s); "
                    f"{tools['green_but_not_fixed']} of them ended green without counting as fixed — "
                    "the guard the machine has and the loop lacks.")
    oracle = by.get("oracle") or by.get("bare_oracle")
    if oracle is not None:
        ends = next((f for f in failures if f["arm"] == oracle["arm"]), {})
        refused = ends.get("every answer refused", 0) + ends.get("no edit", 0)
        missed = oracle["tasks"] - oracle["tasks_solved"]
        said.append(f"The known fix through the same machine fixed {oracle['tasks_solved']}/{oracle['tasks']}: "
                    + ("the machine can carry a right fix to green; that does not say its prompts and contracts "
                       "suit a small model — only the ablations can say what holds the model back."
                       if missed == 0 else
                       f"on the other {missed} the known fix never got in (the machine's guards refused it, or "
                       "its plan never reached it), so those tasks lie beyond every machine arm: a limit of what "
                       "the machine lets an edit reach, not a fault that turns a right fix red."
                       if ends and refused == sum(ends[k] for k in FAILURES) - ends["fixed"] else
                       "the harness itself fails some tasks; fix that before reading the model's numbers."))
    return " ".join(said)


def summarize(folder: Path | Sequence[Path]) -> dict[str, Any]:
    """Everything the report shows for one recorded folder (one model), or for several folders that recorded
    other arms of the same comparison (an arm added later into a folder of its own, e.g. best of k beside the
    greedy arms): their rows are paired by task as if one folder held them all."""
    folders = [Path(folder)] if isinstance(folder, str | Path) else [Path(f) for f in folder]
    configs = [read_config(f) for f in folders]
    config = configs[0]
    for other, where in zip(configs[1:], folders[1:], strict=True):
        same = ("model", "tasks_file", "split", "call_budget", "max_tokens", "limits")
        if differs := [k for k in same if getattr(other, k) != getattr(config, k)]:
            raise LabkitError(f"{where} is not the same comparison as {folders[0]}: {', '.join(differs)} differ",
                              "report together only folders recorded with the same model, tasks and limits.")
    recorded = [load_rows(f / "runs.jsonl") for f in folders]
    arms_of = [{r.arm for r in rows} for rows in recorded]
    if len(set().union(*arms_of)) < sum(map(len, arms_of)):
        raise LabkitError(f"folders {', '.join(map(str, folders))} record the same arm twice",
                          "report together only folders whose arms differ.")
    rows = [row for rows in recorded for row in rows]
    arms = arm_rows(rows)
    paired = paired_rows(rows)
    failures = failure_rows(rows)
    planned = sum(c.planned() for c in configs)
    return {"model": config.model, "tasks_file": config.tasks_file,
            "split": config.split, "call_budget": config.call_budget, "arms": arms,
            "paired": paired, "ablation": ablation_rows(rows), "failures": failures, "headline": headline(rows),
            "meaning": meaning(arms, paired, failures), "runs": len(rows), "planned": planned}


def ablation_markdown(ablation: Sequence[Mapping[str, Any]]) -> str:
    """The ablation table (:func:`ablation_rows`) as Markdown: one row per feature switched off."""
    lines = markdown_table(("feature switched off", "tasks", "fixed with", "fixed without", "buys", "only with",
                            "only without", "exact sign test p"),
                           [(a["feature"], a["tasks"], a["with"], a["without"], f"{a['buys']:+d}", a["only_with"],
                             a["only_without"], f"{a['p_value']:.3g}") for a in ablation])
    return "\n".join(lines)


def ablation_text(ablation: Sequence[Mapping[str, Any]], alpha: float = 0.05) -> str:
    """The ablation table (:func:`ablation_rows`) in one sentence, computed from its rows."""
    return ablation_sentence(ablation, things="features", bought="fixes", count="tasks", alpha=alpha)


def markdown(summary: Mapping[str, Any], *, meaning: bool = True) -> str:
    """One model's table, its paired tests, the headline and the meaning, as Markdown.

    ``meaning`` off leaves out the closing paragraph (the docs set a benchmark's tables beside their own
    reading of them)."""
    tasks = "" if summary.get("tasks_file", DEFAULT_TASKS) == DEFAULT_TASKS else f"tasks {summary['tasks_file']}, "
    lines = [f"**{summary['model']}** ({tasks}{summary['split']} split, {summary['runs']}/{summary['planned']} runs "
             f"recorded, {summary['call_budget']} model calls per run at most)", "",
             "| arm | fixed (95% CI) | broken trees left | test files changed | test runs | LLM calls | "
             "tokens (prompt + completion) | model s per task |", "|---|---|---|---|---|---|---|---|"]
    for r in summary["arms"]:
        lines.append(f"| {r['label']} | {solved_cell(r)} | {r['broken_trees']} | {r['tests_changed']} | "
                     f"{r['test_runs']} | {r['llm_calls']} | {r['prompt_tokens']} + {r['completion_tokens']} | "
                     f"{r['model_s'] / r['tasks']:.1f} |")
    if any(r["llm_calls"] for r in summary["arms"]):
        lines += ["", "Model seconds are the recording's, live on its machine's CPU; a call answered from an earlier "
                      "recording (`--reuse`) counts at the seconds it took there, so arms compare as if each had "
                      "called the model itself."]
    if summary["paired"]:
        lines += ["", "| measure | A vs B | tasks | only A | only B | tied | exact sign test p |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {p['measure']} | {arm_named(p['a']).label} vs {arm_named(p['b']).label} | {p['tasks']} | "
                  f"{p['a_better']} | {p['b_better']} | {p['ties']} | {p['p_value']:.3g} |" for p in summary["paired"]]
    graded = any(r.get("hidden_graded") for r in summary["arms"])
    if summary.get("failures") and len(summary["arms"]) > 1:
        kinds = [k for k in FAILURES if k != HIDDEN_RED or graded]
        lines += ["", "| arm | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
        lines += [f"| {f['label']} | " + " | ".join(str(f[k]) for k in kinds) + " |" for f in summary["failures"]]
    if graded:
        lines += ["", "Fixed means the benchmark's own tests (the hidden grader, never shown to an arm) pass too. "
                      "Visible tests green but hidden grader red: " +
                      ", ".join(f"{r['label']} {r['visible_green_hidden_red']}/{r['tasks']}" for r in summary["arms"])
                  + "."]
    if summary.get("ablation"):
        lines += ["", ablation_markdown(summary["ablation"]), "", ablation_text(summary["ablation"])]
    if summary["headline"]:
        lines += ["", f"Headline: {summary['headline']}"]
    missing = summary["planned"] - summary["runs"]
    if missing:
        lines += ["", f"Not recorded: {missing} of {summary['planned']} planned runs (the recording stopped; "
                      "the numbers above cover the runs that finished)."]
    if meaning:
        lines += ["", summary["meaning"]]
    return "\n".join(lines) + "\n"


def pass_at_1(folder: Path, arm: str = "prompt_whole") -> dict[str, Any]:
    """An implement recording's pass@1 (one greedy answer per problem, judged by the hidden grader) beside the
    model's published figure, with the runs that failed sorted by how they failed."""
    from labkit.repoedit.humaneval import PUBLISHED_PASS_AT_1

    config = read_config(folder)
    rows = [r for r in load_rows(folder / "runs.jsonl") if r.arm == arm]
    passed = sum(r.fixed for r in rows)
    kinds = [failure_kind(r) for r in rows]
    return {"model": config.model, "arm": arm, "tasks": len(rows), "planned": len(config.tasks()),
            "passed": passed, "ci95": list(wilson_interval(passed, len(rows))) if rows else [0.0, 1.0],
            "published": PUBLISHED_PASS_AT_1.get(config.model),
            "failures": {k: kinds.count(k) for k in FAILURES if k != "fixed" and kinds.count(k)},
            "completion_tokens": sum(r.completion_tokens for r in rows)}


def pass_at_1_text(folder: Path, arm: str = "prompt_whole") -> str:
    """:func:`pass_at_1` in words, the gap to the published figure included (explained by what the runs show)."""
    p = pass_at_1(folder, arm)
    if not p["tasks"]:
        return f"{folder}: no {arm} runs recorded."
    rate, (low, high) = p["passed"] / p["tasks"], p["ci95"]
    text = (f"{p['model']}, {arm_named(arm).label}, one greedy answer per problem: {p['passed']}/{p['tasks']} "
            "HumanEval "
            f"problems pass their own tests, pass@1 {rate:.1%} (95% CI {low:.1%}–{high:.1%})")
    if p["tasks"] < p["planned"]:
        text += f"; {p['planned'] - p['tasks']} of {p['planned']} problems not recorded yet"
    failures = ", ".join(f"{k} {n}" for k, n in p["failures"].items())
    text += f". The runs that failed: {failures or 'none'}."
    if p["published"] is not None:
        gap = (p["published"] - rate) * 100
        text += (f" Published for the full-precision model: {p['published']:.1%}, {abs(gap):.1f} points "
                 f"{'above' if gap > 0 else 'below'} this.")
        if gap > 10:
            text += (" The gap is more than ten points, and these runs differ from the published setting in "
                     "four ways, any of which may cost points: the weights are quantized to 4 bits (Q4_K_M); the "
                     "answer must be the whole file in one fenced block, docstring included, not a completion of "
                     "the function; the answer is capped in tokens; and the prompt is the kit's repair prompt with "
                     "a failing NotImplementedError traceback, not the benchmark's own. The failure counts above "
                     "show how the answers failed; which of the four differences costs how much is not measured "
                     "here.")
    return text


def render_report(folders: Sequence[Path | Sequence[Path]]) -> str:
    """The report of one or more recorded folders (one per model; a list of folders is one report over their
    arms, see :func:`summarize`), as Markdown (notebook, docs/results.md, CLI)."""
    return "\n".join(markdown(summarize(f)) for f in folders)


def models_table(folders: Sequence[Path | Sequence[Path]]) -> str:
    """One compact table over models (docs/results.md): per arm and model, tasks fixed and trees left broken;
    headlines. (A list of folders is one model's comparison, see :func:`summarize`.)"""
    summaries = [summarize(f) for f in folders]
    header = "| arm | " + " | ".join(f"{s['model']}: fixed | broken trees" for s in summaries) + " |"
    lines = [header, "|---|" + "---|---|" * len(summaries)]
    for arm in ARMS:
        cells = []
        for s in summaries:
            row = next((r for r in s["arms"] if r["arm"] == arm), None)
            cells += [solved_cell(row), str(row["broken_trees"])] if row else ["—", "—"]
        if any(c != "—" for c in cells):
            lines.append(f"| {arm_named(arm).label} | " + " | ".join(cells) + " |")
    lines += [""] + [f"- headline ({s['split']} split), {s['model']}: {s['headline']}"
                     for s in summaries if s["headline"]]
    return "\n".join(lines)


def recordings_table(folders: Sequence[Path], root: Path) -> str:
    """The design rounds as data: one row per arm of each recording in ``folders`` (paths under ``root``) with
    its first session's commit, its split, the name it was recorded under, the arm it is today and the round
    that named it (:mod:`labkit.repoedit.history`), and the tasks it fixed."""
    rows = []
    for folder in folders:
        stretches = read_provenance(folder)
        commit = stretches[0].commit[:7] if stretches else "—"
        config = read_config(folder)
        runs = load_rows(folder / "runs.jsonl")
        recorded = json.loads((folder / "compare.json").read_text(encoding="utf-8"))["arms"]
        for name in recorded:
            mine = [r for r in runs if r.arm == today(name)]
            if not mine:
                continue
            old = next((e for e in RENAMED if e.old == name), None)
            rows.append((folder.relative_to(root).as_posix(), commit, config.split, f"`{name}`",
                         f"`{today(name)}`", old.round if old else "—",
                         f"{sum(r.fixed for r in mine)}/{len(mine)}"))
    return "\n".join(markdown_table(("recording", "commit", "split", "recorded as", "arm today", "round",
                                     "fixed"), rows))
