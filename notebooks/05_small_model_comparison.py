# %% [markdown]
# # 05 — Who does the work: the model, or the machine around it?
#
# **After this notebook you can**
# - name the seven arms of a fair comparison and the one thing each rung of the ladder changes;
# - read real prompts and answers of a prompt-only agent and of a [state machine](../docs/glossary.md) asking a
#   model one decision at a time;
# - read a result as successes per task with a [Wilson interval](../docs/glossary.md), and compare two arms with a
#   [paired test](../docs/glossary.md) over the same tasks;
# - separate the **model's share** of a result from the **harness's share**, and say why a held-out
#   [test split](../docs/glossary.md) is needed to trust a rule or a prompt.
#
# **Prerequisites:** notebook 02 (the runtime: planner, validator, tools, the event log) and notebook 04 (a model
# answering in JSON under a [grammar](../docs/glossary.md), the corrective [re-ask](../docs/glossary.md)).
# **Time:** about 50 minutes, the quiz included. The **Predict** boxes hide their answer until you choose and press
# *check*.
#
# Nothing here runs a model. Each model's runs were recorded live with `labkit experiment` (greedy decoding:
# [temperature](../docs/glossary.md) 0) into `data/experiment-v2/<model>/` — results, every run's
# [event log](../docs/glossary.md) and every model call in [cassettes](../docs/glossary.md) — and this notebook
# replays them: a call missing from a cassette would be an error, never a live call. Numbers come from one live run
# of each model on one 2-core machine (the two ran side by side, one thread each, so their minutes say little about
# speed); another CPU can give slightly different tokens, which is why the replay, not a re-run, is what makes this
# page exact. The 270M model ran every test task; the 1.5B model, ten times slower per token here, the ten headline
# tasks. Both were recorded while the kit's grammar wrote an answer's fields in alphabetical order (the extraction
# form as amount, date, name, order, not in the order of the prompts' examples); the grammar now keeps the order a
# schema declares, so a live run of today's code may differ on those answers (`data/experiment-v2/README.md`).

# %%
import json
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown

from labkit import predict
from labkit.experiment.v2.arms import ARMS
from labkit.experiment.v2.report import arm_table, counts_only, ladder_figure, ladder_plot, write_report
from labkit.experiment.v2.runner import Backends, prepare_replay_v2, run_experiment_v2
from labkit.experiment.v2.taskfile import FAMILY_NAMES, file_sha256, load_task_set
from labkit.experiment.v2.view import recorded_calls, show_calls, verdict
from labkit.stats import wilson_interval

DATA = Path("..") / "data"
RECORDED = DATA / "experiment-v2"
MODELS = [m for m in ("gemma3-270m", "qwen2.5-coder-1.5b") if (RECORDED / m / "summary.json").exists()]
provenance = {m: json.loads((RECORDED / m / "provenance.json").read_text(encoding="utf-8")) for m in MODELS}
for m in MODELS:
    p = provenance[m]
    config = p["config"]
    scope = "every task" if config["task_ids"] is None else f"{len(config['task_ids'])} tasks"
    print(f"{m}: {p['backend']['model_kind']} model, sha256 {p['backend']['model_sha256'][:12]}…, "
          f"{scope} of {'+'.join(config['splits'])}, {len(config['arms'])} arms, seeds {config['seeds']}, "
          f"temperature {config['decoding']['temperature']}; labkit {p['labkit_commit'][:7]}, "
          f"{p['started_utc'][:10]}, {p['wall_s'] / 60:.0f} min live")

