"""Write the comparison tables from the committed recordings into the files that hold their markers.

Blocks: the comparison v2 (data/experiment-v2/<model>/summary.json), the code comparison
(data/repoedit/compare/<model>/), the code comparison with the machine's features and their ablation
(data/repoedit/compare-plus/<model>/), the HumanEval recordings (data/repoedit/humaneval-<kind>/<model>/),
the dialog recordings (data/dialog/runs/<model>/, data/dialog/runs_test/<model>/) and the dialog ablation
(data/dialog/runs_dev/), and every code recording arm by arm (its round and commit). TABLES declares, per
block, its markers and the file they live in (docs/results.md, which README.md links to; the front page's code
and dialog lines in README.md).

Run it after a new recording; tests/test_readme_comparison.py fails while a file shows another table.
"""

from __future__ import annotations

import json
from pathlib import Path

from labkit.reading.report import models_table

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("gemma3-270m", "qwen2.5-coder-1.5b")
BEGIN, END = "<!-- comparison-table: begin -->", "<!-- comparison-table: end -->"
CODE_BEGIN, CODE_END = "<!-- code-comparison-table: begin -->", "<!-- code-comparison-table: end -->"
PLUS_BEGIN, PLUS_END = "<!-- code-plus-table: begin -->", "<!-- code-plus-table: end -->"
BENCH_BEGIN, BENCH_END = "<!-- humaneval-table: begin -->", "<!-- humaneval-table: end -->"
DIALOG_BEGIN, DIALOG_END = "<!-- dialog-table: begin -->", "<!-- dialog-table: end -->"
HEADLINE_BEGIN, HEADLINE_END = "<!-- dialog-headline: begin -->", "<!-- dialog-headline: end -->"
ABLATION_BEGIN, ABLATION_END = "<!-- dialog-ablation: begin -->", "<!-- dialog-ablation: end -->"
CODE_HEADLINE_BEGIN, CODE_HEADLINE_END = "<!-- code-headline: begin -->", "<!-- code-headline: end -->"
ROUNDS_BEGIN, ROUNDS_END = "<!-- dialog-rounds: begin -->", "<!-- dialog-rounds: end -->"
CODE_ROUNDS_BEGIN, CODE_ROUNDS_END = "<!-- code-rounds: begin -->", "<!-- code-rounds: end -->"


def recorded_summaries(root: Path = ROOT) -> dict[str, dict]:
    folder = root / "data" / "experiment-v2"
    return {m: json.loads((folder / m / "summary.json").read_text(encoding="utf-8"))
            for m in MODELS if (folder / m / "summary.json").exists()}


def table_block(root: Path = ROOT) -> str:
    return models_table(recorded_summaries(root)).strip()


def code_folders(root: Path = ROOT) -> list[Path]:
    folder = root / "data" / "repoedit" / "compare"
    return [folder / m for m in MODELS if (folder / m / "runs.jsonl").exists()]


def code_table_block(root: Path = ROOT) -> str:
    from labkit.repoedit.compare_report import models_table as code_models_table

    return code_models_table(code_folders(root)).strip()


def plus_folders(root: Path = ROOT) -> list[Path]:
    folder = root / "data" / "repoedit" / "compare-plus"
    return [folder / m for m in MODELS if (folder / m / "runs.jsonl").exists()]


def plus_table_block(root: Path = ROOT) -> str:
    """The arms table over models, then each model's ablation table (what each feature buys)."""
    from labkit.repoedit.compare_report import ablation_markdown, ablation_text, summarize
    from labkit.repoedit.compare_report import models_table as code_models_table

    parts = [code_models_table([with_later_arms(f) for f in plus_folders(root)]).strip()]
    for folder in plus_folders(root):
        summary = summarize(folder)
        if summary["ablation"]:
            parts.append(f"Ablation, {summary['model']} ({summary['runs']}/{summary['planned']} runs recorded):\n\n"
                         + ablation_markdown(summary["ablation"]) + "\n\n" + ablation_text(summary["ablation"]))
    return "\n\n".join(parts)


BENCHMARKS = ("humaneval-fix", "pypi-seeded", "humaneval-implement")
"""The benchmark recordings, ``data/repoedit/<name>/<model>``: HumanEval's fix tasks, the seeded bugs in real
packages, HumanEval's implement tasks."""


