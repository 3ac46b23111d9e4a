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
#   [script adherence](../docs/glossary.md) with [Wilson intervals](../docs/glossary.md) — for two small local
#   models, against a prompt-only chatbot.
#
# **Prerequisites:** notebooks 01 ([transition table](../docs/glossary.md), [guard](../docs/glossary.md)) and 03
# ([event log](../docs/glossary.md), [replay](../docs/glossary.md)). **Time:** about 45 minutes, the quiz included.
# The **Predict** boxes hide their answer until you choose and press *check*.
#
# Nothing here runs a model. Every answer shown was recorded live (`labkit dialog-measure`, greedy decoding:
# [temperature](../docs/glossary.md) 0) into the [cassettes](../docs/glossary.md) under
# `data/dialog/runs/<model>/`, and is replayed from them; a prompt that is not in a cassette would be an error,
# never a live call. The models are a 270M [base model](../docs/glossary.md) and a 1.5B chat model, both
# [GGUF](../docs/glossary.md) files run by llama.cpp.

# %%
import json
import tempfile
from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown

from labkit import predict
from labkit.diagram import mermaid_markdown
from labkit.dialog import (
    ChatViewer,
    DialogBot,
    ModelCalled,
    conversation_view,
    load_scenario,
    load_user_scripts,
    render_text,
)
from labkit.dialog.comparison import replay
from labkit.dialog.simulate import load_scenarios, result_from_dict, summarize
from labkit.drawio import to_drawio
from labkit.llm.cassette import ReplayBackend
from labkit.runs import read_rows
from labkit.stats import paired_test
from labkit.store import read_jsonl

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
# ## 5. Calls per user message, violations, adherence — measured
#
# Twenty-two scripted users (`data/dialog/users/`, 11 per scenario): cooperative ones, and ones who go
# off-topic, correct an answer, say "go back", refuse to give a deadline or an email, stop half-way, or never
# confirm. Each script states the step the conversation should end in and words each variable must contain.
# Both bots answer the same users under the same contract and re-ask; the prompt-only bot's `signal` is the step
# it says it is in after its reply, and its `results` everything it has learned.
#
# Both models ran all 22 users in both arms, greedy. (The 1.5B model was recorded in batches; each batch's
# command, commit and users are in its `provenance.jsonl`.)
#
# The table is recomputed here by replaying every recorded conversation from its cassette, and checked against
# the results written when it was recorded. The seed material reports about 1.03 model calls per user message for
# its machine-run bot, with a large hosted model.

