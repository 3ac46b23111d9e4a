# %% [markdown]
# # 05 — The model inside the machine: dialog scripts as YAML state machines
#
# **After this notebook you can**
# - say why a long script in one prompt drifts, and what a machine that owns the script changes;
# - read and write a dialog [scenario](../docs/glossary.md) in YAML — its steps, results and
#   [signals](../docs/glossary.md) — and see its diagram;
# - follow one conversation turn by turn with the real prompts and answers;
# - explain the four-field [contract](../docs/glossary.md), what [grammar-constrained
#   decoding](../docs/glossary.md) can and cannot guarantee, and the one corrective [re-ask](../docs/glossary.md);
# - read a measured comparison — [calls per user message](../docs/glossary.md), contract violations,
#   [script adherence](../docs/glossary.md) with [Wilson intervals](../docs/glossary.md) and paired tests — and
#   tell a measure that a do-nothing bot passes from one it cannot;
# - say what each feature of the machine (worked example, results grammar, memory for early values, cancel
#   confirmation, corrections, grounded values, the step's question, carried messages, differing re-asks) is for,
#   and read what it bought on users the design never saw.
#
# **Prerequisites:** notebooks 01 ([transition table](../docs/glossary.md), [guard](../docs/glossary.md)) and 03
# ([event log](../docs/glossary.md), [replay](../docs/glossary.md)). **Time:** about 75 minutes, the quiz included.
# The **Predict** boxes hide their answer until you choose and press *check*.
#
# Nothing here runs a model. Every answer shown was recorded live (`labkit compare dialog`, greedy decoding:
# [temperature](../docs/glossary.md) 0) into the [cassettes](../docs/glossary.md) under
# `data/dialog/runs/<model>/` (the first recording) and `data/dialog/runs_test/<model>/` (the machine with its
# features, on the test users), and is replayed or re-scored from them; outputs differ slightly across CPUs, so
# a live re-run on your machine may not give these exact conversations; a prompt that is not in a cassette would
# be an error, never a live call. The models are a 270M [base model](../docs/glossary.md) and a 1.5B chat model, both
# [GGUF](../docs/glossary.md) files run by llama.cpp.

# %%
import json
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown

from labkit import predict
from labkit.compare.runs import read_rows
from labkit.compare.stats import sign_test_p
from labkit.core.diagram import mermaid_markdown
from labkit.core.drawio import to_drawio
from labkit.core.store import read_jsonl
from labkit.dialog import (
    ChatViewer,
    DialogBot,
    ModelCalled,
    conversation_view,
    load_scenario,
    load_user_scripts,
    render_text,
)
from labkit.dialog.ablation import (
    ablation_summary,
    ablation_table,
    dev_ablation,
    round_rows,
    round_summary,
    round_table,
)
from labkit.dialog.comparison import replay
from labkit.dialog.features import FEATURES
from labkit.dialog.floors import CopiesExamples, NeverMoves, floor_runs
from labkit.dialog.history import label, without_rounds
from labkit.dialog.measure import PARTS, compare_arms
from labkit.dialog.rescore import counts, report, score_runs
from labkit.dialog.simulate import load_scenarios
from labkit.dialog.targets import check_targets
from labkit.llm.cassette import ReplayBackend

DATA = Path("..") / "data" / "dialog"
RUNS = DATA / "runs"
MODELS = [m for m in ("gemma3-270m", "qwen2.5-coder-1.5b") if (RUNS / m / "runs.jsonl").exists()]
analyst = load_scenario(DATA / "analyst" / "scenario.yaml")
print("recorded models:", ", ".join(MODELS))

# %% [markdown]
# ## 1. Why a long script in one prompt drifts
#
# A chatbot that must follow a script — ask for the goal, then the users, then the must-haves … — is usually
# built by pasting the whole script into one system prompt and appending the conversation. Every turn, the model
# must find *where it is* in that script by itself: which questions are answered, which one comes next, what
# counts as an answer. Nothing holds it to a step; a user who goes off-topic, corrects something or says "go
# back" pulls it anywhere, and the prompt grows with every turn.
#
# The alternative from the seed material: a finite-state machine owns the script. The model sees only the
# current step's instructions, the variables collected so far, one-line summaries of past steps and the last
# few turns, and answers in a fixed format that the machine checks. Here is the size of the two prompts for the
# analyst scenario, before a single turn is added:

# %%
whole = analyst.full_script()
step_only = analyst.step("deadline").instructions
print(f"whole script: {len(whole)} characters; one step's instructions: {len(step_only)} characters")

# %% [markdown]
# ## 2. The scenario in YAML, and its diagram
#
# A scenario is data. Each step names its instructions file (Markdown), the results it produces (a typed
# field per result; the engine turns them into a pydantic model and a JSON schema) and its signals — where each
# leads, and which results must be known before it may be emitted (`needs`).

# %%
print((DATA / "analyst" / "scenario.yaml").read_text(encoding="utf-8")[:1500])

# %% [markdown]
# Loading compiles the scenario into labkit's checked `TransitionTable`, so the build checks of notebook 01
# apply: unknown targets, unreachable steps, dead ends. A mistake in the file is named by file, line and column:

# %%
broken = (DATA / "analyst" / "scenario.yaml").read_text(encoding="utf-8").replace("to: review", "to: reveiw")
try:
    from labkit.dialog import parse_scenario

    parse_scenario(broken, "analyst/scenario.yaml", base=DATA / "analyst")
except Exception as exc:  # a ScenarioError
    print(exc)

# %%
Markdown(mermaid_markdown(analyst.table))

# %% [markdown]
# The same table as a draw.io file (`labkit diagram data/dialog/analyst/scenario.yaml --drawio analyst.drawio`),
# for a reviewer who wants to drag boxes around. It is mxGraph XML: one vertex per step, one edge per signal.

# %%
xml = to_drawio(analyst.table)
print(xml[:600])
print("…", xml.count('vertex="1"'), "vertices,", xml.count('edge="1"'), "edges")

# %% [markdown]
# ## 3. One conversation, turn by turn
#
# The scripted user `a02_offtopic` opens with "What is the weather like today?" while the step is `goal`. The
# conversation is replayed from the cassette of the larger recorded model: the engine builds each prompt again,
# and the cassette answers it. Every prompt shown is the one the model read.

# %%
TRACE_MODEL = MODELS[-1]
users = {u.name: u for u in load_user_scripts(DATA / "users")}
viewer = ChatViewer()
bot = DialogBot(analyst, ReplayBackend(RUNS / TRACE_MODEL / "cassettes" / "machine.jsonl"), clock=lambda: 0.0,
                on_event=viewer.push)
for text in users["a02_offtopic"].turns:
    if bot.finished:
        break
    bot.respond(text)
turns = conversation_view(bot.events)
goal_step = analyst.step("goal")
print(f"replayed {len(turns)} turns of {TRACE_MODEL}")
print("signals of step goal:", {s.name: f"to {s.to}" + (f", needs {list(s.needs)}" if s.needs else "")
                                for s in goal_step.signals})

# %% jupyter={"source_hidden": true}
first_signal = next(e.details["signal"] for e in turns[0].log if e.kind == "transition")
predict("The user's first message is off-topic. Which signal did the recorded model emit in step goal?",
        ["next", "stay", "a signal the step does not have"],
        first_signal if first_signal in ("next", "stay") else "a signal the step does not have",
        f"It emitted {first_signal!r}, and the conversation is in step {turns[0].step_after!r} after the turn. The "
        "grammar lets it choose only `next` or `stay`; the step's instructions ask for `stay` on an off-topic "
        "message; and `next` needs `goal`, which nobody has given yet, so the engine would have refused it anyway.")

# %% tags=["reveal"]
print(f"ended in step {bot.state.status}; variables: {json.dumps(bot.state.variables)}")
print(render_text(turns))

# %% [markdown]
# The first turn's prompt and raw answer, exactly. Note what is *not* in the prompt: the other steps.

# %%
first_call = turns[0].log[0].details
print(first_call["prompt"])
print("RAW ANSWER:", first_call["raw"])
print("prompt tokens:", first_call["prompt_tokens"])

# %% [markdown]
# The chat viewer (an ipywidget) shows the same conversation with each turn's system log folded under it; pass
# `viewer.push` to a bot as `on_event` and it updates while the conversation runs.