def bench_folders(root: Path = ROOT) -> list[Path]:
    """The recorded benchmark comparisons, in :data:`BENCHMARKS` order."""
    return [folder / m for name in BENCHMARKS for m in MODELS
            if ((folder := root / "data" / "repoedit" / name) / m / "runs.jsonl").exists()]


LATER_ARMS = ("best-of", "ablation")
"""Folders that recorded further arms of a comparison beside it: ``<kind>-<suffix>/<model>`` (best of k; the
ablation arms, recorded after the greedy arms and answered from their cassettes where the request is the same)."""


def with_later_arms(folder: Path) -> list[Path]:
    """``folder`` and the recordings of arms added later to the same comparison (:data:`LATER_ARMS`)."""
    later = [folder.parent.with_name(f"{folder.parent.name}-{suffix}") / folder.name for suffix in LATER_ARMS]
    return [folder, *(f for f in later if (f / "runs.jsonl").exists())]


def bench_table_block(root: Path = ROOT) -> str:
    """Per HumanEval recording: its arms table and paired tests, the hidden grader's line; pass@1 for implement."""
    from labkit.repoedit.compare_report import markdown, pass_at_1_text, summarize

    parts = []
    for folder in bench_folders(root):
        if folder.parent.name == "humaneval-implement":
            parts.append(f"Implement tasks: {pass_at_1_text(folder)}")
            continue
        head, rest = markdown(summarize(with_later_arms(folder)), meaning=False).split("\n\n", 1)
        parts.append(head.replace("**", "", 2) + ":\n\n" + rest.strip())
    return "\n\n".join(parts)


def dialog_folders(root: Path = ROOT) -> dict[str, Path]:
    """The dialog recordings, labelled: the first one (22 users, both splits), the test users' and the dev users'
    (the ablation, recorded in stretches: its n column says how many dev users each arm holds so far), and the
    dev users' recording of each design round (``<model>-next…``, labelled as its
    :data:`labkit.dialog.history.ROUNDS` entry says)."""
    from labkit.dialog.history import ROUNDS

    data = root / "data" / "dialog"
    found = {}
    for label, sub, suffix in (("first, 22 users", "runs", ""), ("test users", "runs_test", ""),
                               ("dev users", "runs_dev", ""),
                               *((f"dev users, {r.label}", "runs_dev", r.suffix) for r in ROUNDS)):
        for model in MODELS:
            if (data / sub / f"{model}{suffix}" / "dialog.json").exists():
                found[f"{label} ({model})"] = data / sub / f"{model}{suffix}"
    return found


def dialog_table_block(root: Path = ROOT) -> str:
    from labkit.dialog.rescore import recordings_table
    from labkit.dialog.simulate import load_scenarios
    from labkit.dialog.users import load_user_scripts

    data = root / "data" / "dialog"
    table = recordings_table(dialog_folders(root), load_scenarios(data), load_user_scripts(data / "users"))
    return table.replace(" (gemma3-270m) |", " |").replace(" (qwen2.5-coder-1.5b) |", " |")


def dialog_ablation_block(root: Path = ROOT) -> str:
    """What each dialog feature buys on the dev users (the 1.5B model's ablation and design rounds)."""
    from labkit.dialog.ablation import ablation_summary, ablation_table, dev_ablation
    from labkit.dialog.simulate import load_scenarios
    from labkit.dialog.users import load_user_scripts

    data = root / "data" / "dialog"
    rows = dev_ablation(data, "qwen2.5-coder-1.5b", load_scenarios(data), load_user_scripts(data / "users"))
    return ablation_table(rows) + "\n\n" + ablation_summary(rows)


def dialog_rounds_block(root: Path = ROOT) -> str:
    """The arms the dialog recordings were made under, by their recorded names (:mod:`labkit.dialog.history`)."""
    del root
    from labkit.dialog.history import rounds_table

    return rounds_table()