# %% [markdown]
# ## 1. The question
#
# A write-up in the seed material reports a local model going from 2 of 10 to 10 of 10 on its tasks once an explicit
# state machine split the work. A claim like that mixes two things. Inside a machine, **code** does much of the
# work: it reads the task's ids, keeps forbidden records off the menu, writes the answer in the right format, stops
# when the job is done. The model may be left with only a few choices — or with none that matter. So this
# comparison asks two questions, not one:
#
# - **the harness's share** — how much better does the machine do than a prompt-only agent when *no model* decides
#   inside it, only the best rule we could write?
# - **the model's share** — how much does the model add, inside the same machine, over that rule — on tasks where
#   the decision depends on *reading* free text?
#
# ## 2. Tasks where reading matters
#
# Four families of tasks, each a customer-service job done with tools (`read_message`, `read_record`,
# `save_draft`):
#
# | family | the job | what must be read |
# |---|---|---|
# | triage | route a message to one queue | what the customer asks for — the message may mention other topics in passing |
# | extraction | fill an order form (order, date, amount, name) from a note | the values the note means — a second order, amount or name of the same shape sits nearby |
# | selection | compare the records of the customers who wrote about X and about Y | which messages are about X and Y |
# | compare | compare named records, leaving alone one the task says not to read | the ids in the task text (code can do this: a control) |
#
# Tasks are data (`data/tasks/v2/`), generated by a seeded script, in two splits. **Dev** is what prompts, worked
# examples and rules may be designed on; **test** has different wording, names, ids and distractor sentences and was
# not looked at while designing. Here is one test task of each family, as every arm is given it:

# %%
dev = load_task_set(DATA / "tasks" / "v2" / "dev.json")
test = load_task_set(DATA / "tasks" / "v2" / "test.json")
print("dev:", dev.families(), " test:", test.families())
for family in FAMILY_NAMES:
    task = next(t for t in test.tasks if t.family == family and t.id in test.headline)
    print(f"\n[{family}] {task.id}: {task.description}")
    for message in task.message_list()[:2]:
        print(f"   message {message.id}: {message.text[:150]}{'…' if len(message.text) > 150 else ''}")

# %% [markdown]
# A recording is tied to the exact task file it ran: its provenance keeps the test file's
# [sha256](../docs/glossary.md), and the files here must match it.

# %%
for m in MODELS:
    recorded = provenance[m]["task_files"]["test"]["sha256"]
    print(f"{m}: test file sha256 {recorded[:12]}…", "matches" if recorded == file_sha256(
        DATA / "tasks" / "v2" / "test.json") else "DIFFERS from the file here")

# %% [markdown]
# ## 3. The ladder of arms
#
# Seven arms, the same model, the same tasks, the same step budget — and **one verifier** for all of them (the right
# draft saved under the right key, nothing forbidden read, the run claimed success). Each rung changes one thing:

# %%
ladder_figure()
plt.show()
Markdown("\n".join(["| arm | what decides | what a seed varies (greedy decoding) |", "|---|---|---|",
                    *(f"| {a.label} | {a.decides} | {a.seed_varies} |" for a in ARMS.values())]))

# %% [markdown]
# Arms 1–3 are prompt-only: one prompt holds the tools, the answer formats and one worked episode per family
# (the same four dev examples for every task); the model writes one JSON action per step and a loop runs it.
# Arm 3 gets the machine's own code helpers as actions (`save_form`, …), so the step from 3 to 4 is the machine
# alone. Arm 4 is the machine: code runs the steps, and the model is asked one short question per decision — which
# queue, which form values (each value must appear in the note, else one re-ask naming the problem), which message,
# which record next — with its answer constrained to the menu. Arms 5–7 put a rule, a seeded random pick and the
# task's own answer where the model was.
#
# ## 4. One task, every arm: the real prompts and answers
#
# An extraction task from test, as the embedded model saw it in arm 1 and in arm 4. (The prompt-only prompt starts
# with about 2,000 tokens of instructions and worked episodes; it is shown from the task on.)

# %%
SHOWN_MODEL = MODELS[0]
SHOWN = next(t for t in test.tasks if t.family == "extraction" and t.id in test.headline)
folder = RECORDED / SHOWN_MODEL
print(show_calls(recorded_calls(folder, "prompt-only", "test", SHOWN.id), first=1, last=2))

# %%
print(show_calls(recorded_calls(folder, "machine-model", "test", SHOWN.id), first=3))

