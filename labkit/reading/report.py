"""The report: per arm and split, successes with Wilson intervals and pass^k over tasks; exact sign tests
for 4 vs 1, 4 vs 5 and 5 vs 1; the headline "prompt-only x/10 → machine y/10" on test."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from labkit.compare.stats import paired_test, pass_hat_k, solved_cell, stored_p, wilson_interval
from labkit.reading.arms import ARMS, ReadingRun
from labkit.reading.taskfile import TaskSet

CONTENT_FAMILIES = ("triage", "extraction", "selection")
# (a, b, on which families, what the difference means)
COMPARISONS = (
    ("machine-model", "prompt-only", None, "machine + model vs prompt-only"),
    ("machine-model", "machine-rule", CONTENT_FAMILIES, "the model's share (content families)"),
    ("machine-rule", "prompt-only", None, "the harness's share"),
)

Runs = Sequence[tuple[str, ReadingRun]]


def per_task(runs: Runs, split: str, arm: str, families: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
    """{task: (successes, runs)} of one arm on one split (optionally only some families)."""
    counts: dict[str, tuple[int, int]] = {}
    for s, r in runs:
        if s == split and r.arm == arm and (families is None or r.family in families):
            c, n = counts.get(r.task, (0, 0))
            counts[r.task] = (c + int(r.passed), n + 1)
    return counts


def solved(counts: Mapping[str, tuple[int, int]]) -> int:
    """Tasks passed on at least half of their seeds."""
    return sum(1 for c, n in counts.values() if 2 * c >= n and n > 0)


def summary_rows(runs: Runs, arms: Sequence[str], splits: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (split, arm) with successes, interval, pass^k, calls, re-asks and per-family solved."""
    rows = []
    for split in splits:
        for arm in arms:
            mine = [r for s, r in runs if s == split and r.arm == arm]
            if not mine:
                continue
            counts = per_task(runs, split, arm)
            k_max = min(n for _, n in counts.values())
            tasks_solved = solved(counts)
            decisions = sum(r.decisions for r in mine)
            calls = sum(r.llm_calls for r in mine)
            families: dict[str, str] = {}
            for family in sorted({r.family for r in mine}):
                fam = per_task(runs, split, arm, (family,))
                families[family] = f"{solved(fam)}/{len(fam)}"
            rows.append({
                "split": split, "arm": arm, "label": ARMS[arm].label if arm in ARMS else arm,
                "tasks": len(counts), "runs": len(mine), "successes": sum(r.passed for r in mine),
                "tasks_solved": tasks_solved, "ci95": list(wilson_interval(tasks_solved, len(counts))),
                "pass_k": [round(pass_hat_k(counts, k), 4) for k in range(1, k_max + 1)],
                "families": families, "llm_calls": calls, "decisions": decisions,
                "calls_per_decision": round(calls / decisions, 3) if decisions else 0.0,
                "reasks": sum(r.reasks for r in mine), "schema_invalid": sum(r.schema_invalid for r in mine),
                "guard_rejections": sum(r.guard_rejections for r in mine),
                "prompt_tokens": sum(r.prompt_tokens for r in mine),
                "completion_tokens": sum(r.completion_tokens for r in mine),
                "backend_errors": sum(r.termination.startswith("backend error") for r in mine),
                "http_retries": sum(r.http_retries for r in mine),
                "wall_s": round(sum(r.wall_s for r in mine), 1)})
    return rows


def paired_rows(runs: Runs, splits: Sequence[str]) -> list[dict[str, Any]]:
    """The paired exact sign tests of :data:`COMPARISONS` on each split (where both arms ran)."""
    rows = []
    for split in splits:
        for a, b, families, meaning in COMPARISONS:
            ca, cb = per_task(runs, split, a, families), per_task(runs, split, b, families)
            if not ca or set(ca) != set(cb):
                continue
            test = paired_test(ca, cb, names=(a, b))
            rows.append({"split": split, "a": a, "b": b, "families": list(families or ("all",)),
                         "meaning": meaning, "tasks": test.tasks, "a_better": test.a_better,
                         "b_better": test.b_better, "ties": test.ties, "p_value": stored_p(test.p_value)})
    return rows