# %%
viewer  # NBVAL_IGNORE_OUTPUT

# %% [markdown]
# ## 4. A broken contract and its re-ask
#
# Every answer must be one JSON object with four fields: `message`, `signal`, `results`, `summary`. The grammar
# built from the step's schema makes the *shape* near-certain and restricts `signal` to the step's own signals;
# it cannot know that `next` needs the goal, and a long answer cut off at the token limit is not JSON at all.
# The engine checks, and on a violation makes **one** follow-up call that names it. Here is the first recorded
# violation in the machine arm of each model.

# %%
def first_violation(model: str) -> tuple[str, list[ModelCalled]] | None:
    for path in sorted((RUNS / model / "logs" / "machine").glob("*.jsonl")):
        calls = [e for e in read_jsonl(path).events if isinstance(e, ModelCalled)]
        for i, call in enumerate(calls):
            if call.violation and call.attempt == 1:
                return path.stem, calls[i:i + 2]
    return None


# %% jupyter={"source_hidden": true}
_model = next((m for m in reversed(MODELS) if first_violation(m)), None)
_found = first_violation(_model) if _model else None
_repaired = bool(_found and len(_found[1]) > 1 and not _found[1][1].violation)
(predict(f"The {_model} model's first broken answer is re-asked once, with the violation named, at "
         "temperature 0. Does its second answer keep the contract?",
         ["yes, the re-ask repairs it", "no, it breaks the contract again"],
         "yes, the re-ask repairs it" if _repaired else "no, it breaks the contract again",
         "With greedy decoding the second call sees nearly the same prompt (only the note about the violation is "
         "added), and a small model tends to give nearly the same answer. Compare the 're-asks' and 'repaired' "
         "columns of the table in section 5 for every model.")
 if _found else Markdown("No recorded model broke the contract, so there is nothing to predict here."))

# %% tags=["reveal"]
for model in MODELS:
    found = first_violation(model)
    if found is None:
        print(f"{model}: no violation recorded")
        continue
    user, (broken_call, *reask) = found
    print(f"== {model}, user {user}, step {broken_call.step}, turn {broken_call.turn}")
    print("first answer :", broken_call.raw[:300])
    print("violation    :", broken_call.violation, "-", broken_call.detail)
    if reask:
        tail = reask[0].prompt[reask[0].prompt.index("That answer broke"):]
        print("re-ask asks  :", tail.replace("\n", " ")[:300])
        print("second answer:", reask[0].raw[:300])
        print("verdict      :", reask[0].violation or "kept the contract")

# %% [markdown]
# ## 5. The first recording, and a measure a do-nothing bot cannot pass
#
# The first recording ran 22 scripted users (`data/dialog/users/`: cooperative ones, and ones who go off-topic,
# correct an answer, say "go back", refuse to give a deadline or an email, stop half-way, or never confirm)
# against the machine as first built and against a prompt-only bot that gets the whole script in one prompt. Its
# check looked at the end step and at words each value must *contain*. The table is recomputed here by replaying
# every recorded conversation from its cassettes, checked against the rows written when it was recorded. (The
# 1.5B model was recorded in batches; each batch's command, commit and users are in its `provenance.jsonl`.)