# %% jupyter={"source_hidden": true}
_expected = dict(SHOWN.answer)
_machine = verdict(folder, "machine-model", "test", SHOWN.id)
predict(f"The note's order form is {_expected}. Did the machine + model arm fill it right?",
        ["yes", "no"], "yes" if "passed" in _machine else "no",
        f"The recorded grade: {_machine}. The machine checks that every value appears in the note (the evidence "
        "check) and re-asks once, naming the problem; a distractor value *is* in the note, so only the verifier "
        "catches it.")

# %% [markdown]
# Every arm on this task, for each recorded model (the grade is the one verifier's):

# %%
for m in MODELS:
    print(m)
    for arm in ARMS:
        print("  " + verdict(RECORDED / m, arm, "test", SHOWN.id))

# %% [markdown]
# ## 5. Replay both recordings — exactly
#
# The cassettes hold every model call. Replaying them through today's code must give every recorded run again:
# the same pass or fail, the same calls, re-asks and tokens.

# %%
summaries, runs = {}, {}
for m in MODELS:
    recorded_folder = RECORDED / m
    config = prepare_replay_v2(recorded_folder)
    with tempfile.TemporaryDirectory() as scratch:
        replayed = run_experiment_v2(config, Backends(replay=recorded_folder), Path(scratch))
        summary = write_report(Path(scratch), replayed, config.arms, config.splits, test, provenance[m],
                               plots=False)
    committed = json.loads((recorded_folder / "summary.json").read_text(encoding="utf-8"))
    same = counts_only(summary) == counts_only(committed)
    summaries[m], runs[m] = summary, replayed
    print(f"{m}: {len(replayed)} runs replayed; identical to the recorded summary: {same}")

# %% [markdown]
# ## 6. What the arms achieved
#
# The unit is the **task**: outcomes cluster by task, so a run on a task is not an independent trial. Each row is
# tasks solved out of tasks, with its Wilson 95% interval.

# %% jupyter={"source_hidden": true}
_rows = {(r["split"], r["arm"]): r for r in summaries[MODELS[0]]["rows"]}
_po, _mm = _rows[("test", "prompt-only")], _rows[("test", "machine-model")]
predict(f"On the test split ({_po['tasks']} tasks), which solved more with {MODELS[0]}: arm 1 (prompt-only) or "
        "arm 4 (machine + model)?", ["prompt-only", "machine + model", "the same number"],
        "prompt-only" if _po["tasks_solved"] > _mm["tasks_solved"] else
        "machine + model" if _mm["tasks_solved"] > _po["tasks_solved"] else "the same number",
        f"prompt-only {_po['tasks_solved']}/{_po['tasks']}, machine + model {_mm['tasks_solved']}/{_mm['tasks']}.")

# %%
Markdown("\n".join(f"**{m}**\n\n{arm_table(summaries[m]['rows'])}" for m in MODELS))

# %% [markdown]
# The same as a picture, every arm on its own row with its interval, for each model:

# %%
for m in MODELS:
    ladder_plot(summaries[m]["rows"], title=m)
    plt.show()

# %% [markdown]
# **Per family.** The totals hide where each arm wins and loses. Test split, tasks solved per family:

# %%
for m in MODELS:
    print(m)
    for r in summaries[m]["rows"]:
        if r["split"] == "test":
            print(f"  {r['label']:<30} " + "  ".join(f"{f} {v}" for f, v in r["families"].items()))

# %% [markdown]
# **Dev against test.** Arm 5's rules were written by reading the dev tasks. Whatever a rule gets on dev, it was
# tuned to get; only test says what it is worth. The arms without a model (5–7) were run on both splits in
# `data/experiment-v2/no-model/` (no model, so it takes seconds; a test re-runs it); the model arms were recorded on
# test, the split that measures.

