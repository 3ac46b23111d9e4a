"""``labkit chat`` (talk to a scenario), and the dialog comparison as ``labkit compare dialog`` declares it.

Registered by ``labkit.cli`` through :func:`register`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from labkit.compare.command import ComparisonKind
from labkit.core.errors import LabkitError
from labkit.core.store import JsonlLog
from labkit.dialog.arms import ARMS, NAMES
from labkit.dialog.arms import arm as declared_arm
from labkit.dialog.engine import current_step
from labkit.dialog.scenario import load_scenario
from labkit.dialog.simulate import load_scenarios, load_user_script, load_user_scripts
from labkit.dialog.viewer import conversation_view, render_text
from labkit.llm.backend import Backend
from labkit.llm.models import cli_backend

DEFAULT_ARMS = ("machine", "prompt_only_checked", "bare_machine")


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


def _cmd_generate_users(args: argparse.Namespace) -> int:
    """Write the generated users of every scenario that declares a population; say how many per trait."""
    from collections import Counter

    from labkit.compare.command import split_list
    from labkit.dialog.population import write_users
    from labkit.dialog.simulate import load_scenarios

    scenarios = {name: s for name, s in load_scenarios(args.scenarios).items()
                 if (Path(s.path).parent / "population.yaml").exists()}
    wanted = split_list(args.only) or []
    unknown = sorted(set(wanted) - set(scenarios))
    if unknown:
        raise LabkitError(f"no scenario with a population.yaml named {', '.join(unknown)} in {args.scenarios}",
                          f"use some of: {', '.join(scenarios)}.")
    chosen = {n: s for n, s in scenarios.items() if not wanted or n in wanted}
    users = write_users(chosen, Path(args.out), {"dev": args.dev, "test": args.test}, args.seed)
    print(f"{len(users)} users written to {args.out}, each followed to its end by the ideal bot")
    for trait, n in sorted(Counter(t for u in users for t in u.traits).items()):
        print(f"  {trait}: {n}")
    return 0


def _plan(args: argparse.Namespace) -> Any:
    """A live recording of the dialog comparison: every arm with every scripted user, scored on the measure."""
    from labkit.compare.command import Plan, recorded_model, split_list
    from labkit.dialog import comparison

    arms = split_list(args.arms) or list(DEFAULT_ARMS)
    unknown = [a for a in arms if a not in NAMES]
    if unknown:
        raise LabkitError(f"unknown dialog arm(s): {', '.join(unknown)}", f"use some of: {', '.join(NAMES)}.")
    settings = comparison.DialogConfig(model=recorded_model(args), arms=tuple(arms),
                                       split=None if args.split == "all" else args.split,
                                       scenarios=comparison.repo_relative(Path(args.scenarios)),
                                       users_dir=comparison.repo_relative(Path(args.tasks or "data/dialog/users")))
    only = split_list(args.only)
    comparison.DialogComparison(settings, only)  # bad input fails here, before a model loads
    if args.prefix_cache and args.reuse:
        raise LabkitError("--reuse and --prefix-cache together would mix answers evaluated two ways",
                          "drop one: the two-batch cut of --prefix-cache can change a greedy answer, so answers "
                          "recorded without it are not this recording's (the dialog recordings are made without).")
    if args.prefix_cache and args.server:
        raise LabkitError("--prefix-cache is for the in-process model",
                          "drop it: a server keeps its own cache (what it says it reused is recorded anyway).")

    def keep_heads(live: Any) -> None:
        if args.prefix_cache:
            from labkit.dialog.arms import declared_prefixes

            scenarios = load_scenarios(comparison.repo_path(settings.scenarios)).values()
            live.prefixes = declared_prefixes(settings.arms, scenarios, live)

    def record(answers: Any, out: Path, resume: bool, say: Any) -> None:
        comparison.record(settings, answers, out, only=only, resume=resume, progress=say)

    return Plan(record, after_build=keep_heads)


def _replay(folder: Path, out: Path, say: Any) -> list[str]:
    from labkit.dialog import comparison

    return comparison.replay(folder, out, progress=say)


def _report(folder: Path) -> str:
    """The measure's parts per arm, read from the recording's logs, and the calls per message from its rows; for
    generated users also adherence per trait and what each ablated feature buys per trait."""
    from labkit.compare.runs import read_rows
    from labkit.dialog.ablation import ablation_by_trait, feature_trait_table
    from labkit.dialog.comparison import read_config, repo_path
    from labkit.dialog.history import content_name
    from labkit.dialog.measure import by_trait, summarize_scores, trait_table
    from labkit.dialog.population import traits_of
    from labkit.dialog.rescore import score_folder

    config = read_config(folder)
    scenarios = load_scenarios(repo_path(config.scenarios))
    users = load_user_scripts(repo_path(config.users_dir))
    rows = read_rows(folder / "runs.jsonl")
    lines = []
    scored = score_folder(folder, scenarios, users)
    for arm, scores in scored.items():
        now = content_name(arm) if config.arm_names == "rounds" else arm
        row = summarize_scores(scores)
        mine = [r for r in rows if r["arm"] == arm]
        calls, messages = sum(r["calls"] for r in mine), sum(r["user_messages"] for r in mine)
        cached = sum(r.get("cached_tokens", 0) for r in mine)
        named = f"{arm} (today {now})" if now and now != arm else arm
        lines.append(f"{named}: adhered {row['adhered']['count']}/{row['conversations']}, "
                     + ", ".join(f"{part} {row[part]['count']}"
                                 for part in ("end_step", "values", "no_invented", "moves", "asks"))
                     + f", false completions {row['false_completions']['count']}, cancels {row['cancels']['count']}; "
                     f"calls/message {calls / messages if messages else 0:.3f} ({calls}/{messages})"
                     + (f"; prompt tokens read from the cache per message {cached / messages:.1f}" if cached else ""))
    traits = {u.name: traits_of(u) for u in users}
    if any(traits.values()):  # generated users: adherence per trait, and what each ablated feature buys per trait
        lines += ["", "Adhered per trait:", "", trait_table(by_trait([s for v in scored.values() for s in v], traits))]
        if per_feature := ablation_by_trait([scored], traits):
            lines += ["", "What each feature buys per trait:", "", feature_trait_table(per_feature)]
    return "".join(line + "\n" for line in lines)


def _dialog_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenarios", default="data/dialog", help="folder of <name>/scenario.yaml (default data/dialog)")
    p.add_argument("--prefix-cache", action="store_true",
                   help="evaluate each step's declared prompt head as its own batch and keep its KV state between "
                   "calls (rows record the tokens read from it); off by default: the recordings were made without, "
                   "and the two-batch cut can change a greedy answer (labkit.llm.prefix_cache)")


COMPARISONS = {"dialog": ComparisonKind(
    name="dialog", about="the dialog comparison: every arm with every scripted user, scored on the measure",
    config_file="dialog.json", tasks_help="the folder of user scripts (default data/dialog/users)",
    arms_help=f"comma-separated arms (default {','.join(DEFAULT_ARMS)}), of: {', '.join(NAMES)}",
    options=_dialog_options, plan=_plan, replay=_replay, report=_report)}


def register(commands: Any, bench: Any) -> None:
    """Add ``labkit chat`` to the main parser."""
    del bench
    p = commands.add_parser("chat", help="talk to a YAML dialog scenario (interactive, or --script USER_TURNS.yaml)")
    p.add_argument("scenario", help="a scenario.yaml file")
    p.add_argument("--script", help="a user-turns YAML file (turns: [...]): run it non-interactively")
    p.add_argument("--model", help="a registered model name (see `labkit models list`) or a GGUF path; "
                   "default the embedded model")
    p.add_argument("--arm", choices=NAMES, default="machine",
                   help="a declared arm (default machine): " + "; ".join(f"{a.name}: {a.about}" for a in ARMS[:4])
                   + "; machine_without_<feature>: the machine without one feature")
    p.add_argument("--log", help="append the conversation's events to this JSONL file (resumes if it exists)")
    p.add_argument("--record", metavar="CASSETTE", help="record every model call to this cassette")
    p.add_argument("--replay", metavar="CASSETTE", help="answer from this cassette, never from a model")
    p.add_argument("--show-prompts", action="store_true", help="with --script: print every prompt and raw answer")
    p.add_argument("--verbose", action="store_true", help="interactive: show steps and calls after each reply")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default: every core; on a shared, busy machine "
                   "1 thread was several times faster than 2 here, because busy threads wait for each other)")
    p.set_defaults(func=_cmd_chat)
    p = commands.add_parser("generate-users", help="generate, check and write many scripted users per scenario "
                            "from its population.yaml (dev and test pools disjoint)")
    p.add_argument("--scenarios", default="data/dialog", help="a folder of <name>/scenario.yaml (default data/dialog)")
    p.add_argument("--only", help="comma-separated scenario names (default: every scenario with a population.yaml)")
    p.add_argument("--dev", type=int, default=200, help="dev users per scenario (default 200)")
    p.add_argument("--test", type=int, default=300, help="test users per scenario (default 300)")
    p.add_argument("--seed", type=int, default=2026, help="the generator's seed (default 2026)")
    p.add_argument("--out", required=True, help="the folder the user files go to (give it to compare dialog --tasks)")
    p.set_defaults(func=_cmd_generate_users)
