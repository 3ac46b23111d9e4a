"""The experiment's outputs: a Markdown table, CSV files, two plots, and the provenance of the numbers.

Why provenance beside every table: a number is only worth as much as the knowledge of where it came
from — which model file (sha256), which llama-cpp-python, which decoding parameters, which machine,
which labkit commit, live or replayed.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from labkit.experiment.arms import ARMS, RunRecord
from labkit.provenance import git_commit, machine


def provenance(backend: Mapping[str, Any], config: Mapping[str, Any], *, mode: str) -> dict[str, Any]:
    """Where the numbers come from (the backend's own description plus the run's settings)."""
    return {"mode": mode, "backend": dict(backend), "decoding": dict(config.get("decoding", {})),
            "seeds": list(config.get("seeds", [])), "arms": list(config.get("arms", [])),
            "machine": machine(), "labkit_commit": git_commit(),
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _passk(row: Mapping[str, Any]) -> str:
    return " ".join(f"{v:.2f}" for v in row["pass_k"])


def _top(counter: Mapping[str, int], n: int = 3) -> str:
    items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return "; ".join(f"{k} {v}" for k, v in items) or "-"


TABLE_HEADERS = ("arm", "success", "pass^k (k=1…n)", "LLM calls", "prompt tok", "completion tok",
                 "retries", "guard rejections", "schema-invalid", "wall s", "terminations", "failure sources")


def table_rows(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [[ARMS[r["arm"]].label if r["arm"] in ARMS else r["arm"], r["success"], _passk(r),
             str(r["llm_calls"]), str(r["prompt_tokens"]), str(r["completion_tokens"]),
             f"{r['retries']}+{r['http_retries']} http", str(r["guard_rejections"]), str(r["schema_invalid"]),
             f"{r['wall_s']:.0f}", _top(r["terminations"]), _top(r["failure_sources"])] for r in rows]


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    out = ["| " + " | ".join(TABLE_HEADERS) + " |", "|" + "---|" * len(TABLE_HEADERS)]
    out += ["| " + " | ".join(cells) + " |" for cells in table_rows(rows)]
    return "\n".join(out)


def text_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The summary for a terminal: the counts that matter, aligned."""
    headers = TABLE_HEADERS[:10]
    cells = [list(headers)] + [r[:10] for r in table_rows(rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                   strict=True))))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _describe_backend(b: Mapping[str, Any]) -> str:
    parts = [f"{k}={b[k]}" for k in ("backend", "recorded_backend", "model", "model_sha256", "llama_cpp_python",
                                     "n_threads", "server") if b.get(k) is not None]
    return ", ".join(parts)


def markdown(rows: Sequence[Mapping[str, Any]], prov: Mapping[str, Any], wall_s: float | None) -> str:
    d = prov.get("decoding", {})
    lines = ["# Small-model comparison", "", markdown_table(rows), "",
             "pass^k = mean over tasks of C(c,k)/C(n,k) (c successes of n seeds). Retries: harness retries "
             "(replans, re-executions, status queries; in the free loop, steps after a failed one) + HTTP retries.",
             "", "## Provenance", "",
             f"- mode: {prov.get('mode')}",
             f"- backend: {_describe_backend(prov.get('backend', {}))}",
             f"- sampling: {prov.get('backend', {}).get('sampling')}",
             f"- decoding: temperature {d.get('temperature')}, max_tokens {d.get('max_tokens_whole')} "
             f"(whole-task prompt) / {d.get('max_tokens_step')} (per-decision prompt), call seed = seed*1000+step",
             f"- seeds: {prov.get('seeds')}; arms: {', '.join(prov.get('arms', []))}",
             f"- machine: {prov.get('machine')}",
             f"- labkit commit: {prov.get('labkit_commit')}; started {prov.get('started_utc')}"]
    for note in prov.get("regraded", []):
        lines.append(f"- re-graded by {note.get('by')} at labkit commit {note.get('labkit_commit')} on "
                     f"{note.get('at_utc')}: kept from the recording: {note.get('kept_from_the_recording')}; "
                     f"from the replay: {note.get('from_the_replay')}")
    if wall_s is not None:
        lines.append(f"- wall time of the whole experiment: {wall_s:.0f} s")
    return "\n".join(lines) + "\n"


def write_csv(path: Path, dicts: Sequence[Mapping[str, Any]]) -> None:
    if not dicts:
        path.write_text("", encoding="utf-8")
        return
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(dicts[0]))
        writer.writeheader()
        for row in dicts:
            writer.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in row.items()})


def plot(rows: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    """``success_passk.png`` (success rate and pass^k per arm) and ``failures.png`` (failure sources)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [ARMS[r["arm"]].label if r["arm"] in ARMS else r["arm"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    rates = [r["successes"] / r["runs"] for r in rows]
    ax1.barh(labels, rates, color="tab:blue")
    ax1.set_xlim(0, 1)
    ax1.invert_yaxis()
    ax1.set_xlabel("verified success rate (all runs)")
    for y, r in enumerate(rows):
        ax1.text(min(rates[y] + 0.02, 0.85), y, r["success"], va="center")
    for r, label in zip(rows, labels, strict=True):
        ks = list(range(1, len(r["pass_k"]) + 1))
        ax2.plot(ks, r["pass_k"], marker="o", label=label)
    ax2.set_xticks(range(1, max((len(r["pass_k"]) for r in rows), default=1) + 1))
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_xlabel("k")
    ax2.set_ylabel("pass^k")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    first = out / "success_passk.png"
    fig.savefig(first, dpi=90)
    plt.close(fig)

    sources = sorted({s for r in rows for s in r["failure_sources"]})
    fig, ax = plt.subplots(figsize=(9, 3.8))
    left = [0.0] * len(rows)
    for source in sources:
        values = [r["failure_sources"].get(source, 0) for r in rows]
        ax.barh(labels, values, left=left, label=source)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("failed runs, by the first check that failed")
    if sources:
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    second = out / "failures.png"
    fig.savefig(second, dpi=90)
    plt.close(fig)
    return [first, second]


def write_outputs(out: Path, records: Sequence[RunRecord], rows: Sequence[Mapping[str, Any]],
                  prov: Mapping[str, Any], *, wall_s: float | None, plots: bool = True,
                  partial: bool = False) -> list[Path]:
    """Write summary.{json,csv,md}, runs.csv, provenance.json and the plots into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    summary = {"rows": list(rows), "provenance": dict(prov), "wall_s": wall_s, "partial": partial,
               "runs": len(records)}
    files = [out / "summary.json", out / "summary.csv", out / "summary.md", out / "runs.csv",
             out / "provenance.json", out / "runs.jsonl"]
    files[0].write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    write_csv(files[1], [{k: v for k, v in r.items()} for r in rows])
    files[2].write_text(markdown(rows, prov, wall_s) + ("\n(partial: the experiment was stopped)\n" if partial
                                                        else ""), encoding="utf-8")
    write_csv(files[3], [{k: v for k, v in r.to_dict().items() if k not in ("trace", "outputs")} for r in records])
    files[4].write_text(json.dumps(dict(prov), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if plots and rows:
        files += plot(rows, out)
    return files
