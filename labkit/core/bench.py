"""``labkit bench core``: a labkit step against a bare ``transitions`` trigger (goal: at most 2x), and
replay against plain ``json.loads`` (goal: 100,000 events/s, within 4x). Medians of alternating
repeats by wall and thread CPU time; no test asserts them, as speed depends on the machine."""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from transitions import Machine

from labkit.core.errors import LabkitError
from labkit.core.events import Transitioned
from labkit.core.examples import ticket_guards, ticket_table
from labkit.core.invariants import Invariant
from labkit.core.machine import LabMachine
from labkit.core.reducer import replay
from labkit.core.store import read_jsonl, write_jsonl

_LOOP = ("ask_customer", "customer_replied")  # IN_PROGRESS <-> WAITING_CUSTOMER, forever


def _bench_invariants(states: frozenset[str]) -> list[Invariant]:
    """Three constant-time invariants, the kind a real table carries on every step."""
    return [
        Invariant("known_state", lambda s, ev: None if s.status in states else f"unknown state {s.status}"),
        Invariant("seq_matches_log", lambda s, ev: None if s.seq == len(ev) - 1 else "seq out of step"),
        Invariant("status_matches_last_move", lambda s, ev: None if not isinstance(ev[-1], Transitioned)
                  or ev[-1].dest == s.status else "status differs from the last transition"),
    ]


def _labkit_machine() -> LabMachine:
    table = ticket_table()
    m = LabMachine(table, guards=ticket_guards(), invariants=_bench_invariants(frozenset(table.states)),
                   clock=lambda: 0.0)
    m.fire("triage")
    m.fire("start")
    return m


def _bare_machine() -> Any:
    class Model:
        pass

    table, guards = ticket_table(), ticket_guards()
    model = Model()
    specs = []
    for row in table.rows:
        spec: dict[str, Any] = {"trigger": row.event, "source": row.source, "dest": row.dest}
        if row.guard_name:
            check = guards[row.guard_name]
            spec["unless" if row.negated else "conditions"] = [lambda ed, c=check: c(None, ed.kwargs)]
        specs.append(spec)
    Machine(model=model, states=list(table.states), initial=table.initial, transitions=specs,
            auto_transitions=False, send_event=True)
    model.trigger("triage")
    model.trigger("start")
    return model


Clock = Callable[[], float]
CLOCKS: tuple[Clock, Clock] = (time.perf_counter, time.thread_time)  # wall time, this thread's CPU time


def _timed(run: Callable[[], None], clocks: tuple[Clock, Clock]) -> tuple[float, float]:
    """Seconds ``run`` took by each clock: (wall, CPU)."""
    wall, cpu = clocks
    w0, c0 = wall(), cpu()
    run()
    return wall() - w0, cpu() - c0


def _paired(subject: Callable[[], None], baseline: Callable[[], None], repeats: int,
            clocks: tuple[Clock, Clock] = CLOCKS) -> dict[str, float]:
    """Median seconds of subject and baseline and of their per-pair ratios, by both clocks; run alternately
    so a neighbour's load hits both sides of a pair alike."""
    pairs = [(_timed(subject, clocks), _timed(baseline, clocks)) for _ in range(repeats)]
    median = statistics.median
    return {"subject_s": median(a[0] for a, _ in pairs), "baseline_s": median(b[0] for _, b in pairs),
            "ratio": median(a[0] / b[0] for a, b in pairs),
            "ratio_cpu": median(a[1] / b[1] if b[1] > 0 else float("nan") for a, b in pairs)}


def bench_transitions(n: int, repeats: int = 5, rounds: int = 1,
                      clocks: tuple[Clock, Clock] = CLOCKS) -> dict[str, Any]:
    """Microseconds per transition for labkit and a bare ``transitions`` model, and their ratio (median
    over ``rounds``, each round kept so a busy machine's spread is in the record)."""

    def labkit_run() -> None:
        m = _labkit_machine()
        for i in range(n):
            m.fire(_LOOP[i % 2])

    def bare_run() -> None:
        model = _bare_machine()
        for i in range(n):
            model.trigger(_LOOP[i % 2])

    each = []
    for _ in range(rounds):
        p = _paired(labkit_run, bare_run, repeats, clocks)
        each.append({"labkit_us": p["subject_s"] / n * 1e6, "bare_us": p["baseline_s"] / n * 1e6,
                     "ratio": p["ratio"], "ratio_cpu": p["ratio_cpu"]})
    median = statistics.median
    return {"labkit_us": median(r["labkit_us"] for r in each), "bare_us": median(r["bare_us"] for r in each),
            "ratio": median(r["ratio"] for r in each), "ratio_cpu": median(r["ratio_cpu"] for r in each),
            "ratio_min": min(r["ratio"] for r in each), "ratio_max": max(r["ratio"] for r in each),
            "rounds": each}


