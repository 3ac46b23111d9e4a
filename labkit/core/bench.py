"""``labkit bench core``: what the machinery costs, measured side by side in one run.

Two questions a learner should be able to answer with numbers from their own machine:

* How much slower is a labkit step than a bare ``transitions`` trigger on the same table? A labkit
  step also validates and seals an event into the hash chain, folds it into the state and checks
  invariants. Goal: at most 2x.
* How fast does a log replay? Loading verifies every hash, validates every event with pydantic
  and folds the reducer. Goal: at least 100,000 events/s, within 4x of plain ``json.loads`` of
  the same lines (the floor for anything that reads JSON).

Timings are medians of several alternating repeats, by wall time (``time.perf_counter``) and by
the thread's CPU time (``time.thread_time``, steadier on a shared machine); ``--rounds`` repeats
the step comparison and keeps every round. Nothing here is asserted by a test, because speed
depends on the machine.

Where a step's time goes. Wall and CPU times on the shared 2-core development machine move with
its load, so the parts were found with cProfile, with each part timed on its own, and with
instruction counts under callgrind (deterministic, so two versions compare exactly; ``labkit``
minus ``bare`` per function). One step is about 20 µs, a bare trigger about 10 µs:

* the ``transitions`` trigger itself, the same call the baseline makes: about 90,000
  instructions of a step's 163,000, and about half its time;
* building the ``Transitioned`` event (pydantic validation of eight fields): about 1.5 µs;
* serialising it to JSON with pydantic (the bytes the chain hashes): about 1-1.5 µs;
* SHA-256 of the body and its hex digest: about 0.6 µs;
* folding it into a new frozen state: about 0.6 µs; three invariants: about 0.4 µs;
* the calls between these parts (about a dozen Python frames of ~0.1 µs each);
* the cyclic garbage collector: about 0.1-0.15 of the ratio (with it disabled, 1.73-1.92 against
  1.92-2.01 with it, same processes). A step now keeps two tracked objects alive, the event and
  its field dict (three before the fields-set change below, four before the states change); the
  dict holds the payload, a dict, so CPython never untracks it. The bare trigger keeps nothing.

The wall-time ratio sits 0.1-0.2 above the instruction ratio (1.79 before the states change): a
step keeps about 0.8 KB alive (the event, its field dict, the hash), memory the bare trigger never
touches.

What was cut, with every check kept. Earlier: sealing serialised each event twice over (now the
empty hash field is cut from one serialisation, the same bytes); the event was built through
``BaseModel.__init__``'s keyword plumbing (now the model's validator, the same validation); the
allowed-event check recomputed a list per step (now a set per state); the new state was filled
through ``object.__setattr__`` (now the slot descriptors, the same frozen instance). Then, measured
back to back against the code before in the same session and load (alternating processes, two
rounds each): the code before 2.09-2.19, median 2.18; after 1.87-2.02, median 1.91:

* pydantic gives every model instance its own ``set`` of the field names it was built with: a
  728-byte container, a third of an event's memory, that the collector walked again and again
  (``set_traverse`` was a fifth of its work). Events the machine builds all carry the same names, so
  they now share one read-only :class:`labkit.core.events.FieldsSet` (equal contents, copies are private
  plain sets; ``tests/test_machine.py`` checks it against pydantic's own construction). The largest
  single gain: about -0.2 in the ratio;
* an in-memory log built each event's JSON line only to drop it: only stores that write build it
  now (``seal_body`` / ``sealed_line``), and a log that writes nothing skips the ``_persist`` call;
* reading the serialiser through the class costs about 170 ns (pydantic's metaclass hooks attribute
  lookup), through the instance about 60 ns; writing the digest with ``object.__setattr__`` about
  300 ns, into the private copy's field dict about 30 ns; SHA-256 starts from a copy of a hasher that
  has already taken the leading ``{`` (no ``b"{" + body`` copy);
* ``LabMachine.states`` (the state after every event) was appended to by every step, one more
  kept, tracked object per step. It is derived from the log when asked and kept from then on, so
  asking after each step costs one extra fold per event; a run that never asks keeps only its
  events. The log is the single source of truth and the reducer is pure, so the states are equal
  (``tests/test_machine.py`` checks them step by step, after a violation and after a resume).
  About -0.12 in the ratio;
* invariants are called directly, with :func:`labkit.core.invariants.judged` and ``raised`` giving the
  same details :meth:`Invariant.violation` gives (tested); the transition fold builds the state
  inline; the event's place is read from the log's list once.

On this busy machine single rounds spread by about ±0.1, so a run of five rounds can land on
either side of 2; the gain is the difference measured back to back, not one recorded run.

Measured and not adopted: building the event without pydantic's validator (``__new__`` plus four
slot writes after checking the types) took 1.70 µs against the validator's 1.77 µs, no gain for a
second definition of validity; ``to_json(warnings=False)`` is no faster; CPython's own SHA-256 is
slower than OpenSSL's (1.42 against 0.67 µs); ``json.dumps`` of the fields is slower (4.4 µs) and
not the same bytes; ``gc.freeze()`` every 1,000 steps measured no faster than the collector (8
pairs in one process, before the states change: 1.83 against 1.84, and 1.84 with the collector
off, where separate processes showed 0.1-0.15 for it: the collector's share is itself within
this machine's noise), and it would freeze every object in the process (the learner's too), so
cyclic garbage among them would never be collected.

What remains is the trigger, pydantic's validation and serialisation, the hash and the fold; every
invariant still runs on every step and every event is still validated, serialised, hashed and
chained to the same bytes (the traces, cassettes and notebooks that check them are unchanged).
"""

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
    """Median seconds of subject and baseline, and the medians of their per-pair ratios, by both clocks.

    The two are run alternately, so a neighbour process that slows the machine for a while slows
    both sides of a pair alike; the ratio is then steadier than either time on its own. On a shared
    machine the CPU-time ratio is steadier still: time spent waiting for a core is not counted.
    """
    pairs = [(_timed(subject, clocks), _timed(baseline, clocks)) for _ in range(repeats)]
    median = statistics.median
    return {"subject_s": median(a[0] for a, _ in pairs), "baseline_s": median(b[0] for _, b in pairs),
            "ratio": median(a[0] / b[0] for a, b in pairs),
            "ratio_cpu": median(a[1] / b[1] if b[1] > 0 else float("nan") for a, b in pairs)}


def bench_transitions(n: int, repeats: int = 5, rounds: int = 1,
                      clocks: tuple[Clock, Clock] = CLOCKS) -> dict[str, Any]:
    """Microseconds per transition for labkit and for a bare ``transitions`` model, and their ratio.

    ``rounds`` repeats the whole paired measurement; the result's ratios are the medians over
    rounds, and ``rounds`` keeps each one, so the spread a busy machine causes is in the record.
    """

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