# %%
scenarios = load_scenarios(DATA)
all_users = load_user_scripts(DATA / "users")
summaries = {}
for model in MODELS:
    recorded = read_rows(RUNS / model / "runs.jsonl")
    provenance = json.loads((RUNS / model / "provenance.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert replay(RUNS / model, Path(tempfile.mkdtemp())) == [], f"{model}: replay differs from the recording"
    summaries[model] = {arm: summarize([result_from_dict(r) for r in recorded if r["arm"] == arm])
                        for arm in provenance["arms"]}
    print(f"{model}: {len(recorded)} conversations replayed, identical to the recording "
          f"(model sha256 {provenance['backend']['model_sha256'][:12]}…, llama-cpp-python "
          f"{provenance['backend']['llama_cpp_python']}, commit {provenance['git_commit'][:10]})")


def pct(pair: list[float]) -> str:
    return f"{pair[0]:.0%}–{pair[1]:.0%}"


# %% jupyter={"source_hidden": true}
_m, _p = summaries[MODELS[0]]["machine"], summaries[MODELS[0]]["prompt_only"]
(_ml, _mh), (_pl, _ph) = _m["adherence_ci95"], _p["adherence_ci95"]
predict(f"For {MODELS[0]}, does the machine arm adhere to the script more often than the prompt-only bot?",
        ["clearly more often (the 95% intervals do not overlap)", "no clear difference (the intervals overlap)",
         "clearly less often (the 95% intervals do not overlap)"],
        "clearly more often (the 95% intervals do not overlap)" if _ml > _ph
        else "clearly less often (the 95% intervals do not overlap)" if _pl > _mh
        else "no clear difference (the intervals overlap)",
        f"Machine {_m['adhered']}/{_m['conversations']} (95% Wilson {pct(_m['adherence_ci95'])}), prompt-only "
        f"{_p['adhered']}/{_p['conversations']} ({pct(_p['adherence_ci95'])}). With this few conversations, read "
        "the intervals, not the counts; the cells below show where the conversations of each arm ended.")

# %% tags=["reveal"]
rows = ["| model | arm | conversations | adhered (95% Wilson) | calls / user message | re-asks (repaired) | "
        "violations | failed twice | prompt tokens (mean / max) |", "|---|---|---|---|---|---|---|---|---|"]
for model, summary in summaries.items():
    for arm, s in summary.items():
        rows.append(f"| {model} | {arm} | {s['conversations']} | {s['adhered']} ({pct(s['adherence_ci95'])}) | "
                    f"{s['calls_per_message']} ({s['calls']}/{s['user_messages']}) | {s['reasks']} ({s['reasks_repaired']}) | "
                    f"{s['contract_violations']} | {s['contract_failures']} | "
                    f"{s['prompt_tokens_mean']} / {s['prompt_tokens_max']} |")
Markdown("\n".join(rows))

# %%
lines = []
for model, summary in summaries.items():
    m, p = summary["machine"], summary["prompt_only"]
    lines.append(f"- **{model}**: the machine needed {m['calls_per_message']} calls per user message "
                 f"({m['reasks']} re-asks in {m['user_messages']} messages), the prompt-only bot "
                 f"{p['calls_per_message']} ({p['reasks']} re-asks); the re-ask repaired {m['reasks_repaired']} of "
                 f"{m['reasks']} vs {p['reasks_repaired']} of {p['reasks']} broken answers; adherence {m['adhered']}/{m['conversations']} vs "
                 f"{p['adhered']}/{p['conversations']}; mean prompt {m['prompt_tokens_mean']} vs {p['prompt_tokens_mean']} "
                 "tokens.")
Markdown("What the recording says, read from the summaries above:\n\n" + "\n".join(lines))

# %%
fig, ax = plt.subplots(figsize=(7, 3))
labels, centres, lows, highs = [], [], [], []
for model, summary in summaries.items():
    for arm, s in summary.items():
        labels.append(f"{model}\n{arm}")
        rate = s["adhered"] / s["conversations"]
        centres.append(rate)
        lows.append(rate - s["adherence_ci95"][0])
        highs.append(s["adherence_ci95"][1] - rate)
ax.errorbar(range(len(labels)), centres, yerr=[lows, highs], fmt="o", capsize=6)
ax.set_xticks(range(len(labels)), labels, fontsize=8)
ax.set_ylim(-0.05, 1.05)
ax.set_ylabel("script adherence")
ax.set_title("Adhered conversations, with 95% Wilson intervals")
plt.tight_layout()
plt.show()

# %% [markdown]
# Where the conversations ended, against where they should have ended (machine arm vs prompt-only arm). A
# conversation that ends in a *final* step (brief written, ticket filed, cancelled) without adhering is a false
# completion: the bot declared the job done with something missing or wrong.

# %%
final_steps = {name for sc in scenarios.values() for name, step in sc.steps.items() if step.final}
for model in MODELS:
    recorded = read_rows(RUNS / model / "runs.jsonl")
    expected = {u.name: u.expect_step for u in all_users}
    for arm in ("machine", "prompt_only"):
        mine = [r for r in recorded if r["arm"] == arm]
        right_step = sum(r["end_step"] == expected[r["task"]] for r in mine)
        false_done = sum(r["end_step"] in final_steps and bool(r["legacy_misses"]) for r in mine)
        misses = Counter("end step" if m.startswith("ended") else m.split("=")[0]
                         for r in mine for m in r["legacy_misses"])
        print(f"{model:20s} {arm:12s} right end step {right_step}/{len(mine)}; false completions "
              f"{false_done}/{len(mine)}; conversations missing each check: {dict(misses)}")
    by_arm = {arm: {r["task"]: (int(not r["legacy_misses"]), 1) for r in recorded if r["arm"] == arm}
              for arm in ("machine", "prompt_only")}
    print(f"{'':20s} adherence paired by user: "
          + paired_test(by_arm["machine"], by_arm["prompt_only"], names=("machine", "prompt_only")).describe())

# %% [markdown]
# ## 6. Prompt size per turn
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
# line of Python, evaluated in this notebook: `analyst` (the scenario) and `summaries` (the measured table, by
# model and arm) are there to use.

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
    CodeLine("Write the line that gives the names of the signals the analyst scenario's step `goal` may emit.",
             lambda names: sorted(names) == sorted(s.name for s in analyst.step("goal").signals),
             hint="analyst.step(name) gives a step; a step has its signals, each with a .name",
             explain="[s.name for s in analyst.step('goal').signals]"),
    CodeLine("Write the line that gives the results the signal `next` of the step `deadline` needs.",
             lambda needs: list(needs) == list(analyst.step("deadline").signal("next").needs),
             hint="a step's .signal(name) gives one signal; it lists what it needs",
             explain="analyst.step('deadline').signal('next').needs"),
    CodeLine("Write the line that gives how many re-asks the prompt-only bot needed with the embedded model "
             "(gemma3-270m).",
             lambda n: n == summaries["gemma3-270m"]["prompt_only"]["reasks"],
             hint="summaries is indexed by model, then arm ('machine' or 'prompt_only'), then column",
             explain="summaries['gemma3-270m']['prompt_only']['reasks']"),
], namespace=globals())
quiz

