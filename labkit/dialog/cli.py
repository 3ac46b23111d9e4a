"""``labkit chat`` (talk to a scenario) and ``labkit dialog-measure`` (the recorded comparison).

Registered by ``labkit.cli`` through :func:`register`.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from labkit.dialog.arms import ARMS, NAMES
from labkit.dialog.arms import arm as declared_arm
from labkit.dialog.engine import current_step
from labkit.dialog.scenario import load_scenario
from labkit.dialog.simulate import (
    load_scenarios,
    load_user_script,
    load_user_scripts,
    measure,
    result_from_dict,
    summarize,
    write_json,
)
from labkit.dialog.viewer import conversation_view, render_text
from labkit.errors import LabkitError
from labkit.llm.backend import Backend
from labkit.llm.models import cli_backend, model_backend
from labkit.provenance import git_commit
from labkit.store import JsonlLog


def _backend(args: argparse.Namespace) -> Backend:
    return cli_backend(args.model, threads=args.threads, record=args.record, replay=args.replay)


def _cmd_chat(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    backend = _backend(args)
    log = JsonlLog(args.log) if args.log else None
    bot = declared_arm(args.arm).make(scenario, backend, log=log)
    if args.script:
        script = load_user_script(args.script)
        for text in script.turns:
            if bot.finished:
                break
            bot.respond(text)
        print(render_text(conversation_view(bot.events), show_prompts=args.show_prompts))
        state = bot.state
        print(f"-- ended in step {current_step(bot)}; "
              f"{state.calls} model call(s) for {state.user_messages} user message(s); variables: {state.variables}")
        return 0
    print(f"{scenario.title} (step {bot.state.status}); an empty line or Ctrl-D ends the chat.")
    while not bot.finished:
        try:
            text = input("you> ").strip()
        except EOFError:
            break
        if not text:
            break
        outcome = bot.respond(text)
        print(f"bot> {outcome.reply}")
        if args.verbose:
            print(f"     [{outcome.step_before} -> {outcome.step_after}, {outcome.calls} call(s), {outcome.outcome}]")
    return 0


def _cmd_measure(args: argparse.Namespace) -> int:
    scenarios = load_scenarios(args.scenarios)
    users = load_user_scripts(args.users, split=args.split)
    if args.only:
        wanted = set(args.only.split(","))
        users = [u for u in users if u.name in wanted or u.name.split("_")[0] in wanted]
    out = Path(args.out) / args.model
    from labkit.llm.cassette import RecordingBackend, ReplayBackend

    previous = None
    if (args.add or args.replay) and (out / "provenance.json").exists():
        previous = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    if args.replay and previous is not None and not args.only:
        users = [u for u in users if u.name in previous["users"]]
    if args.add:
        if previous is None or previous["arms"] != args.arms:
            raise LabkitError(f"--add extends an earlier recording with the same arms; none found in {out}",
                              "record without --add first, with the same --arms.")
        users = [u for u in users if u.name not in previous["users"]]
    commit = git_commit(own_output=out)
    backend: Backend
    if args.replay:
        backend = ReplayBackend(out / "cassette.jsonl")
    else:
        backend = RecordingBackend(model_backend(args.model, threads=args.threads), out / "cassette.jsonl")

    def progress(r: Any) -> None:
        print(f"{args.model} {r.arm:11s} {r.user:26s} end={r.end_step:12s} calls={r.calls}/{r.user_messages} "
              f"adhered={r.adhered}", flush=True)

    started = time.perf_counter()
    results, summary = measure(scenarios, users, backend, args.arms, log_dir=out / "logs", progress=progress)
    seconds = round(time.perf_counter() - started, 1)
    if args.replay:
        recorded = json.loads((out / "results.json").read_text(encoding="utf-8"))
        if [r.to_dict() for r in results] != recorded:
            raise LabkitError(f"replaying {out / 'cassette.jsonl'} does not give the recorded {out / 'results.json'}",
                              "the engine's prompts or checks changed since the recording; record again.")
        print(f"replayed from the cassette: results identical to {out / 'results.json'}; event logs rewritten")
    else:
        rows = [r.to_dict() for r in results]
        batch = {"argv": sys.argv[1:], "git_commit": commit, "users": [u.name for u in users], "seconds": seconds}
        batches = [batch]
        if args.add and previous is not None:
            order = {arm: i for i, arm in enumerate(args.arms)}
            old = json.loads((out / "results.json").read_text(encoding="utf-8"))
            rows = sorted(old + rows, key=lambda r: (order[r["arm"]], r["user"]))
            batches = previous.get("batches", [{k: previous[k] for k in ("argv", "git_commit", "users", "seconds")}])
            batches = [*batches, batch]
            summary = {arm: summarize([result_from_dict(r) for r in rows if r["arm"] == arm]) for arm in args.arms}
        write_json(out / "results.json", rows)
        write_json(out / "summary.json", summary)
        write_json(out / "provenance.json", {
            "backend": backend.describe(), "git_commit": batches[0]["git_commit"], "python": platform.python_version(),
            "argv": batches[0]["argv"], "arms": args.arms, "users": sorted(u for b in batches for u in b["users"]),
            "seconds": round(sum(b["seconds"] for b in batches), 1), "batches": batches,
            "decoding": "greedy (temperature 0, seed 0)", "machine": platform.machine()})
    for arm, row in summary.items():
        print(f"{arm}: adhered {row['adhered']}/{row['conversations']} {row['adherence_ci95']}, calls/message "
              f"{row['calls_per_message']}, re-asks {row['reasks']}, violations {row['contract_violations']}, "
              f"failures {row['contract_failures']}, prompt tokens mean {row['prompt_tokens_mean']}")
    from labkit.dialog.measure import summarize_scores
    from labkit.dialog.rescore import score_recording

    for arm, scores in score_recording(out, scenarios, load_user_scripts(args.users)).items():
        row = summarize_scores(scores)
        print(f"{arm} on the measure: adhered {row['adhered']['count']}/{row['conversations']}, "
              + ", ".join(f"{part} {row[part]['count']}" for part in ("end_step", "values", "no_invented", "moves",
                                                                         "asks"))
              + f", false completions {row['false_completions']['count']}, cancels {row['cancels']['count']}")
    return 0


def register(commands: Any, bench: Any) -> None:
    """Add ``labkit chat`` and ``labkit dialog-measure`` to the main parser."""
    del bench
    p = commands.add_parser("chat", help="talk to a YAML dialog scenario (interactive, or --script USER_TURNS.yaml)")
    p.add_argument("scenario", help="a scenario.yaml file")
    p.add_argument("--script", help="a user-turns YAML file (turns: [...]): run it non-interactively")
    p.add_argument("--model", help="a registered model name (see `labkit models list`) or a GGUF path; "
                   "default the embedded model")
    p.add_argument("--arm", choices=NAMES, default="machine",
                   help="machine (the engine as first recorded, default), prompt_only (the whole script in one "
                   "prompt), or a declared arm: " + "; ".join(f"{a.name}: {a.about}" for a in ARMS[2:4]))
    p.add_argument("--log", help="append the conversation's events to this JSONL file (resumes if it exists)")
    p.add_argument("--record", metavar="CASSETTE", help="record every model call to this cassette")
    p.add_argument("--replay", metavar="CASSETTE", help="answer from this cassette, never from a model")
    p.add_argument("--show-prompts", action="store_true", help="with --script: print every prompt and raw answer")
    p.add_argument("--verbose", action="store_true", help="interactive: show steps and calls after each reply")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: every core; on a shared, busy machine "
                   "1 thread was several times faster than 2 here, because busy threads wait for each other)")
    p.set_defaults(func=_cmd_chat)

    p = commands.add_parser("dialog-measure", help="run the scripted users against both bots and record the runs")
    p.add_argument("--model", default="gemma3-270m", help="registered model name (default gemma3-270m)")
    p.add_argument("--arms", nargs="+", choices=NAMES, default=["machine", "prompt_only"], metavar="ARM",
                   help="the arms (labkit/dialog/arms.py): machine and prompt_only as first recorded, "
                   "prompt_only_checked, machine_plus (every feature), machine_plus_no_<feature> (ablation); "
                   "one or more of: " + ", ".join(NAMES))
    p.add_argument("--split", choices=["dev", "test"], help="only the dev users (design) or the test users (report)")
    p.add_argument("--scenarios", default="data/dialog", help="folder of <name>/scenario.yaml (default data/dialog)")
    p.add_argument("--users", default="data/dialog/users", help="folder of user scripts (default data/dialog/users)")
    p.add_argument("--only", help="comma-separated user script names or prefixes (a01,s03) to run a subset")
    p.add_argument("--out", default="data/dialog/runs", help="results folder (default data/dialog/runs)")
    p.add_argument("--add", action="store_true", help="record only users not yet in the recording and merge them "
                   "into it (a long run in batches)")
    p.add_argument("--replay", action="store_true", help="re-run from the recorded cassette (no model): check the "
                   "results against results.json and rewrite the event logs")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: every core; on a shared, busy machine "
                   "1 thread was several times faster than 2 here, because busy threads wait for each other)")
    p.set_defaults(func=_cmd_measure)