def headline_counts(runs: Runs, test_set: TaskSet, lower: str = "prompt-only",
                    upper: str = "machine-model") -> dict[str, Any] | None:
    """The seed's form as numbers, on the test split's headline set: tasks solved by each arm, the tasks, and the
    paired exact sign test of ``upper`` against ``lower`` over them (None if either arm lacks a headline task)."""
    ids = set(test_set.headline)
    counts = {}
    for arm in (lower, upper):
        counts[arm] = {t: v for t, v in per_task(runs, "test", arm).items() if t in ids}
        if set(counts[arm]) != ids:
            return None
    test = paired_test(counts[upper], counts[lower], names=(upper, lower))
    return {"lower": lower, "upper": upper, "tasks": len(ids), "lower_solved": solved(counts[lower]),
            "upper_solved": solved(counts[upper]), "upper_better": test.a_better, "lower_better": test.b_better,
            "p_value": test.p_value}


def headline(runs: Runs, test_set: TaskSet, lower: str = "prompt-only", upper: str = "machine-model") -> str | None:
    """"prompt-only x/10 → machine y/10" on the test split's headline set (None if either arm lacks it)."""
    got = headline_counts(runs, test_set, lower, upper)
    if got is None:
        return None
    n = got["tasks"]
    return f"{lower} {got['lower_solved']}/{n} → {upper.replace('-model', '')} {got['upper_solved']}/{n}"


def row_of(summary: Mapping[str, Any], split: str, arm: str) -> Mapping[str, Any]:
    """The summary row of one arm on one split (KeyError naming both if the summary has none)."""
    for r in summary["rows"]:
        if r["split"] == split and r["arm"] == arm:
            return r
    raise KeyError(f"no row for arm {arm!r} on split {split!r}")


def paired_of(summary: Mapping[str, Any], split: str, a: str, b: str) -> Mapping[str, Any]:
    """The paired test of arm ``a`` against arm ``b`` on one split, as the summary holds it (see
    :data:`COMPARISONS`; KeyError if the summary has no such comparison)."""
    for p in summary["paired"]:
        if p["split"] == split and p["a"] == a and p["b"] == b:
            return p
    raise KeyError(f"no paired test of {a!r} against {b!r} on split {split!r}")


def split_text(p: Mapping[str, Any]) -> str:
    """A paired test in words: "12 to 0 (28 tied), p = 0.00049" — tasks only A solved, only B solved, and the
    exact sign test's p."""
    return f"{p['a_better']} to {p['b_better']} ({p['ties']} tied), p = {p['p_value']:.2g}"


def markdown(rows: Sequence[Mapping[str, Any]], paired: Sequence[Mapping[str, Any]], head: str | None) -> str:
    out = ["| split | arm | tasks solved | 95% CI | runs passed | pass^k | per family | LLM calls | calls/decision "
           "| re-asks | schema-invalid | guard rejections |", "|" + "---|" * 12]
    for r in rows:
        fams = ", ".join(f"{f} {v}" for f, v in r["families"].items())
        out.append(f"| {r['split']} | {r['label']} | {r['tasks_solved']}/{r['tasks']} | "
                   f"{r['ci95'][0]:.2f}–{r['ci95'][1]:.2f} | {r['successes']}/{r['runs']} | "
                   f"{' '.join(f'{v:.2f}' for v in r['pass_k'])} | {fams} | {r['llm_calls']} | "
                   f"{r['calls_per_decision']} | {r['reasks']} | {r['schema_invalid']} | {r['guard_rejections']} |")
    retried = [r for r in rows if r.get("http_retries")]
    if retried:  # only a server has HTTP retries; a table of zeros would hide the rows that had some
        out += ["", "HTTP retries (requests re-sent to the server, barrier requests included): " +
                ", ".join(f"{r['split']} {r['label']} {r['http_retries']}" for r in retried)]
    if paired:
        out += ["", "| split | comparison | tasks | A better | B better | tied | exact sign test p |", "|" + "---|" * 7]
        out += [f"| {p['split']} | {p['a']} vs {p['b']} ({p['meaning']}) | {p['tasks']} | {p['a_better']} | "
                f"{p['b_better']} | {p['ties']} | {p['p_value']:.4g} |" for p in paired]
    if head:
        out += ["", f"Headline (test, 10 tasks): {head}"]
    return "\n".join(out) + "\n"