def bench_replay(n: int, repeats: int = 5) -> dict[str, float]:
    """Events/s for load+verify+replay of an n-event JSONL log, against ``json.loads`` of its lines."""
    m = _labkit_machine()
    for i in range(n - len(m.events)):
        m.fire(_LOOP[i % 2])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.jsonl"
        write_jsonl(path, list(m.events))
        size = path.stat().st_size

        def json_only() -> None:
            with open(path, "rb") as handle:
                for line in handle:
                    json.loads(line)

        def labkit_replay() -> None:
            state = replay(read_jsonl(path).events).state
            if state != m.state:
                raise AssertionError("replay did not rebuild the live state")

        p = _paired(labkit_replay, json_only, repeats)
    return {"events": float(n), "bytes": float(size), "replay_eps": n / p["subject_s"],
            "json_eps": n / p["baseline_s"], "ratio": p["ratio"]}


def bench_core(events: int = 100_000, transitions: int = 20_000, rounds: int = 1) -> dict[str, Any]:
    """Run both measurements and return them with the code and the machine they ran on."""
    if events < 100 or transitions < 100:
        raise LabkitError(f"too few to measure: --events {events}, --transitions {transitions}",
                          "use at least 100 of each (the defaults are 100000 and 20000).")
    if rounds < 1:
        raise LabkitError(f"--rounds {rounds}: at least one round is needed", "use --rounds 1 or more.")
    import pydantic
    import transitions as transitions_pkg

    from labkit.core.provenance import git_commit, machine

    return {
        "machine": {"python": platform.python_version(), "processor": platform.machine(),
                    "pydantic": pydantic.VERSION, "transitions": transitions_pkg.__version__,
                    "cpu_count": os.cpu_count(), "load_average_at_start": machine()["load_average_at_start"]},
        "labkit_commit": git_commit(),
        "recorded_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "transition": bench_transitions(transitions, rounds=rounds),
        "replay": bench_replay(events),
    }


STEP_GOAL = 2.0  # labkit step / bare trigger, at most


def render_core(result: dict[str, Any]) -> str:
    """The benchmark as a Markdown table, goals beside the measurements."""
    t, r, mach = result["transition"], result["replay"], result["machine"]
    rounds = t.get("rounds", [])
    each = ", ".join(format(x["ratio"], ".2f") for x in rounds)
    spread = f" (rounds: {each})" if len(rounds) > 1 else ""
    rows = [
        ("bare `transitions` trigger", f"{t['bare_us']:.1f} µs/transition", ""),
        ("labkit step (3 invariants, event sealed in memory)", f"{t['labkit_us']:.1f} µs/transition",
         ""),
        ("labkit / bare, wall time", f"{t['ratio']:.2f}×{spread}",
         f"≤ {STEP_GOAL:g}× " + ("✓" if t["ratio"] <= STEP_GOAL else "✗")),
    ]
    if "ratio_cpu" in t:
        rows.append(("labkit / bare, CPU time of the thread", f"{t['ratio_cpu']:.2f}×",
                     f"≤ {STEP_GOAL:g}× " + ("✓" if t["ratio_cpu"] <= STEP_GOAL else "✗")))
    rows += [
        (f"`json.loads` of {int(r['events']):,} lines", f"{r['json_eps']:,.0f} events/s", ""),
        ("load + verify chain + validate + replay", f"{r['replay_eps']:,.0f} events/s",
         "≥ 100,000/s " + ("✓" if r["replay_eps"] >= 100_000 else "✗")),
        ("replay / json.loads time", f"{r['ratio']:.2f}×", "≤ 4× " + ("✓" if r["ratio"] <= 4 else "✗")),
    ]
    lines = ["| measurement | result | goal |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    load = mach.get("load_average_at_start")
    lines.append(f"\nPython {mach['python']} ({mach['processor']}), pydantic {mach['pydantic']}, "
                 f"transitions {mach['transitions']}; medians of 5 alternating repeats "
                 f"{f'in each of {len(rounds)} rounds ' if len(rounds) > 1 else ''}"
                 "(ratios are medians of per-pair ratios)"
                 f"{f'; load average {load[0]:.2f} at the start' if load else ''}.")
    return "\n".join(lines)