# %% [markdown]
# ## Take-aways
#
# - **The machine owns the script; the model owns one step.** The prompt holds one step's instructions, the
#   variables and short summaries, so it stays small and flat (section 6) — and the step the conversation is in is
#   a fact in the log, not a guess the model makes every turn.
# - **The contract is checked, not hoped for.** The grammar gives the shape; only the validator sees meaning — a
#   `next` before the result it `needs`. In these recordings that check is what kept the machine from moving on
#   with nothing collected, and it is also why a model that leaves `results` empty stays in its step: the
#   machine fails *safe*, the prompt-only bot moves wherever it likes.
# - **One re-ask is not a cure.** With greedy decoding the second call sees nearly the same prompt, and the small
#   models mostly repeat their answer: compare "re-asks" with "repaired" in the table. A second failure is an
#   event (`dialog_contract_failed`) and the conversation goes on — no crash, nothing lost.
# - **Calls per user message** are 1 plus the share of turns that needed a re-ask; the seed's 1.03 came from a large
#   hosted model. A number this close to 1 says the contract was *kept*, not that the script was *followed*:
#   adherence is the separate column, and it is what a user would notice.
# - **Adherence is measured against stated end states, with intervals.** With 22 (or fewer) conversations an
#   interval is wide; read the ranges, not just the counts. Neither small model follows either script
#   reliably, with or without the machine; the machine changes *how* they fail.
# - **Variables have history.** Every change is an event (who, which step, old → new), so a conversation replays
#   from its log and resumes after a crash (tests: `tests/test_dialog.py`).
#
# **Try it.** `labkit chat data/dialog/support/scenario.yaml` talks to the embedded model in the terminal;
# `--model qwen2.5-coder-1.5b` (after `labkit models fetch qwen2.5-coder-1.5b`) uses the 1.5B chat model.
#
# **Your turn.** `exercises/05a_dialog_step/` — write a scenario step in YAML; the checker runs it against scripted
# users with an eager stand-in model. `exercises/05b_contract_validator/` — write the validator and its re-ask.