def arm_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Tasks solved per arm (rows) and split (columns) with Wilson 95% intervals, calls and re-asks, as Markdown."""
    splits = list(dict.fromkeys(r["split"] for r in rows))
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    lines = ["| arm | " + " | ".join(f"{s}: solved (95% CI)" for s in splits) + " | LLM calls | re-asks |",
             "|---" * (len(splits) + 3) + "|"]
    for arm in arms:
        mine = {r["split"]: r for r in rows if r["arm"] == arm}
        cells = [solved_cell(mine[s]) if s in mine else "—" for s in splits]
        label = next(iter(mine.values()))["label"]
        lines.append(f"| {label} | {' | '.join(cells)} | {sum(r['llm_calls'] for r in mine.values())} | "
                     f"{sum(r['reasks'] for r in mine.values())} |")
    return "\n".join(lines) + "\n"


def models_table(summaries: Mapping[str, Mapping[str, Any]]) -> str:
    """Tasks solved per arm, a column per (model, split), with Wilson 95% intervals, then each headline
    (docs/results.md's table, kept equal by a test)."""
    columns = [(m, s) for m, summary in summaries.items()
               for s in dict.fromkeys(r["split"] for r in summary["rows"])]
    cells = {(m, r["split"], r["arm"]): r for m, summary in summaries.items() for r in summary["rows"]}
    arms = list(dict.fromkeys(r["arm"] for summary in summaries.values() for r in summary["rows"]))
    lines = ["| arm | " + " | ".join(f"{m}, {s}" for m, s in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for arm in arms:
        row = []
        for m, s in columns:
            r = cells.get((m, s, arm))
            row.append("—" if r is None else solved_cell(r))
        label = next(cells[(m, s, arm)]["label"] for m, s in columns if (m, s, arm) in cells)
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    lines.append("")
    lines += [f"- headline (test, 10 tasks), {m}: {summary['headline']}" for m, summary in summaries.items()
              if summary.get("headline")]
    return "\n".join(lines) + "\n"


def ladder_plot(rows: Sequence[Mapping[str, Any]], title: str = "") -> Any:
    """Tasks solved per arm with Wilson 95% intervals, one panel per split, every arm that ran (no overplotting:
    arms sit side by side on their own row). Returns the figure."""
    import matplotlib.pyplot as plt

    splits = list(dict.fromkeys(r["split"] for r in rows))
    fig, axes = plt.subplots(1, len(splits), figsize=(5.2 * len(splits), 3.6), sharey=True, squeeze=False)
    for ax, split in zip(axes[0], splits, strict=True):
        mine = [r for r in rows if r["split"] == split]
        ys = list(range(len(mine)))[::-1]
        rates = [r["tasks_solved"] / r["tasks"] for r in mine]
        low = [rate - r["ci95"][0] for rate, r in zip(rates, mine, strict=True)]
        high = [r["ci95"][1] - rate for rate, r in zip(rates, mine, strict=True)]
        ax.errorbar(rates, ys, xerr=[low, high], fmt="o", capsize=4)
        for y, rate, r in zip(ys, rates, mine, strict=True):
            ax.annotate(f"{r['tasks_solved']}/{r['tasks']}", (rate, y), textcoords="offset points", xytext=(6, 5),
                        fontsize=8)
        ax.set_yticks(ys, [r["label"] for r in mine])
        ax.set_xlim(-0.02, 1.08)
        ax.set_xlabel("tasks solved (Wilson 95% interval)")
        ax.set_title(f"{title}{' — ' if title else ''}{split} split", fontsize=10)
    fig.tight_layout()
    return fig


def plot_ladder(rows: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """:func:`ladder_plot` saved as a PNG (the report's ``ladder.png``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = ladder_plot(rows)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# What each rung changes from the one above it (the picture of the ladder reads it; arm 1 is the start).
RUNG_CHANGES: dict[str, str] = {
    "prompt-grammar": "+ JSON grammar on the answer",
    "prompt-helpers": "+ code helpers write the draft",
    "machine-model": "+ the machine: one decision per prompt, menu, validator, re-ask",
    "machine-rule": "model \u2192 keyword/regex rule written on dev",
    "machine-random": "rule \u2192 seeded random pick",
    "machine-oracle": "random \u2192 the task's own answer",
}


def ladder_figure(arms: Mapping[str, Any] = ARMS) -> Any:
    """The ladder of arms as a picture: one box per arm (what decides in it), the change to the next rung beside
    each step down, and the two shares the comparison reads off it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    rungs = list(arms.values())
    fig, ax = plt.subplots(figsize=(10.5, 0.78 * len(rungs) + 0.6))
    ax.set_xlim(0, 10.5)
    ax.set_ylim(-0.6, len(rungs) - 0.2)
    ax.axis("off")
    for i, arm in enumerate(rungs):
        y = len(rungs) - 1 - i
        colour = "#dbe9f6" if arm.shape.name == "free loop" else "#e4f2dc" if arm.uses_model else "#eeeeee"
        ax.add_patch(FancyBboxPatch((0.1, y - 0.32), 4.6, 0.64, boxstyle="round,pad=0.02", fc=colour, ec="#555"))
        ax.text(0.25, y + 0.08, arm.label, fontsize=10, weight="bold", va="center")
        ax.text(0.25, y - 0.16, f"{arm.shape.name}; model: {'yes' if arm.uses_model else 'no'}", fontsize=8,
                va="center", color="#333")
        if i:
            ax.annotate("", (2.4, y + 0.33), (2.4, y + 0.67), arrowprops={"arrowstyle": "->", "color": "#777"})
            ax.text(4.95, y + 0.5, RUNG_CHANGES.get(arm.name, ""), fontsize=8.5, va="center", style="italic")
    ax.text(4.95, -0.45, "model's share = arm 4 \u2212 arm 5 (content families)   harness's share = arm 5 \u2212 arm 1",
            fontsize=9, weight="bold")
    ax.set_title("The ladder of arms: each rung changes one thing (blue: one prompt; green: machine + model; "
                 "grey: no model)", fontsize=9.5)
    fig.tight_layout()
    return fig


def write_report(out: Path, runs: Runs, arms: Sequence[str], splits: Sequence[str], test_set: TaskSet,
                 provenance: Mapping[str, Any], *, plots: bool = True) -> dict[str, Any]:
    """Write ``summary.json``, ``summary.md``, ``provenance.json`` and ``ladder.png``; return the summary."""
    rows = summary_rows(runs, arms, splits)
    paired = paired_rows(runs, splits)
    head = headline(runs, test_set) if "test" in splits else None
    summary = {"rows": rows, "paired": paired, "headline": head,
               "unit": "task; a task is solved when it passed on at least half of its seeds"}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(markdown(rows, paired, head), encoding="utf-8")
    (out / "provenance.json").write_text(json.dumps(dict(provenance), indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    if plots and rows:
        plot_ladder(rows, out / "ladder.png")
    return summary


def counts_only(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The summary without wall-clock times: what a replay must reproduce exactly."""
    return {**summary, "rows": [{k: v for k, v in r.items() if k != "wall_s"} for r in summary["rows"]]}
