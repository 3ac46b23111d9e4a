"""What each feature of the dialog machine buys: the declared ablation pairs, scored and paired by user.

Each row is one :class:`~labkit.dialog.arms.Ablation` (an arm with and without one feature or rule): the users
each arm adhered on among those both ran, those only one adhered on, the exact sign test, and how the five
parts of the measure moved. A pair is read from the first recording given that holds both arms: one
recording ran both on the same users, code and model, which makes the pairing fair. The arms of
:data:`~labkit.dialog.history.ROUNDS`, each the one before plus one feature, are also read in order
(:func:`round_rows`), so a lesson shows each by the feature it added.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from labkit.compare.features import ablation_sentence
from labkit.dialog import history
from labkit.dialog.arms import ABLATIONS, Ablation
from labkit.dialog.measure import PARTS, Score, compare_arms
from labkit.dialog.rescore import score_folder
from labkit.dialog.scenario import Scenario
from labkit.dialog.users import UserScript


def _pair_row(ablation: Ablation, with_by: Mapping[str, Score], without_by: Mapping[str, Score],
              users: Sequence[str]) -> dict[str, Any]:
    """The ablation's row over ``users`` (each scored by both arms)."""
    tests = compare_arms([with_by[u] for u in users], [without_by[u] for u in users])
    adhered = tests["adhered"]
    with_n, without_n = (sum(by[u].adhered for u in users) for by in (with_by, without_by))
    return {"feature": ablation.feature, "with_arm": ablation.with_arm, "without_arm": ablation.without_arm,
            "users": len(users), "with": with_n, "without": without_n, "buys": with_n - without_n,
            "only_with": adhered.a_better, "only_without": adhered.b_better, "p_value": adhered.p_value,
            # per user a part is passed or not, so the difference of the counts is wins minus losses
            "parts": {part: tests[part].a_better - tests[part].b_better for part in PARTS}}


def _pairs(recordings: Sequence[Mapping[str, Sequence[Score]]]
           ) -> list[tuple[Ablation, dict[str, Score], dict[str, Score], list[str]]]:
    """Every declared ablation (today's arms, then the recorded pairs of :mod:`labkit.dialog.history`) with its two
    arms' scores by user from the first recording that holds both, and the users both ran."""
    found = []
    for ablation in (*ABLATIONS, *(Ablation(*pair) for pair in history.ABLATIONS)):
        recording = next((r for r in recordings if ablation.with_arm in r and ablation.without_arm in r), None)
        if recording is None:
            continue
        with_by = {s.user: s for s in recording[ablation.with_arm]}
        without_by = {s.user: s for s in recording[ablation.without_arm]}
        users = sorted(set(with_by) & set(without_by))
        if users:
            found.append((ablation, with_by, without_by, users))
    return found


def ablation_rows(recordings: Sequence[Mapping[str, Sequence[Score]]]) -> list[dict[str, Any]]:
    """One row per declared ablation whose two arms some recording holds (scored per arm, as from
    :func:`labkit.dialog.rescore.score_folder`); ablations no recording holds are left out."""
    return [_pair_row(*pair) for pair in _pairs(recordings)]


