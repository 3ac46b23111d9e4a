"""Checker for exercise 04a: the three counts, per run and per arm, against the reference computation.

Runs are made (``probe.py``: machine and both free loops, same task, same seeded faults) in the
sandboxed child, where the learner's counts are called, and again here, where the reference counts
come from the runtime's own bookkeeping (``labkit.runtime.free_loop``: the machine's log checks,
the free loop's counter and stop reason, the draft area's call table). Two doctored machine logs —
a write committed with nothing observed, a run ended on the planner's word — make sure the
machine's counts are computed, not assumed to be zero; three seeds are drawn afresh at every
check. Importing the reference counts from labkit is refused. Feedback never gives a count.
"""

import importlib.util
import random
from pathlib import Path
from typing import Any

SEEDS = list(range(12))
HIDDEN_SEEDS = 8
REFUSED_IMPORTS = {f"labkit.runtime.free_loop.{name}": "that is the reference count; compute yours from the logs"
                   for name in ("machine_unknown_writes_committed", "machine_stopped_on_word")}


def _load_probe() -> Any:
    spec = importlib.util.spec_from_file_location("labkit_exercise_05_probe", Path(__file__).with_name("probe.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROBE = _load_probe()
ARMS, METRICS = PROBE.ARMS, PROBE.METRICS


def cases(rng: random.Random) -> dict[str, Any]:
    return {"seeds": SEEDS + rng.sample(range(100, 100_000), HIDDEN_SEEDS)}


def judge(results: dict[str, Any], cases: dict[str, Any], source: str) -> list[str]:
    if "missing" in results:
        return [f"the file must define the functions {', '.join(results['missing'])}"]
    runs = PROBE.reference_runs(cases["seeds"]) + PROBE.doctored_runs()
    names = [PROBE.name(run) if run.seed in SEEDS or run.label else f"{run.arm}, a hidden seed" for run, _ in runs]
    feedback: list[str] = []
    for metric in METRICS:
        wrong = 0
        for name, (_run, expected), got in zip(names, runs, results["counts"][metric], strict=True):
            if "raised" in got:
                feedback.append(f"{metric}({name}): raised {got['raised']}")
                break
            if got["ok"] != expected[metric]:
                wrong += 1
                if wrong == 1:
                    feedback.append(f"{metric}({name}): returned {got['ok']!r}, which is not the count in this "
                                    "run's logs")
        if wrong > 1:
            feedback.append(f"{metric}: {wrong} of {len(runs)} runs counted wrong in all")
    expected_tally = {arm: {"runs": 0, **dict.fromkeys(METRICS, 0)} for arm in ARMS}
    for run, counts in runs:
        if run.label:
            continue
        expected_tally[run.arm]["runs"] += 1
        for metric in METRICS:
            expected_tally[run.arm][metric] += counts[metric]
    tally = results["tally"]
    if "raised" in tally:
        return [*feedback, f"tally: raised {tally['raised']}"]
    got_tally = tally["ok"]
    for arm in ARMS:
        row = got_tally.get(arm) if isinstance(got_tally, dict) else None
        if not isinstance(row, dict):
            feedback.append(f"tally: no row for arm '{arm}' (return {{arm: {{count name: number}}}})")
            continue
        wrong = [f"{k} {row.get(k)!r}" for k, v in expected_tally[arm].items() if row.get(k) != v]
        if wrong:
            feedback.append(f"tally, arm {arm}: " + "; ".join(wrong) + " (not the sums over the arm's runs)")
    return feedback
