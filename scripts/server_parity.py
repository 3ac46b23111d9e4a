"""Server parity: the code comparison and the dialog measurement through a real server, beside their in-process rows.

Issue 26 asks that a learner's server give what the in-process model gives. This starts one
``python -m labkit.llm.serve`` (llama_cpp.server, the model loaded as labkit loads it) with the opt-in Qwen 1.5B chat
model, speaks to it as a detected server kind (chat completions through the GGUF's own template, the schema
enforced as a grammar, each call independent of the last), and re-runs a subset of two committed in-process
recordings against it:

- the dialog measurement (``data/dialog/runs_test/qwen2.5-coder-1.5b``): arm ``machine_plus``, the two test users
  of each scenario with the fewest messages;
- the code comparison on HumanEval fix tasks (``data/repoedit/humaneval-fix/qwen2.5-coder-1.5b``): arms
  ``prompt_whole`` and ``machine`` on the first four test tasks by number.

Each re-run row is set beside its recorded row, field by field (times aside); the record keeps both rows'
differing fields, so the count of equal rows re-computes from the file (``tests/test_server_parity.py``). Greedy
decoding through the same library and template should give the same tokens; where it does not, the differing
fields say where the answers parted.

    flock /tmp/llm.lock .venv/bin/python scripts/server_parity.py [--out data/bench/server-parity.json]

It needs the opt-in model (``labkit models fetch qwen2.5-coder-1.5b``), about 15 minutes on 2 cores, and a clean
commit (the record names it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from labkit.compare.runs import Answers, read_rows
from labkit.core.provenance import git_commit, machine
from labkit.dialog import comparison as dialog
from labkit.llm.http import OpenAICompatBackend
from labkit.llm.models import get_model
from labkit.llm.serve import serving
from labkit.repoedit.compare import REPLAY_IGNORED, load_rows, read_config, run_compare

REPO = Path(__file__).resolve().parents[1]
DIALOG = REPO / "data" / "dialog" / "runs_test" / "qwen2.5-coder-1.5b"
CODE = REPO / "data" / "repoedit" / "humaneval-fix" / "qwen2.5-coder-1.5b"
OUT = REPO / "data" / "bench" / "server-parity.json"
DIALOG_ARM, DIALOG_USERS_PER_SCENARIO = "machine_plus", 2
CODE_ARMS, CODE_TASKS = ("prompt_whole", "machine"), 4
DIALOG_IGNORED = ("wall_s",)  # a dialog row holds no time; kept for symmetry with the code rows
N_CTX = 4096  # the in-process recordings' context (their provenance)


def differing(recorded: dict[str, Any], again: dict[str, Any], ignored: tuple[str, ...]) -> dict[str, Any]:
    """The fields (times aside) where two rows differ: ``{field: [recorded, through the server]}``."""
    names = (set(recorded) | set(again)) - set(ignored)
    return {n: [recorded.get(n), again.get(n)] for n in sorted(names) if recorded.get(n) != again.get(n)}


def dialog_users(rows: list[dict[str, Any]]) -> list[str]:
    """The declared subset: per scenario, the users with the fewest messages (then by name)."""
    mine = [r for r in rows if r["arm"] == DIALOG_ARM]
    chosen: list[str] = []
    for scenario in sorted({r["scenario"] for r in mine}):
        of = sorted((r for r in mine if r["scenario"] == scenario), key=lambda r: (r["user_messages"], r["user"]))
        chosen += [r["user"] for r in of[:DIALOG_USERS_PER_SCENARIO]]
    return chosen


def code_tasks(rows: list[dict[str, Any]]) -> list[str]:
    """The declared subset: the first test tasks by HumanEval number that every chosen arm recorded."""
    have = {a: {r["task"] for r in rows if r["arm"] == a} for a in CODE_ARMS}
    common = set.intersection(*have.values())
    return sorted(common, key=lambda t: int(t.rsplit("-", 1)[1]))[:CODE_TASKS]


def compared(recorded: list[dict[str, Any]], again: list[dict[str, Any]], key: tuple[str, ...],
             ignored: tuple[str, ...]) -> list[dict[str, Any]]:
    by_key = {tuple(r[k] for k in key): r for r in again}
    out = []
    for row in recorded:
        k = tuple(row[n] for n in key)
        other = by_key.get(k)
        diff = {"row": ["recorded", None]} if other is None else differing(row, other, ignored)
        out.append({**dict(zip(key, k, strict=True)), "same": not diff, "differences": diff})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    model = get_model("qwen2.5-coder-1.5b").path_if_present()
    if model is None:
        raise SystemExit("the opt-in model is missing: labkit models fetch qwen2.5-coder-1.5b")
    commit = git_commit(repo=REPO)
    scratch = Path(tempfile.mkdtemp(prefix="labkit-parity-"))
    dialog_rows = read_rows(DIALOG / "runs.jsonl")
    users = dialog_users(dialog_rows)
    code_rows = [r.to_dict() for r in load_rows(CODE / "runs.jsonl")]  # arms by today's names
    tasks = code_tasks(code_rows)
    started = time.perf_counter()
    with serving(model, scratch / "server.log", threads=args.threads, extra=("--n_ctx", str(N_CTX))) as url:
        server = OpenAICompatBackend(url, server_kind="auto", timeout_s=600, cache_dir=scratch / "cache")
        described = server.describe()
        settings = replace(dialog.read_config(DIALOG), arms=(DIALOG_ARM,))
        print(f"dialog: {DIALOG_ARM} on {', '.join(users)}", flush=True)
        dialog_again = dialog.record(settings, Answers(live=server), scratch / "dialog", only=users,
                                     describe=described, progress=print)
        config = replace(read_config(CODE), arms=list(CODE_ARMS))
        print(f"code: {', '.join(CODE_ARMS)} on {', '.join(tasks)}", flush=True)
        code_again = run_compare(config, Answers(live=server), scratch / "code",
                                 only=[(a, t) for a in CODE_ARMS for t in tasks], describe=described, progress=print)
    record = {
        "about": "the code comparison and the dialog measurement through a real llama_cpp.server (chat completions, "
                 "schema as grammar) beside their committed in-process rows (scripts/server_parity.py)",
        "commit": commit,
        "machine": machine(),
        "server": {k: v for k, v in described.items() if k not in ("recording_to",)},
        "server_kind": server.server_kind.name,
        "model_kind": server.model_kind,
        "wall_s": round(time.perf_counter() - started, 1),
        "dialog": {"recording": str(DIALOG.relative_to(REPO)), "arm": DIALOG_ARM, "users": users,
                   "rows": compared([r for r in dialog_rows if r["arm"] == DIALOG_ARM and r["user"] in users],
                                    dialog_again, ("arm", "user"), DIALOG_IGNORED)},
        "code": {"recording": str(CODE.relative_to(REPO)), "arms": list(CODE_ARMS), "tasks": tasks,
                 "rows": compared([r for r in code_rows if r["arm"] in CODE_ARMS and r["task"] in tasks],
                                  [r.to_dict() for r in code_again], ("arm", "task"), REPLAY_IGNORED)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for part in ("dialog", "code"):
        rows = record[part]["rows"]
        print(f"{part}: {sum(r['same'] for r in rows)} of {len(rows)} rows the same through the server")
        for r in rows:
            if not r["same"]:
                print(f"  {r}: {sorted(r['differences'])}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