def dialog_headline_block(root: Path = ROOT) -> str:
    """The front page's dialog lines: each model's test recording, its headline pair
    (:func:`labkit.dialog.rescore.headline`); then the last design round (:data:`labkit.dialog.history.ROUNDS`)
    recorded on the test users, against prompt_only_checked, under the name of today's arm with its features."""
    from labkit.dialog.comparison import read_config
    from labkit.dialog.history import ROUNDS, content_name, label
    from labkit.dialog.rescore import headline
    from labkit.dialog.simulate import load_scenarios
    from labkit.dialog.users import load_user_scripts

    data = root / "data" / "dialog"
    scenarios, users = load_scenarios(data), load_user_scripts(data / "users")
    tested = [folder for label, folder in dialog_folders(root).items() if label.startswith("test users")]
    lines = [headline(folder, scenarios, users) for folder in tested]
    rounds = []
    for folder in tested:
        recorded = [r.name for r in ROUNDS if r.name in read_config(folder).arms]
        if recorded:
            rounds.append(headline(folder, scenarios, users, (recorded[-1], "prompt_only_checked"),
                                   shown=lambda arm: content_name(arm) or label(arm)))
    text = "; ".join(lines) + "."
    if rounds:
        text += ("\nThe last design round recorded on the test users (features designed on the dev users after the "
                 "test recording): " + "; ".join(rounds) + ".")
    return text


def code_headline_block(root: Path = ROOT) -> str:
    """The front page's code lines: each recording on the kit's projects and the benchmarks' fix tasks in the seed's
    form (one prompt → the machine), the free loop where the recording holds it, and the equal-compute baseline
    where it or a later recording beside it holds one."""
    from labkit.repoedit.arms import arm as arm_named
    from labkit.repoedit.compare_report import equal_compute_text, seed_form_text, summarize

    folders = plus_folders(root) + [f for f in bench_folders(root) if f.parent.name != "humaneval-implement"]
    lines = []
    for folder in folders:
        line = "  - " + seed_form_text(folder)  # a list inside the front page's "Editing code" item
        loop = next((r for r in summarize(folder)["arms"] if r["arm"] == "prompt_tools"), None)
        if loop is not None:
            line += (f" {arm_named('prompt_tools').label.capitalize()}: {loop['tasks_solved']}/{loop['tasks']}, "
                     f"trees left with a test broken: {loop['broken_trees']}.")
        equal = equal_compute_text(with_later_arms(folder))
        lines.append(line + (f" {equal}" if equal else ""))
    return "\n".join(lines)


def code_rounds_block(root: Path = ROOT) -> str:
    """Every committed code recording, arm by arm: its commit, the name it was recorded under, today's arm."""
    from labkit.repoedit.compare_report import recordings_table

    folders = sorted(f.parent for f in (root / "data" / "repoedit").glob("*/*/compare.json"))
    return recordings_table(folders, root)


def replaced(text: str, begin: str, end: str, block: str) -> str:
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{block}\n{end}{tail}"


# Each generated block: its markers, the file they live in (relative to the repository) and what fills them.
TABLES = (
    (BEGIN, END, "docs/results.md", table_block),
    (CODE_BEGIN, CODE_END, "docs/results.md", code_table_block),
    (PLUS_BEGIN, PLUS_END, "docs/results.md", plus_table_block),
    (DIALOG_BEGIN, DIALOG_END, "docs/results.md", dialog_table_block),
    (ABLATION_BEGIN, ABLATION_END, "docs/results.md", dialog_ablation_block),
    (ROUNDS_BEGIN, ROUNDS_END, "docs/results.md", dialog_rounds_block),
    (BENCH_BEGIN, BENCH_END, "docs/results.md", bench_table_block),
    (HEADLINE_BEGIN, HEADLINE_END, "README.md", dialog_headline_block),
    (CODE_HEADLINE_BEGIN, CODE_HEADLINE_END, "README.md", code_headline_block),
    (CODE_ROUNDS_BEGIN, CODE_ROUNDS_END, "docs/results.md", code_rounds_block),
)


def target(begin: str, root: Path = ROOT) -> Path:
    """The file that holds the block opened by `begin`."""
    (name,) = [file for b, _, file, _ in TABLES if b == begin]
    return root / name


def shown(begin: str, end: str, root: Path = ROOT) -> str | None:
    """The block between the markers as the file shows it, or None when the file lost its markers."""
    text = target(begin, root).read_text(encoding="utf-8")
    if begin not in text or end not in text:
        return None
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def main() -> None:
    texts: dict[Path, str] = {}
    for begin, end, _, block in TABLES:
        path = target(begin)
        text = texts[path] if path in texts else path.read_text(encoding="utf-8")
        texts[path] = replaced(text, begin, end, block())
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    files = ", ".join(str(path.relative_to(ROOT)) for path in texts)
    print(f"wrote the comparison tables of {', '.join(recorded_summaries())} into {files}")


if __name__ == "__main__":
    main()