# %%
scenarios = load_scenarios(DATA)
all_users = load_user_scripts(DATA / "users")
summaries = {}
for model in MODELS:
    provenance = json.loads((RUNS / model / "provenance.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert replay(RUNS / model, Path(tempfile.mkdtemp())) == [], f"{model}: replay differs from the recording"
    summaries[model] = counts(RUNS / model)
    print(f"{model}: {sum(s['conversations'] for s in summaries[model].values())} conversations replayed, identical "
          f"to the recording (model sha256 {provenance['backend']['model_sha256'][:12]}…, llama-cpp-python "
          f"{provenance['backend']['llama_cpp_python']}, commit {provenance['git_commit'][:10]})")


def pct(pair: list[float]) -> str:
    return f"{pair[0]:.0%}–{pair[1]:.0%}"


rows = ["| model | arm | conversations | adhered, first check (95% Wilson) | calls / user message | "
        "re-asks (repaired) | violations | prompt tokens (mean / max) |", "|---|---|---|---|---|---|---|---|"]
for model, summary in summaries.items():
    for arm, s in summary.items():
        rows.append(f"| {model} | {arm} | {s['conversations']} | {s['adhered']} ({pct(s['adherence_ci95'])}) | "
                    f"{s['calls_per_message']} ({s['calls']}/{s['user_messages']}) | {s['reasks']} "
                    f"({s['reasks_repaired']}) | {s['contract_violations']} | "
                    f"{s['prompt_tokens_mean']} / {s['prompt_tokens_max']} |")
Markdown("\n".join(rows))

# %% [markdown]
# Both arms look alike, and both look poor. But what does that check reward? Two *floor bots* answer every call
# without understanding anything (`labkit.dialog.floors`): `NeverMoves` always stays in its step and records
# nothing; `CopiesExamples` moves on with each step's example phrases as values. They run through the real
# machine, contract checks and all.

# %% jupyter={"source_hidden": true}
first_users = [u for u in all_users if u.name in {r["task"] for r in read_rows(RUNS / MODELS[0] / "runs.jsonl")}]
never = floor_runs(NeverMoves, scenarios, first_users)
_legacy = sum(r.adhered for _, r in never)
predict("A bot that never moves and records nothing talks to the first recording's 22 users. How many does the "
        "first check count as adhered?", ["0", "1 or 2", "5 or more"],
        "0" if _legacy == 0 else "1 or 2" if _legacy <= 2 else "5 or more",
        f"{_legacy} of {len(never)}: the users who should leave the bot in its first step with nothing recorded "
        "(a vague goal, a message with no issue). Doing nothing is right for them under a check that looks at the "
        "end step and the values only — the same count as the 270M model in both arms.")

# %% tags=["reveal"]
copies = floor_runs(CopiesExamples, scenarios, first_users)
for name, runs in (("NeverMoves", never), ("CopiesExamples", copies)):
    print(f"{name:15s} first check: {sum(r.adhered for _, r in runs)}/{len(runs)} adhered "
          f"({', '.join(r.user for _, r in runs if r.adhered) or 'none'}); "
          f"the measure: {sum(s.adhered for s, _ in runs)}/{len(runs)}")

# %% [markdown]
# So the kit measures differently now (`labkit.dialog.measure`). A conversation *adheres* only if all five parts
# hold: **end_step** (it stands where the user's script says), **values** (every expected value right: normalised
# exact match with one declared phrasing, a list item by item — not a substring: "me" is inside "my team"),
# **no_invented** (no variable set that the user never gave), **moves** (every move one the script allows, with
# what it `needs` known), and **asks** (while a step still needs something, the bot's reply asks for it, judged by
# keywords the scenario declares per step). The floor bots score 0 on every user, in every arm (tests:
# `tests/test_dialog_measure.py`, `tests/test_dialog_features.py`). The first recording, re-scored from its event
# logs on the measure:

# %%
first = score_runs(RUNS, scenarios, all_users)
Markdown(report(first)["table"])

# %% [markdown]
# Read the parts, not only the last columns: the machine arm's `moves` are always allowed (the machine makes the
# moves), while the prompt-only bot claims moves the script does not have; and almost nothing *adheres*. The logs
# show why the machine failed (issue 24 lists them): no example answer in the step prompt, empty `results` for a
# `next` refused again and again, a re-ask that repeats the same greedy answer, values given early asked for
# again, a `cancel` on the first message with no second thought. The prompt-only bot had no `needs` check at all,
# so its "0 violations" did not mean what the machine's did.
#
# ## 6. What the machine adds, one declaration each
#
# Each answer to one of those failures is a *feature* of the machine (`labkit/dialog/features.py`), switched on
# by name; an arm is the machine plus a set of features (`labkit/dialog/arms.py`), so an ablation — every feature
# but one — is one more declaration, not another program. `prompt_only_checked` is the prompt-only bot under the
# same validator and `needs` checks as the machine, so a violation means the same in both arms.

# %%
Markdown("\n".join(["| feature | what it does |", "|---|---|"]
                   + [f"| `{f.name}` | {f.about} |" for f in FEATURES]))

# %% [markdown]
# **What each feature buys.** Every feature, and each of the two rules inside features, has an ablation: the same
# arm without it, on the dev users (design data, never the report). The features and rules of `machine_plus` were
# ablated on the first dev users of each scenario, recorded a few users at a time (`labkit compare dialog --only
# a05,s05 --resume`); the features of the later design rounds (§9) on all the dev users, each against the round
# before it. A round's arm is shown by the feature it added: `+ results_first` is `machine_plus` with
# `results_first`, and the round after it is `+ more_examples`. One row per pair, paired by user (the users
# column); "parts that moved" counts users per part of the measure, so a feature that buys no adherence can still
# show what it changes:

# %%
_q = "qwen2.5-coder-1.5b"
ablation = dev_ablation(DATA, _q, scenarios, all_users)
print(ablation_summary(ablation))
_fewest = min(r["users"] for r in ablation)
print(f"The smallest p a sign test over {_fewest} users can give (all of them one way): {sign_test_p(_fewest, 0):.3g}")
Markdown(ablation_table(ablation, name=label))

# %% [markdown]
# Read it for where to look next, not as a result: so few users per row can show a feature that decides whole
# conversations and little else. One user counts against a feature
# for the script's sake, not the feature's: the dev user `s03_cancel` says "never mind" once, says nothing more,
# and expects the conversation cancelled; under `cancel_confirm` the bot asks whether to cancel and waits for an
# answer that never comes, so every arm with that feature fails that user (the other users who cancel, one on
# dev and one on test, answer the question, as the feature expects).

# %% [markdown]
# The features were designed on the **dev** users only (10 per scenario); the **test** users (15 per scenario)
# were not looked at until the recording below, which is what the kit reports.
#
# ## 7. Measured on the test users
#
# Both models (the 1.5B chat model, and the embedded 270M base model, which is reported whatever it scores), greedy,
# every test user, three arms: `machine_plus` (every feature it had then), `prompt_only_checked` (the strongest
# prompt-only bot under the same contract) and `machine` (the machine as first built: what the features buy). The
# design rounds that came after were recorded on these users too; §9 shows them round by round. Scored from the
# event logs; paired exact tests by user. Live numbers differ slightly across CPUs; these are the recording's.

# %%
TEST = DATA / "runs_test"
tested = {model: without_rounds(arms) for model, arms in score_runs(TEST, scenarios, all_users).items()}
test_report = report(tested)
test_counts = {model: without_rounds(counts(TEST / model)) for model in tested}
Markdown(test_report["table"])

# %% jupyter={"source_hidden": true}
_plus = test_report["summaries"][("qwen2.5-coder-1.5b", "machine_plus")]["adhered"]
_only = test_report["summaries"][("qwen2.5-coder-1.5b", "prompt_only_checked")]["adhered"]
predict("On the test users, is the 1.5B model's machine_plus adherence at least twice the prompt-only bot's, "
        "with the paired test below 0.05?", ["yes", "twice or more, but the test is not below 0.05",
                                             "less than twice"],
        "less than twice" if _plus["count"] < 2 * _only["count"] else
        "yes" if compare_arms(tested["qwen2.5-coder-1.5b"]["machine_plus"],
                              tested["qwen2.5-coder-1.5b"]["prompt_only_checked"])["adhered"].p_value < 0.05
        else "twice or more, but the test is not below 0.05",
        f"machine_plus {_plus['count']}/{_plus['of']}, prompt_only_checked {_only['count']}/{_only['of']}; the "
        "paired tests are in the next cell.")

# %% tags=["reveal"]
for model, pairs in test_report["paired_arms"].items():
    for pair, tests in pairs.items():
        print(f"== {model}, {pair}, paired by user:")
        for part, line in tests.items():
            print(f"   {part:12s} {line}")
for model, arms in test_counts.items():
    for arm, c in arms.items():
        s = test_report["summaries"][(model, arm)]
        print(f"{model:20s} {arm:20s} calls/message {c['calls_per_message']} ({c['calls']}/{c['user_messages']}), "
              f"false completions {s['false_completions']['count']}, invented values in "
              f"{s['conversations'] - s['no_invented']['count']} conversation(s), cancels {s['cancels']['count']}")

# %% [markdown]
# ## 8. One recovery, one failure — from the logs
#
# The first test user (by name) where `machine_plus` adhered and the prompt-only bot did not, and the first where
# `machine_plus` did not adhere, replayed from their event logs. The system lines under each turn show what the
# machine did: refusals, re-asks, dropped values, moves.

# %%
plus_scores = {s.user: s for s in tested["qwen2.5-coder-1.5b"]["machine_plus"]}
only_scores = {s.user: s for s in tested["qwen2.5-coder-1.5b"]["prompt_only_checked"]}
recovered = next((u for u in sorted(plus_scores) if plus_scores[u].adhered and not only_scores[u].adhered), None)
failed = next((u for u in sorted(plus_scores) if not plus_scores[u].adhered), None)
for title, user in (("adhered under machine_plus, not prompt-only", recovered), ("machine_plus failed", failed)):
    if user is None:
        print(f"-- no test user where {title}")
        continue
    events = read_jsonl(TEST / "qwen2.5-coder-1.5b" / "logs" / "machine_plus" / f"{user}.jsonl").events
    print(f"== {user}: {title}; " + ("; ".join(plus_scores[user].misses) or "all five parts hold"))
    print(render_text(conversation_view(events)))

# %% [markdown]
# ## 9. What the seed claimed, and what the kit measured
#
# The seed material reports its analyst bot — the same idea, a large hosted model behind an API — at about 1.03
# model calls per user message "while reliably following the script"; it gives no adherence figure and no users
# it was measured on. The kit's figures for the small local models, from the recordings above:

# %%
lines = []
for model, arms in test_counts.items():
    for arm in ("machine_plus", "prompt_only_checked", "machine"):
        if arm in arms:
            a = test_report["summaries"][(model, arm)]["adhered"]
            lines.append(f"- **{model}, {arm}**: {arms[arm]['calls_per_message']} calls per user message; adhered "
                         f"{a['count']}/{a['of']} test conversations (95% Wilson {pct(a['ci95'])}).")
Markdown("\n".join(lines))

# %% [markdown]
# The kit set itself targets for the 1.5B model on the test users before recording them (issue 24). Each is
# checked here against the recording, and where the machine still fails, the parts it fails are counted from the
# logs:

# %%
targets = check_targets(tested[_q], test_counts[_q], "machine_plus")
failing = {part: sum(not sc.parts[part] for sc in tested[_q]["machine_plus"]) for part in PARTS}
Markdown("\n".join([t.line() for t in targets]
                   + ["\nConversations where machine_plus fails each part: "
                      + ", ".join(f"{part} {n}" for part, n in failing.items()) + "."]))

# %% [markdown]
# Where the failing conversations stopped, against where their users' scripts end:

# %%
from collections import Counter

missed = [sc for sc in tested[_q]["machine_plus"] if not sc.adhered]
for (scenario, stood, expected), n in sorted(Counter((sc.scenario, sc.end_step, sc.expect_step)
                                                     for sc in missed).items()):
    print(f"{scenario:8s} stood in {stood!r:12s} where the script ends in {expected!r}: {n}")
print("ended where the script ends, with a value wrong:",
      ", ".join(sc.user for sc in missed if sc.end_step == sc.expect_step and not sc.parts["values"]))

# %% [markdown]
# Read the logs of those conversations (`logs/machine_plus/<user>.jsonl`, with `conversation_view` as in §8) and
# three failures come back again and again — the failures the design rounds below started from, on the dev
# users:
#
# - **The support bot's first step never records the issue.** The model answers with a sympathetic message and
#   `stay`; the machine's memory then takes the product, the severity and the e-mail as the user gives them, so
#   the later steps' values are there, but the step that needs the issue never moves. The grammar allowed the
#   issue in `results` only under `next`: the model wrote its message, chose `stay`, and from then on the stay
#   rule (`stay_keeps_needs`) barred the very value the step needed.
# - **Values recorded one turn late.** The analyst bot records an answer when the *next* message comes (an
#   off-topic question taken as the goal, a deadline taken from the message after it), so it stands one step
#   behind the user. `carry_over` catches some of these, not all.
# - **Corrections of earlier values are rarely taken** ("June, no wait, July"; "add a wish list"): the value
#   stays as first given.

# %% [markdown]
# **The design rounds.** After this recording the design went on in rounds, on the dev users: each round's arm is
# the round before with one feature more, and a round that passed more dev users than the last one recorded on the
# test users was recorded on them too. A round is named here by the feature it added (the table of §6 says what
# each does). Today's arms are named by what they hold (`labkit.dialog.arms`): there `machine` runs every feature
# and the machine as first built is `bare_machine`, while the recordings in this notebook keep the names they were
# made under. The table is computed from the 1.5B model's recordings (`labkit.dialog.ablation.round_rows`); "only
# this / only the round before" pairs the dev users:

# %%
rounds = round_rows(DATA, _q, scenarios, all_users)
Markdown(round_table(rounds) + "\n\n" + round_summary(rounds))

# %% [markdown]
# **What the rounds show.** On the dev users adherence moved a few users at a time, and not always forward: a round
# can lose users it did not aim at, because every change to what the model may say moves greedy answers elsewhere
# too, and on so few users that is as large as the effect aimed at. The largest step on the test users came with a
# round that answered a failure read from the test logs above, and later rounds answered kinds of failure seen on the
# test users too: the test users are no longer fully held out, so their column gives the direction more than the
# size. The design stops at the last round for a reason of method: its test failures have been read, so a round
# chosen on them would not be tested on held-out users; the honest next step is new dev users and a fresh set of test
# users. How each round was found, what its logs showed and the name each was recorded under are in
# [docs/results.md](../docs/results.md#dialog-scripts-as-yaml-machines).

# %% [markdown]
# The 270M base model's rows say something else: under `machine_plus` its conversations often end in cancels and
# in end steps the user never reached (the `cancels` and `false_completions` columns of §7's table) — the
# features that guard values and moves cannot help a model that does not read the user's message at all.
#
# The 1.5B machine's own guards held: no invented value survived, and every move was one the script allows. What it
# cannot do is make a 1.5B model *understand* a message: it can refuse, re-ask and ask the step's question, and
# `machine_plus`'s test line above is what that buys on users it never saw.

# %% [markdown]
# ## 10. Prompt size per turn
#
# The machine's prompt stays about the same size however long the conversation gets; the prompt-only bot's
# grows with every turn (it carries the whole script and the whole conversation).

# %%
fig, ax = plt.subplots(figsize=(7, 3))
model = MODELS[-1]
recorded = read_rows(RUNS / model / "runs.jsonl")
for arm, style in (("machine", "-o"), ("prompt_only", "-s")):
    longest = max((r for r in recorded if r["arm"] == arm), key=lambda r: len(r["prompt_tokens"]))
    ax.plot(range(1, len(longest["prompt_tokens"]) + 1), longest["prompt_tokens"], style,
            label=f"{arm} ({longest['task']})")
ax.set_xlabel("model call")
ax.set_ylabel("prompt tokens")
ax.set_title(f"Prompt size per call, longest conversation ({model})")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Wrap-up quiz
#
# Answer in the boxes and press *check answers*; a wrong answer gets a hint, not the answer. Code answers are one
# line of Python, evaluated in this notebook: `analyst` (the scenario), `summaries` (the first recording's
# counts, by model and arm) and `test_report` (section 7) are there to use.

# %% jupyter={"source_hidden": true}
from labkit import Choice, CodeLine, Quiz

quiz = Quiz([
    Choice("The step's signal `next` needs `goal`. The model emits `next` with empty results, and no goal is "
           "known. What does the engine do?",
           ["moves on: the model decided", "refuses the answer, re-asks once, and keeps the step if the second "
            "answer breaks the contract too", "ends the conversation with an error"],
           "refuses the answer, re-asks once, and keeps the step if the second answer breaks the contract too",
           "A violation is an event; a second one is recorded too, and the conversation goes on in the same step."),
    Choice("What can the grammar built from the step's schema guarantee?",
           ["that the answer is valid in every way", "the shape, and that the signal is one of the step's own",
            "nothing: a grammar is only a hint"],
           "the shape, and that the signal is one of the step's own",
           "It cannot know which results are already known, or stop an answer cut off at the token limit."),
    Choice("Why does the machine's prompt stay about the same size however long the conversation gets?",
           ["it carries one step's instructions, the variables, short summaries of past steps and the last turns",
            "the model forgets old turns by itself", "the cassette compresses the prompt"],
           "it carries one step's instructions, the variables, short summaries of past steps and the last turns",
           "The prompt-only bot carries the whole script and the whole conversation, so its prompt grows."),
    Choice("A bot needs 1.03 model calls per user message. What does that tell you?",
           ["it followed the script in 97% of the conversations",
            "its first answer kept the contract almost every time; nothing about following the script",
            "it was 3% slower than a prompt-only bot"],
           "its first answer kept the contract almost every time; nothing about following the script",
           "Adherence is measured separately, against stated end steps."),
    Choice("A bot that never moves passed two users under the first recording's check. What does the five-part "
           "measure add that fails it there?",
           ["the asks part: while the step still needs a value, the reply must ask for it",
            "a longer list of accepted phrasings", "a higher number of users"],
           "the asks part: while the step still needs a value, the reply must ask for it",
           "Those two users should leave the bot in its first step with nothing recorded — so end step and values "
           "hold for a bot that does nothing; only its replies give it away."),
    CodeLine("Write the line that gives how many test conversations the 1.5B model's machine_plus arm adhered in.",
             lambda n: n == test_report["summaries"][("qwen2.5-coder-1.5b", "machine_plus")]["adhered"]["count"],
             hint="test_report['summaries'] is indexed by (model, arm); each part has a 'count'",
             explain="test_report['summaries'][('qwen2.5-coder-1.5b', 'machine_plus')]['adhered']['count']"),
    CodeLine("Write the line that gives the names of the signals the analyst scenario's step `goal` may emit.",
             lambda names: sorted(names) == sorted(s.name for s in analyst.step("goal").signals),
             hint="analyst.step(name) gives a step; a step has its signals, each with a .name",
             explain="[s.name for s in analyst.step('goal').signals]"),
    CodeLine("Write the line that gives the results the signal `next` of the step `deadline` needs.",
             lambda needs: list(needs) == list(analyst.step("deadline").signal("next").needs),
             hint="a step's .signal(name) gives one signal; it lists what it needs",
             explain="analyst.step('deadline').signal('next').needs"),
], namespace=globals())
quiz

# %% [markdown]
# ## Take-aways
#
# - **The machine owns the script; the model owns one step.** The prompt holds one step's instructions, the
#   variables and short summaries, so it stays small and flat (section 10) — and the step the conversation is in
#   is a fact in the log, not a guess the model makes every turn.
# - **A measure must fail the floor.** The first check counted a bot that does nothing as adhering on the users
#   who should stay put — as often as the 270M model did. The five-part measure fails both floor bots on every
#   user, and says *which* part a bot missed.
# - **The contract is checked, not hoped for — and the machine can prevent what it used to refuse.** A grammar per
#   signal makes an empty `next` impossible to decode; a value whose words the user never said is dropped; a
#   re-ask cannot take the move just refused. Each of these is one declaration, so an ablation can say what it
#   buys.
# - **Design on dev, report on test.** The features were tuned on the dev users; section 7's figures are the test
#   users', paired by user, with intervals. Read the parts where the machine still fails (section 8): corrections
#   the model does not recognise, values one message late, paraphrases the user never said.
# - **Calls per user message** say how often the first answer kept the contract (plus carried messages); the
#   seed's 1.03 came from a large hosted model. A number close to 1 does not say the script was *followed*:
#   adherence is the separate figure.
# - **Variables have history.** Every change is an event (who, which step, old → new), so a conversation replays
#   from its log and resumes after a crash (tests: `tests/test_dialog.py`, `tests/test_dialog_comparison.py`).
#
# **Try it.** `labkit chat data/dialog/support/scenario.yaml` talks to the embedded model in the terminal;
# `--model qwen2.5-coder-1.5b` (after `labkit models fetch qwen2.5-coder-1.5b`) uses the 1.5B chat model.
#
# **Your turn.** `exercises/05a_dialog_step/` — write a scenario step in YAML; the checker runs it against scripted
# users with an eager stand-in model. `exercises/05b_contract_validator/` — write the validator and its re-ask.
