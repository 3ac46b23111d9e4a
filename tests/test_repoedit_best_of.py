"""Best of k (labkit.repoedit.best_of) on a real tiny project with real pytest and scripted answers (no model).

The scripted model answers wrongly when greedy and rightly only under the seed a test names, so each
test says which try must be the kept one, what the tries cost, and that nothing of a dropped try stays.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from calc_project import CALC, FIX, write_calc_project

from labkit.llm.fake import ScriptedBackend
from labkit.repoedit.arm_io import ArmEnd, ArmInputs
from labkit.repoedit.arms import ARMS, BEST_OF, BEST_OF_ARMS, DEFAULT_ARMS
from labkit.repoedit.best_of import TEMPERATURE, best_of, try_log_path
from labkit.repoedit.budget import BudgetedBackend
from labkit.repoedit.prompt_whole import run_prompt_whole
from labkit.repoedit.tasks import load_tasks
from labkit.repoedit.verify import measure_baseline, verify

FIXED = CALC.replace(FIX["search"], FIX["replace"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_calc_project(tmp_path)


def _inputs(project: Path, backend: ScriptedBackend, budget: int = 1, log_path: Path | None = None) -> ArmInputs:
    task = load_tasks(project / "tasks.yaml")["calc-add"]
    source = project / "calc"
    return ArmInputs(task, source, measure_baseline(source), BudgetedBackend(backend, budget), log_path=log_path)


def _whole(right_seed: int | None) -> ScriptedBackend:
    """prompt_whole answers: the file unchanged, except under ``right_seed`` (sampled) the fixed file."""
    def answer(request) -> str:  # type: ignore[no-untyped-def]
        right = right_seed is not None and request.temperature > 0 and request.seed == right_seed
        return "FILE: calc.py\n```python\n" + (FIXED if right else CALC) + "```"
    return ScriptedBackend(answer)


def _kept(inner):  # type: ignore[no-untyped-def]
    """``inner`` that remembers every end it returned (to check that dropped copies are gone)."""
    ends: list[ArmEnd] = []

    def run(inputs: ArmInputs) -> ArmEnd:
        ends.append(inner(inputs))
        return ends[-1]
    return run, ends


def test_the_first_try_that_passes_the_visible_tests_is_kept_and_the_others_are_removed(project: Path) -> None:
    backend = _whole(right_seed=2)
    run, ends = _kept(run_prompt_whole)
    arm_input = _inputs(project, backend)
    end = best_of(run, 3)(arm_input)
    assert end.status.startswith("try 3 of 3 passed the visible tests")
    assert verify(end.workspace, arm_input.baseline).fixed
    assert [(r.temperature, r.seed) for r in backend.requests] == [(0.0, 0), (TEMPERATURE, 1), (TEMPERATURE, 2)]
    assert arm_input.backend is not None and arm_input.backend.calls == 3  # each try had the budget of 1
    assert end.test_runs == 3 and end.transcript.count("=== try") == 3
    assert [e.workspace.root.exists() for e in ends] == [False, False, True]
    end.workspace.keep = False
    end.workspace.close()


def test_a_greedy_answer_that_passes_is_the_only_try(project: Path) -> None:
    backend = ScriptedBackend(lambda r: "FILE: calc.py\n```python\n" + FIXED + "```")
    end = best_of(run_prompt_whole, 3)(_inputs(project, backend))
    assert end.status.startswith("try 1 of 3") and len(backend.requests) == 1
    end.workspace.keep = False
    end.workspace.close()


def test_when_no_try_passes_the_greedy_tree_is_kept(project: Path) -> None:
    backend = _whole(right_seed=None)
    run, ends = _kept(run_prompt_whole)
    arm_input = _inputs(project, backend)
    end = best_of(run, 3)(arm_input)
    assert end.status.startswith("no try of 3 passed the visible tests; the greedy try is kept")
    assert end.workspace is ends[0].workspace and not verify(end.workspace, arm_input.baseline).fixed
    assert [e.workspace.root.exists() for e in ends] == [True, False, False]
    end.workspace.keep = False
    end.workspace.close()


def test_a_try_that_raises_leaves_no_copy_behind(project: Path) -> None:
    calls: list[ArmEnd] = []

    def flaky(inputs: ArmInputs) -> ArmEnd:
        if inputs.seed == 1:
            raise RuntimeError("the model server went away")
        calls.append(run_prompt_whole(inputs))
        return calls[-1]

    with pytest.raises(RuntimeError, match="went away"):
        best_of(flaky, 3)(_inputs(project, _whole(right_seed=None)))
    assert calls and not any(e.workspace.root.exists() for e in calls)


def test_the_machine_best_of_k_samples_every_call_of_a_later_try_and_logs_each_try(project: Path,
                                                                                 tmp_path: Path) -> None:
    """Greedy (and the machine's own sampled repairs, seeds below 1000) give a wrong definition; the second
    try's calls carry seeds 1000 + n and get the right one."""
    def answer(request) -> str:  # type: ignore[no-untyped-def]
        body = "a + b" if request.seed >= 1000 else "a * b"
        return f"DEFINITION: add\n```python\ndef add(a, b):\n    return {body}\n```"

    backend = ScriptedBackend(answer)
    log = tmp_path / "logs" / "calc-add.jsonl"
    log.parent.mkdir()
    arm_input = _inputs(project, backend, budget=8, log_path=log)
    end = ARMS[f"machine_best_of_{BEST_OF}"].run(arm_input)
    assert end.status.startswith(f"try 2 of {BEST_OF} passed the visible tests: DONE")
    assert verify(end.workspace, arm_input.baseline).fixed
    assert log.exists() and try_log_path(log, 1).exists() and not try_log_path(log, 2).exists()
    greedy = [r for r in backend.requests if r.seed < 1000]
    assert greedy[0].temperature == 0.0 and all(r.temperature == TEMPERATURE for r in backend.requests
                                                 if r.seed >= 1000)
    end.workspace.keep = False
    end.workspace.close()


def test_best_of_k_is_declared_for_the_baseline_and_the_machine_alike_and_is_opt_in() -> None:
    assert (f"prompt_whole_best_of_{BEST_OF}", f"machine_best_of_{BEST_OF}", "prompt_excerpt_best_of_6") == BEST_OF_ARMS
    assert all(ARMS[a].uses_model and a not in DEFAULT_ARMS for a in BEST_OF_ARMS)
    with pytest.raises(ValueError, match="k >= 2"):
        best_of(run_prompt_whole, 1)


def test_best_of_k_runs_on_the_runner_and_replays_from_its_cassettes(project: Path, tmp_path: Path) -> None:
    """Through the code comparison's runner: a row per arm counting every try's calls, a log per machine try,
    and a replay that asks the cassettes for the same sampled requests."""
    from labkit.compare.runs import Answers
    from labkit.repoedit.compare import CompareConfig, load_rows, replay_differences, run_compare

    def answer(request) -> str:  # type: ignore[no-untyped-def]
        if "each as a line `FILE: <path>`" in request.prompt:  # right on the first sampled try
            right = request.temperature > 0 and request.seed == 1
            return "FILE: calc.py\n```python\n" + (FIXED if right else CALC) + "```"
        right = request.seed >= 1000  # the machine: right only in its second try, never in its own repairs
        return f"DEFINITION: add\n```python\ndef add(a, b):\n    return {'a + b' if right else 'a * b'}\n```"

    config = CompareConfig(model="scripted", arms=list(BEST_OF_ARMS[:2]), tasks_file=str(project / "tasks.yaml"))
    out = tmp_path / "out"
    rows = run_compare(config, Answers(live=ScriptedBackend(answer)), out)
    assert [(r.arm, r.fixed) for r in rows] == [(a, True) for a in BEST_OF_ARMS[:2]]
    assert rows[0].llm_calls == 2 and rows[1].llm_calls > 2  # the whole-file arm: greedy, then seed 1
    logs = out / "logs" / BEST_OF_ARMS[1]
    assert (logs / "calc-add.jsonl").exists() and (logs / "calc-add.try1.jsonl").exists()
    again = run_compare(config, Answers(replay=out), tmp_path / "again")
    assert replay_differences(load_rows(out / "runs.jsonl"), again) == []


def test_a_recorded_greedy_arm_answers_the_best_of_arms_first_try_and_the_new_cassette_replays_alone(
        project: Path, tmp_path: Path) -> None:
    """`--reuse`: the greedy arms recorded first; then the best-of arms with a model that may only be asked
    sampled requests, so every greedy request must come from the greedy recording's cassettes."""
    from labkit.compare.runs import Answers
    from labkit.llm.cassette import ReusingBackend, read_cassette
    from labkit.repoedit.compare import CompareConfig, load_rows, replay_differences, run_compare

    def answer(request) -> str:  # type: ignore[no-untyped-def]
        if "each as a line `FILE: <path>`" in request.prompt:
            right = request.temperature > 0 and request.seed == 1
            return "FILE: calc.py\n```python\n" + (FIXED if right else CALC) + "```"
        right = request.seed >= 1000
        return f"DEFINITION: add\n```python\ndef add(a, b):\n    return {'a + b' if right else 'a * b'}\n```"

    tasks = str(project / "tasks.yaml")
    greedy = tmp_path / "greedy"
    greedy_rows = run_compare(CompareConfig(model="scripted", arms=["prompt_whole", "machine"], tasks_file=tasks),
                              Answers(live=ScriptedBackend(answer)), greedy)
    assert [r.fixed for r in greedy_rows] == [False, False]

    def sampled_only(request) -> str:  # type: ignore[no-untyped-def]
        assert request.temperature > 0, "a greedy request reached the model: it should have been reused"
        return answer(request)

    reusing = ReusingBackend(ScriptedBackend(sampled_only), sorted((greedy / "cassettes").glob("*.jsonl")))
    config = CompareConfig(model="scripted", arms=list(BEST_OF_ARMS[:2]), tasks_file=tasks)
    out = tmp_path / "out"
    rows = run_compare(config, Answers(live=reusing), out)
    assert [(r.arm, r.fixed) for r in rows] == [(a, True) for a in BEST_OF_ARMS[:2]]
    greedy_calls = sum(r.llm_calls for r in greedy_rows)
    assert reusing.hits == greedy_calls and reusing.misses == sum(r.llm_calls for r in rows) - greedy_calls
    # the reused answers say so: all of the first try's (the machine's own sampled repairs among them)
    first_try = {BEST_OF_ARMS[0]: lambda seed: seed == 0, BEST_OF_ARMS[1]: lambda seed: seed < 1000}
    for arm, is_first in first_try.items():
        _, calls = read_cassette(out / "cassettes" / f"{arm}.jsonl")
        assert [c["completion"]["replayed"] for c in calls] == [is_first(c["request"]["seed"]) for c in calls]
        assert any(c["completion"]["replayed"] for c in calls) and not all(c["completion"]["replayed"] for c in calls)
    again = run_compare(config, Answers(replay=out), tmp_path / "again")
    assert replay_differences(load_rows(out / "runs.jsonl"), again) == []

    # one report over both folders: the best-of arms paired with the greedy ones task by task
    from labkit.repoedit.compare_report import render_report, summarize

    both = summarize([greedy, out])
    fixed = {(p["a"], p["b"]): (p["a_better"], p["b_better"]) for p in both["paired"] if p["measure"] == "fixed"}
    assert fixed[(BEST_OF_ARMS[1], "machine")] == (1, 0) and fixed[(BEST_OF_ARMS[0], "prompt_whole")] == (1, 0)
    assert [r["arm"] for r in both["arms"]] == ["prompt_whole", "machine", *BEST_OF_ARMS[:2]]
    assert both["runs"] == both["planned"] == 4
    assert f"Best of {BEST_OF} (the visible tests picking among up to {BEST_OF} tries) fixed 1 task(s) the greedy" \
        in render_report([[greedy, out]])
    from labkit.core.errors import LabkitError

    with pytest.raises(LabkitError, match="record the same arm twice"):
        summarize([greedy, greedy])
    import json
    import shutil

    other = shutil.copytree(out, tmp_path / "other")
    config_file = other / "compare.json"
    config_file.write_text(json.dumps({**json.loads(config_file.read_text()), "call_budget": 7}))
    with pytest.raises(LabkitError, match=r"not the same comparison as .*: call_budget differ"):
        summarize([greedy, other])


def test_reuse_is_refused_with_a_server_with_a_replay_and_without_cassettes(tmp_path: Path) -> None:
    import subprocess
    import sys

    def compare(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "labkit", "compare", "code", *extra],
                              capture_output=True, text=True, timeout=120)

    proc = compare("--replay", str(tmp_path), "--reuse", str(tmp_path))
    assert proc.returncode == 2 and "--reuse is for a live recording" in proc.stderr
    from labkit.core.errors import LabkitError
    from labkit.llm.cassette import reusing

    with pytest.raises(LabkitError, match="no cassettes in"):
        reusing(ScriptedBackend(lambda r: ""), tmp_path, server=False)
    with pytest.raises(LabkitError, match="in-process model file"):
        reusing(ScriptedBackend(lambda r: ""), tmp_path, server=True)
