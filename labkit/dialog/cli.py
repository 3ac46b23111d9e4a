"""``labkit chat`` (talk to a scenario) and ``labkit dialog-measure`` (the recorded comparison).

Registered by ``labkit.cli`` through :func:`register`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.core.store import JsonlLog
from labkit.dialog.arms import ARMS, NAMES
from labkit.dialog.arms import arm as declared_arm
from labkit.dialog.engine import current_step
from labkit.dialog.scenario import load_scenario
from labkit.dialog.simulate import load_scenarios, load_user_script, load_user_scripts
from labkit.dialog.viewer import conversation_view, render_text
from labkit.llm.backend import Backend
from labkit.llm.models import DEFAULT_MODEL, cli_backend, model_backend
from labkit.llm.server_options import add_server_options, add_slots_option


def _backend(args: argparse.Namespace) -> Backend:
    return cli_backend(args.model, threads=args.threads, record=args.record, replay=args.replay)


def _cmd_chat(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    script = load_user_script(args.script) if args.script else None  # a broken script fails before a model loads
    backend = _backend(args)
    log = JsonlLog(args.log) if args.log else None
    bot = declared_arm(args.arm).make(scenario, backend, log=log)
    if script is not None:
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
    """Record (or resume) arms × users into --out with the one runner, or replay a recording and check it."""
    import tempfile

    from labkit.compare.runs import Answers, clean_commit
    from labkit.dialog import comparison

    if args.replay and args.reuse:
        raise LabkitError("--reuse is for a live recording; a replay answers every call from its own cassettes",
                          "drop --reuse.")
    if args.replay:
        folder = Path(args.replay)
        with tempfile.TemporaryDirectory(prefix="labkit-dialog-replay-") as scratch:
            problems = comparison.replay(folder, Path(scratch), progress=None if args.quiet else print)
        for line in problems:
            print(f"DIFFERS: {line}")
        print("every conversation reproduced, row and event log" if not problems
              else f"{len(problems)} difference(s)")
        if not problems:
            _print_report(folder)
        return 0 if not problems else 1
    if not args.out:
        raise LabkitError("--out is missing", "give a folder to record into (or --replay a recorded one).")
    model = args.model or ("" if args.server else DEFAULT_MODEL)
    settings = comparison.DialogConfig(model=(args.server_model or "server") if args.server else model,
                                       arms=tuple(args.arms), split=args.split,
                                       scenarios=comparison.repo_relative(Path(args.scenarios)),
                                       users_dir=comparison.repo_relative(Path(args.users)))
    out = Path(args.out)
    comparison.DialogComparison(settings, args.only.split(",") if args.only else None)  # bad input fails here
    clean_commit(out)  # a recording into data/ names a commit, not a dirty tree
    from labkit.llm.server_options import live_backend

    if args.prefix_cache and args.reuse:
        raise LabkitError("--reuse and --prefix-cache together would mix answers evaluated two ways",
                          "drop one: the two-batch cut of --prefix-cache can change a greedy answer, so answers "
                          "recorded without it are not this recording's (the dialog recordings are made without).")
    if args.prefix_cache and args.server:
        raise LabkitError("--prefix-cache is for the in-process model",
                          "drop it: a server keeps its own cache (what it says it reused is recorded anyway).")
    live = live_backend(args, lambda: model_backend(model, threads=args.threads))
    if args.prefix_cache:
        from labkit.dialog.arms import declared_prefixes

        scenarios = load_scenarios(comparison.repo_path(settings.scenarios)).values()
        live.prefixes = declared_prefixes(settings.arms, scenarios, live)
    if args.reuse:
        from labkit.llm.cassette import reusing

        live = reusing(live, Path(args.reuse), server=bool(args.server))
    comparison.record(settings, Answers(live=live), out, only=args.only.split(",") if args.only else None,
                      resume=args.resume, progress=None if args.quiet else print)
    if args.reuse:
        print(f"{live.hits} call(s) answered from {args.reuse}'s cassettes, {live.misses} by the model")
    _print_report(out)
    return 0


def _print_report(folder: Path) -> None:
    """The measure's parts per arm, read from the recording's logs, and the legacy counts from its rows."""
    from labkit.compare.runs import read_rows
    from labkit.dialog.comparison import read_config, repo_path
    from labkit.dialog.measure import summarize_scores
    from labkit.dialog.rescore import score_folder

    config = read_config(folder)
    scenarios = load_scenarios(repo_path(config.scenarios))
    users = load_user_scripts(repo_path(config.users_dir))
    rows = read_rows(folder / "runs.jsonl")
    for arm, scores in score_folder(folder, scenarios, users).items():
        row = summarize_scores(scores)
        mine = [r for r in rows if r["arm"] == arm]
        calls, messages = sum(r["calls"] for r in mine), sum(r["user_messages"] for r in mine)
        cached = sum(r.get("cached_tokens", 0) for r in mine)
        print(f"{arm}: adhered {row['adhered']['count']}/{row['conversations']}, "
              + ", ".join(f"{part} {row[part]['count']}" for part in ("end_step", "values", "no_invented", "moves",
                                                                         "asks"))
              + f", false completions {row['false_completions']['count']}, cancels {row['cancels']['count']}; "
              f"calls/message {calls / messages if messages else 0:.3f} ({calls}/{messages})"
              + (f"; prompt tokens read from the cache per message {cached / messages:.1f}" if cached else ""))


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

    p = commands.add_parser("dialog-measure", help="the dialog comparison: every arm with every scripted user, "
                            "scored on the measure (record, resume, or --replay)")
    p.add_argument("--model", help="registered model name or GGUF path (default gemma3-270m, the embedded model)")
    p.add_argument("--arms", nargs="+", choices=NAMES, default=["machine_plus", "prompt_only_checked", "machine"],
                   metavar="ARM", help="the arms (labkit/dialog/arms.py; default machine_plus prompt_only_checked "
                   "machine): machine and prompt_only as first recorded, prompt_only_checked, machine_plus (every "
                   "feature), machine_plus_no_<feature> (ablation); one or more of: " + ", ".join(NAMES))
    p.add_argument("--split", choices=["dev", "test"], help="only the dev users (design) or the test users (report)")
    p.add_argument("--scenarios", default="data/dialog", help="folder of <name>/scenario.yaml (default data/dialog)")
    p.add_argument("--users", default="data/dialog/users", help="folder of user scripts (default data/dialog/users)")
    p.add_argument("--only", help="comma-separated user script names or prefixes (a01,s03): this stretch records "
                   "only them (--resume adds the others later)")
    p.add_argument("--out", help="the recording's folder (e.g. data/dialog/runs_test/qwen2.5-coder-1.5b)")
    p.add_argument("--resume", action="store_true", help="continue the recording in --out (the same options; more "
                   "users with --only, or more arms): its conversations are kept, the others run")
    p.add_argument("--replay", metavar="DIR", help="re-run a recording from its cassettes (no model) and check every "
                   "row and event log against it")
    p.add_argument("--reuse", metavar="DIR", help="answer every call whose very request a recorded folder's "
                   "cassettes hold from there (marked replayed in the new cassette; the provenance names the "
                   "folder), e.g. a design round's conversations that its new rule leaves unchanged; the other calls "
                   "go to the model")
    p.add_argument("--quiet", action="store_true", help="no per-conversation progress lines")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: every core; on a shared, busy machine "
                   "1 thread was several times faster than 2 here, because busy threads wait for each other)")
    p.add_argument("--prefix-cache", action="store_true",
                   help="evaluate each step's declared prompt head as its own batch and keep its KV state between "
                   "calls (rows record the tokens read from it); off by default: the recordings were made without, "
                   "and the two-batch cut can change a greedy answer (labkit.llm.prefix_cache)")
    add_server_options(p, server_help="an OpenAI-compatible server's base URL instead of an in-process model; give "
                       "it once per server to spread the conversations over several servers of one model")
    add_slots_option(p)
    p.set_defaults(func=_cmd_measure)