def ablation_by_trait(recordings: Sequence[Mapping[str, Sequence[Score]]],
                      traits: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """feature x trait: the rows of :func:`ablation_rows` once per trait, over the users of that trait
    (``traits``: user name -> traits, as :func:`labkit.dialog.population.traits_of` reads them). A feature that
    buys adherence on one trait and costs it on another shows here, where the overall row would hide it."""
    rows = []
    for ablation, with_by, without_by, users in _pairs(recordings):
        for trait in sorted({t for u in users for t in traits.get(u, ())}):
            row = _pair_row(ablation, with_by, without_by, [u for u in users if trait in traits.get(u, ())])
            rows.append({"trait": trait, **row})
    return rows


def dev_ablation(data: str | Path, model: str, scenarios: Mapping[str, Scenario],
                 users: Sequence[UserScript]) -> list[dict[str, Any]]:
    """The ablation rows of ``model``'s dev recordings under ``data/runs_dev``: the ablation itself
    (``<model>``), then the design rounds' candidates (each :data:`~labkit.dialog.history.ROUNDS` folder
    ``<model>-next…``, read as one, since each round's arm is paired with the arm of the round before)."""
    ablation = score_folder(Path(data) / "runs_dev" / model, scenarios, list(users))
    return ablation_rows([ablation, _dev_rounds(data, model, scenarios, users)])


def _dev_rounds(data: str | Path, model: str, scenarios: Mapping[str, Scenario],
                users: Sequence[UserScript]) -> dict[str, list[Score]]:
    """Each :data:`~labkit.dialog.history.ROUNDS` arm's recording on the dev split (``runs_dev/<model><suffix>``)
    scored, read as one recording: each arm is paired with the one before it, which an earlier folder holds."""
    runs = Path(data) / "runs_dev"
    rounds: dict[str, list[Score]] = {}
    for r in history.ROUNDS:
        if (runs / f"{model}{r.suffix}").exists():
            rounds |= score_folder(runs / f"{model}{r.suffix}", scenarios, list(users))
    return rounds


def round_rows(data: str | Path, model: str, scenarios: Mapping[str, Scenario],
               users: Sequence[UserScript]) -> list[dict[str, Any]]:
    """The :data:`~labkit.dialog.history.ROUNDS` arms in order, read from ``model``'s recordings: the arm they start
    from, then each one recorded on the dev split, with its adherence there, the users it and the one before won
    alone (paired by user), its test users' adherence where ``runs_test/<model>`` recorded it (``None`` where
    not), and today's arm with its features (``today``, ``None`` where none has them).

    So a notebook shows the rounds by the feature each added, computed from the recordings, never by name."""
    dev = _dev_rounds(data, model, scenarios, users)
    tests = Path(data) / "runs_test" / model
    test = score_folder(tests, scenarios, list(users)) if tests.is_dir() else {}
    start = history.ROUNDS[0].before
    rows = []
    for number, r in enumerate((None, *history.ROUNDS)):
        arm, before = (start, None) if r is None else (r.name, r.before)
        if arm not in dev:
            continue
        paired = compare_arms(dev[arm], dev[before])["adhered"] if before in dev else None
        rows.append({"round": number, "feature": r.feature if r else "", "arm": arm, "label": history.label(arm),
                     "today": history.content_name(arm),
                     "dev": sum(s.adhered for s in dev[arm]), "dev_of": len(dev[arm]),
                     "only_this": paired.a_better if paired else None,
                     "only_before": paired.b_better if paired else None,
                     "test": sum(s.adhered for s in test[arm]) if arm in test else None,
                     "test_of": len(test[arm]) if arm in test else None})
    return rows


def round_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows of :func:`round_rows` as a Markdown table, one line per round in order."""
    lines = ["| round | feature it added | dev split adhered | on dev, only this / only the round before | "
             "test users adhered |", "|---|---|---|---|---|"]
    for r in rows:
        what = f"`{r['feature']}`" if r["feature"] else f"none: `{r['label']}`, where the rounds start"
        paired = "—" if r["only_this"] is None else f"{r['only_this']} / {r['only_before']}"
        test = "not recorded" if r["test"] is None else f"{r['test']}/{r['test_of']}"
        lines.append(f"| {r['round'] or 'start'} | {what} | {r['dev']}/{r['dev_of']} | {paired} | {test} |")
    return "\n".join(lines)


def round_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rounds table in a few computed words, so they stay right whichever way the numbers came: where the
    dev and test splits' adherence started and ended, which rounds lost more conversations than they won against
    the one before, and which of today's arms the last one is."""
    first, last = rows[0], rows[-1]
    worse = [r["label"] for r in rows if r["only_this"] is not None and r["only_this"] < r["only_before"]]
    tested = [r for r in rows if r["test"] is not None]
    text = (f"Over {sum(bool(r['feature']) for r in rows)} rounds, each adding one feature, the dev split's "
            f"adherence went from {first['dev']}/{first['dev_of']} to {last['dev']}/{last['dev_of']}; "
            f"{len(worse)} round(s) lost more dev conversations than they won against the round before"
            + (f" ({', '.join(worse)})" if worse else "") + ".")
    if len(tested) > 1:
        step = max(pairwise(tested), key=lambda pair: pair[1]["test"] - pair[0]["test"])
        text += (f" {len(tested) - 1} of the rounds were recorded on the test users too: from "
                 f"{tested[0]['test']}/{tested[0]['test_of']} ({tested[0]['label']}) to "
                 f"{tested[-1]['test']}/{tested[-1]['test_of']} ({tested[-1]['label']}), the largest step between two "
                 f"of them with {step[1]['label']} ({step[0]['test']} → {step[1]['test']}).")
    if last["today"]:
        text += f" The last round's features are today's `{last['today']}` arm."
    return text


def ablation_table(rows: Sequence[Mapping[str, Any]], name: Callable[[str], str] = str) -> str:
    """The rows as a Markdown table; a part's change is listed only where it moved. ``name`` gives what each arm
    is shown as (:func:`labkit.dialog.history.label` shows a :data:`~labkit.dialog.history.ROUNDS` arm by its
    feature)."""
    lines = ["| feature | with / without | users | adhered with | without | buys | only with / only without | "
             "p | parts that moved |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        moved = ", ".join(f"{part} {n:+d}" for part, n in r["parts"].items() if n) or "none"
        lines.append(f"| `{r['feature']}` | {name(r['with_arm'])} / {name(r['without_arm'])} | {r['users']} | "
                     f"{r['with']} | {r['without']} | {r['buys']:+d} | {r['only_with']} / {r['only_without']} | "
                     f"{r['p_value']:.3g} | {moved} |")
    return "\n".join(lines)


def feature_trait_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The feature x trait rows as a Markdown table: one line per feature, one column per trait, each cell what
    the feature buys there and ``(adhered with / without of users)``, with the sign test's p where it is below 0.05."""
    features = list(dict.fromkeys(r["feature"] for r in rows))
    traits = sorted({r["trait"] for r in rows})
    cells = {(r["feature"], r["trait"]): r for r in rows}

    def cell(feature: str, trait: str) -> str:
        r = cells.get((feature, trait))
        if r is None:
            return "—"
        beyond = f", p {r['p_value']:.2g}" if r["p_value"] < 0.05 else ""
        return f"{r['buys']:+d} ({r['with']}/{r['without']} of {r['users']}{beyond})"

    lines = ["| feature | " + " | ".join(traits) + " |", "|---" * (len(traits) + 1) + "|"]
    lines += [f"| `{f}` | " + " | ".join(cell(f, t) for t in traits) + " |" for f in features]
    return "\n".join(lines)


def ablation_summary(rows: Sequence[Mapping[str, Any]], alpha: float = 0.05) -> str:
    """The table in one sentence, built from its rows: which features bought adherence, which cost it, and
    which of those differences are beyond chance (so the words stay right whichever way the numbers came)."""
    return ablation_sentence(rows, things="features and rules", bought="adherence", count="users", alpha=alpha)
