"""The server-parity script's rules (``scripts/server_parity.py``): which subset it re-runs and how a row is set
beside its recording. The live run needs the opt-in model and a server, so it is recorded
(``data/bench/server-parity.json``), not run here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from labkit.repoedit.history import today

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "server_parity.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("server_parity", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["server_parity"] = module
    spec.loader.exec_module(module)
    return module


parity = _script()


def test_a_row_is_the_same_only_when_every_field_but_the_times_is() -> None:
    recorded = [{"arm": "a", "task": "t1", "fixed": True, "wall_s": 3.0},
                {"arm": "a", "task": "t2", "fixed": True, "wall_s": 3.0},
                {"arm": "a", "task": "t3", "fixed": False, "wall_s": 1.0}]
    again = [{"arm": "a", "task": "t1", "fixed": True, "wall_s": 9.0},
             {"arm": "a", "task": "t2", "fixed": False, "wall_s": 3.0, "extra": 1}]
    rows = parity.compared(recorded, again, ("arm", "task"), ("wall_s",))
    assert [r["same"] for r in rows] == [True, False, False]
    assert rows[1]["differences"] == {"extra": [None, 1], "fixed": [True, False]}
    assert rows[2]["differences"] == {"row": ["recorded", None]}  # a row the server run lacks is a difference


def test_the_subsets_are_declared_rules_not_picks() -> None:
    rows = [{"arm": "machine_plus", "scenario": sc, "user": u, "user_messages": n}
            for sc, u, n in (("analyst", "a02", 3), ("analyst", "a01", 3), ("analyst", "a03", 1),
                             ("support", "s09", 2), ("support", "s01", 5), ("support", "s02", 4))]
    rows.append({"arm": "prompt_only_checked", "scenario": "support", "user": "s99", "user_messages": 1})
    assert parity.dialog_users(rows) == ["a03", "a01", "s09", "s02"]  # fewest messages, then by name
    code = [{"arm": arm, "task": f"humaneval-{n}"} for arm in parity.CODE_ARMS for n in (10, 2, 1, 33, 4, 7)]
    code.remove({"arm": "machine", "task": "humaneval-2"})
    assert parity.code_tasks(code) == ["humaneval-1", "humaneval-4", "humaneval-7", "humaneval-10"]  # by number


def test_the_recorded_parity_run_recomputes_and_sets_each_row_beside_the_committed_recording() -> None:
    import json

    from labkit.compare.runs import read_rows

    root = SCRIPT.parents[1]
    record = json.loads((root / "data" / "bench" / "server-parity.json").read_text(encoding="utf-8"))
    assert record["server_kind"] == "llama-cpp-python" and record["model_kind"] == "chat"
    assert not record["commit"].endswith("+dirty")
    for part, key in (("dialog", ("arm", "user")), ("code", ("arm", "task"))):
        rows = record[part]["rows"]
        name = today if part == "code" else str  # a code row's arm as named today (labkit.repoedit.history)
        recorded = {(name(r[key[0]]), r[key[1]]): r
                    for r in read_rows(root / record[part]["recording"] / "runs.jsonl")}
        assert rows and all((name(r[key[0]]), r[key[1]]) in recorded for r in rows)
        for row in rows:
            assert row["same"] == (not row["differences"])
            mine = recorded[(name(row[key[0]]), row[key[1]])]
            for name, (then, _) in row["differences"].items():
                if name != "row":
                    assert mine.get(name) == then, (part, row, name)  # the recorded side is the committed row
    chosen = read_rows(root / record["dialog"]["recording"] / "runs.jsonl")
    assert record["dialog"]["users"] == parity.dialog_users(chosen)  # the declared subset, not a pick


def test_the_recorded_server_layouts_recompute_and_gave_the_same_rows() -> None:
    import json
    import statistics

    record = json.loads((SCRIPT.parents[1] / "data" / "bench" / "servers-cpu.json").read_text(encoding="utf-8"))
    assert not record["commit"].endswith("+dirty") and record["machine"]["cpu_count"] == 2
    assert len(record["order"]) == 6 and set(record["wall_s"]) == set(record["order"])
    base = statistics.median(record["wall_s"][record["order"][0]])
    for layout, times in record["wall_s"].items():
        assert len(times) == 2 and record["median_s"][layout] == statistics.median(times)
        assert record["ratio_to_A"][layout] == round(statistics.median(times) / base, 3)
        assert record["rows_same_as_A"][layout] is True  # greedy, one model: spreading changes no row