# %% jupyter={"source_hidden": true}
no_model = json.loads((RECORDED / "no-model" / "summary.json").read_text(encoding="utf-8"))
_rule = {r["split"]: r for r in no_model["rows"] if r["arm"] == "machine-rule"}
_dev, _test = _rule["dev"], _rule["test"]
_test_rate = _test["tasks_solved"] / _test["tasks"]
predict(f"The dev rule solves {_dev['tasks_solved']}/{_dev['tasks']} dev tasks. On test it solves …",
        ["as many, in proportion", "about half or more, but clearly fewer", "almost none"],
        "as many, in proportion" if _test_rate >= _dev["tasks_solved"] / _dev["tasks"] - 0.05 else
        "about half or more, but clearly fewer" if _test_rate >= 0.4 else "almost none",
        f"{_test['tasks_solved']}/{_test['tasks']} on test ({', '.join(f'{f} {v}' for f, v in _test['families'].items())}"
        "). Rules written on dev wording meet new wording on test.")

# %%
Markdown(arm_table(no_model["rows"]))

# %% [markdown]
# ## 7. The two shares, with their tests
#
# Paired over the same tasks: for each task, did arm A solve it and B not, or the other way round? Ties say
# nothing about the difference. The exact sign test asks how likely so lopsided a split of the untied tasks would be
# if neither arm were better.

# %%
for m in MODELS:
    print(m)
    for p in summaries[m]["paired"]:
        print(f"  {p['split']:<4} {p['meaning']:<40} {p['a']} better on {p['a_better']:>2}, {p['b']} better on "
              f"{p['b_better']:>2}, tied {p['ties']:>2} of {p['tasks']} tasks; p = {p['p_value']:.3g}")

# %% [markdown]
# And the seed's form, on the test split's ten headline tasks, for each model:

# %%
for m in MODELS:
    print(f"{m}: {summaries[m]['headline']}")

# %% [markdown]
# ## 8. What it means
#
# Read the tables above with their intervals; this is what they say for these recordings.
#
# - **The machine helps both models, and the test says it is not luck.** With the 270M base model, arm 4 solves 13
#   of 40 test tasks where prompt-only solves 2 (11 tasks only the machine solved, none the other way; p ≈ 0.001).
#   With the 1.5B chat model on the ten headline tasks: 7 against 1 (6 to 0, p ≈ 0.03). The seed's form,
#   "x/10 → y/10", comes out as 1/10 → 5/10 for the 270M model and 1/10 → 7/10 for the 1.5B model.
# - **For the 270M model, that gain is the harness's, not the model's.** The dev rule in the same machine solves 18
#   of 40 — more than the model's 13. On the families where reading matters the model beat the rule on 4 tasks and
#   lost on 9 (p ≈ 0.27): no evidence that the model reads better than a keyword rule, and the point estimate says
#   worse. The harness's share is large and clear: the rule in the machine against prompt-only, 17 tasks to 1
#   (p ≈ 0.0001). Even a random pick in the machine solves 9 of 40, five of them compare tasks, where code does the
#   reading.
# - **The 1.5B model begins to earn its place, but ten tasks cannot show it.** In the machine it beat the rule on 4
#   headline tasks and lost on 2 (p ≈ 0.69); its extraction was right on all three forms, the rule's on one. Ten
#   tasks give intervals as wide as 0.40–0.89: a difference this size needs the whole test split to be tested.
# - **Tools alone carry part of the way — with a model that can use them.** Arm 3 (prompt-only with the machine's
#   helpers) solved 5 of 10 with the 1.5B model and 0 of 40 with the 270M model, which needed the machine to get
#   past 2 of 40. The step from arm 3 to arm 4 (the machine, no new tools) is 5 → 7 for the 1.5B model.
# - **A rule tuned on dev is worth its test score.** 32/32 on dev, 18/40 on test: the same rule, other wording.
#
# What this does *not* show: that a state machine turns any small model into a dependable worker. It shows that
# the machine makes the runs safe and countable, that code inside it does most of the work, and that the model's
# share has to be measured against a serious rule, on held-out tasks, before it is claimed.

# %% [markdown]
# ## Wrap-up quiz
#
# Answer in the boxes and press *check answers*; a wrong answer gets a hint, not the answer. Code answers are one
# line of Python, evaluated in this notebook: `summaries` (by model: `rows`, `paired`, `headline`), `test`, `ARMS`
# and `wilson_interval` are there to use.

# %% jupyter={"source_hidden": true}
from labkit import Choice, CodeLine, Quiz

_m0 = MODELS[0]
quiz = Quiz([
    Choice("Why is the task, not the run, the unit of these counts?",
           ["runs of one task share its difficulty, so they are not independent trials",
            "tasks take longer than runs", "the verifier grades tasks only"],
           "runs of one task share its difficulty, so they are not independent trials",
           "With greedy decoding a task gives the same answer on every run of one seed; counting runs would count it "
           "several times."),
    Choice("Which difference is the model's share?",
           ["arm 4 − arm 1", "arm 4 − arm 5 on the content families", "arm 5 − arm 1"],
           "arm 4 − arm 5 on the content families",
           "Same machine, same menu: only who decides changes — the model or the best dev rule."),
    Choice("Arm 6 (machine + random) solves some compare tasks. What does that tell you?",
           ["the random choice reads the task", "on those tasks code did the work: any choice in the menu succeeded",
            "the verifier is too lenient"],
           "on those tasks code did the work: any choice in the menu succeeded",
           "That is why the compare family is a control for the harness, not a test of reading."),
    Choice("The dev rule was written while reading dev. Which score tells you what it is worth?",
           ["its dev score", "its test score", "the mean of the two"], "its test score",
           "A rule or prompt designed on a split will look good on it; only held-out tasks measure it."),
    CodeLine("Write the line that gives the Wilson 95% interval of 7 tasks solved out of 10.",
             lambda v: tuple(round(x, 4) for x in v) == tuple(round(x, 4) for x in wilson_interval(7, 10)),
             hint="labkit.stats has wilson_interval(successes, n)", explain="wilson_interval(7, 10)"),
    CodeLine(f"Write the line that gives how many test tasks arm 5 (machine + dev rule) solved with {_m0}.",
             lambda n: n == next(r["tasks_solved"] for r in summaries[_m0]["rows"]
                                 if r["split"] == "test" and r["arm"] == "machine-rule"),
             hint="summaries[model]['rows'] is a list of dicts with 'split', 'arm' and 'tasks_solved'",
             explain=f"next(r['tasks_solved'] for r in summaries['{_m0}']['rows'] if r['split'] == 'test' and "
                     "r['arm'] == 'machine-rule')"),
    CodeLine("Write the line that gives the ids of the test split's headline tasks.",
             lambda ids: list(ids) == list(test.headline), hint="the task set `test` carries them",
             explain="test.headline"),
], namespace=globals())
quiz

# %% [markdown]
# ## Take-aways
#
# - **Measure a ladder, not a pair.** "Prompt-only against machine + model" mixes tools, the machine, and the
#   model's reading. Each rung changes one thing, so each difference has one cause.
# - **Put the best rule you can write where the model was.** The model's share is what it adds over that rule, on
#   tasks where reading matters; the harness's share is what the rule in the machine adds over prompt-only.
# - **The unit is the task; report intervals and paired tests.** Ten tasks give wide intervals; the paired sign
#   test counts only the tasks where the arms disagree.
# - **Design on dev, measure on test.** The dev rule's perfect dev score fell to less than half on test.
# - **Show the prompts and answers.** Every number here comes from recorded calls you can read and replay; a call
#   missing from a cassette is an error, never a live call.
#
# **Try it.** `make experiment` runs the ten headline tasks live with the embedded model (all arms, about a quarter
# of an hour on 2 cores); `make experiment MODEL=qwen2.5-coder-1.5b` with the 1.5B chat model (after
# `labkit models fetch qwen2.5-coder-1.5b`); `ARGS=--full` runs every dev and test task and says first how long it
# should take.
