# %% [markdown]
# # 08 — Machines in layers: one status string becomes four layers
#
# **After this notebook you can**
#
# 1. split one overloaded status into [layers](../docs/glossary.md), and say which question each layer answers;
# 2. declare a [forward-only layer](../docs/glossary.md) and a [whitelisted layer](../docs/glossary.md), and read
#    the refusals they give;
# 3. declare a [router](../docs/glossary.md)'s possible keys so that a missing or misspelt key is found before the
#    run;
# 4. keep a lifecycle as a *view* of the persisted layers, so that it cannot disagree with them;
# 5. make an [abort](../docs/glossary.md) reach the inner loop, and check from the log that no model call began
#    after it.
#
# **Prerequisites:** notebook 01 ([transition table](../docs/glossary.md), [guard](../docs/glossary.md)) and
# notebook 03 ([event log](../docs/glossary.md), [replay](../docs/glossary.md), [invariant](../docs/glossary.md),
# [resume](../docs/glossary.md)). **Time:** about 65 minutes, the quiz included. Everything runs in a few seconds:
# the model's part is replayed from a recorded [cassette](../docs/glossary.md). The **Predict** boxes hide their
# answer until you choose and press *check*.
#
# The example is a small writing system in the spirit of a production novel writer: plan a section, draft it,
# review it, rewrite or polish it, save it at a checkpoint, go on to the next section or finish.

# %%
import dataclasses
import json
from pathlib import Path

from IPython.display import Markdown

from labkit import EventLog, TableError, load_events, predict
from labkit.core.events import InvariantViolated
from labkit.layers import (
    Graph,
    LayeredMachine,
    LayerMoved,
    LoopStopped,
    ModelCalled,
    Node,
    Router,
    RouteRefused,
    calls_after_abort,
    draw_layer_stack,
    replay_layers,
    timeline,
)
from labkit.layers.demo import LIVE_FILES, TITLE, TOPICS, run_demo, tick_clock
from labkit.layers.writing import (
    AbortDuringCall,
    flow_layer,
    job_params,
    phase_layer,
    scripted_writer,
    writing_nodes,
    writing_spec,
)
from labkit.llm import ReplayBackend

DATA = Path("..") / "data" / "layers"


def show(rows, columns):
    """A small fixed-width table of dicts (only the named columns)."""
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns))


# %% [markdown]
# ## 1. One status string, and why it is not enough
#
# The simplest state keeping there is: one variable, assigned wherever the code needs it. Nothing stops an
# assignment that makes no sense — a finished book going back to its premise, or a review starting on text
# that was never written.

# %%
status = "writing"
status = "reviewing"
status = "init"  # back to the very beginning, from the middle of a review: nobody objects
print(status)

# %% [markdown]
# The string is also doing four jobs at once. "Writing" can mean *the book is in its writing phase*, *the
# writer is drafting right now*, *the next step is the draft node*, or *the process is running*. Those are four
# questions, and they change at different speeds:
#
# | layer | question it answers | how it may change | survives a restart? |
# |---|---|---|---|
# | **phase** | where are we? | forward only, by ordinal (INIT < PREMISE < OUTLINE < WRITING < COMPLETE) | yes |
# | **flow** | what are we doing? | a whitelist with loops (write ↔ review, rewrite/polish → write) | yes |
# | **graph** (`writing`) | what runs next? | nodes joined by fixed edges and routers with declared keys | no: restarts at `load` |
# | **lifecycle** | may it run at all? | never set: computed from the others | it is recomputed |
#
# Each layer below is a checked labkit table, and the machine checks the rules *between* layers after every
# event. The declarations are in `labkit/layers/writing.py`.

# %%
spec = writing_spec()
for layer in (*spec.layers, spec.graph.layer, spec.lifecycle):
    kind = "forward-only" if layer.forward_only else "transient" if not layer.persisted else "whitelist"
    print(f"{layer.name:10} {layer.question:20} {kind:13} {len(layer.table.states)} states, "
          f"{len(layer.table.rows)} rows")
print()
for rule in spec.rules:
    print(f"rule {rule.name}: {rule}")

# %% [markdown]
# ## 2. A forward-only layer and a whitelisted layer
#
# The phase declares its order. A row that goes back in that order is refused *when the layer is built* —
# here someone adds "back to the outline" to the phase table:

# %%
from labkit.layers import Layer

rows = [("INIT", "premise", "PREMISE"), ("PREMISE", "outline", "OUTLINE"), ("OUTLINE", "write", "WRITING"),
        ("WRITING", "complete", "COMPLETE"), ("WRITING", "replan", "OUTLINE")]
try:
    Layer.build("phase", ["INIT", "PREMISE", "OUTLINE", "WRITING", "COMPLETE"], rows, "INIT", ["COMPLETE"],
                order=["INIT", "PREMISE", "OUTLINE", "WRITING", "COMPLETE"])
except TableError as exc:
    print(exc.problems[0])

# %% [markdown]
# Nodes ask a layer for a *destination* ("flow to REVIEWING"); the layer answers with its row, or refuses with
# a reason.

# %%
MOVES = [("REVIEWING", "POLISHING"), ("REWRITING", "REVIEWING"), ("POLISHING", "STEERING")]
flow, phase = flow_layer(), phase_layer()

# %% jupyter={"source_hidden": true}
_refused = [f"{s} -> {d}" for s, d in MOVES if not hasattr(flow.row_to(s, d), "event")]
predict("Which of these three flow moves does the whitelist refuse?", [f"{s} -> {d}" for s, d in MOVES],
        _refused[0] if len(_refused) == 1 else f"{MOVES[0][0]} -> {MOVES[0][1]}",
        "REWRITING -> REVIEWING: new text must be written (flow back to WRITING) before it is reviewed again. "
        "STEERING, a person changing direction, is reachable from every state.")

# %% tags=["reveal"]
for source, dest in MOVES:
    answer = flow.row_to(source, dest)
    print(f"{source} -> {dest}: " + (f"allowed, row {answer}" if hasattr(answer, "event") else answer.reason))
print(phase.row_to("WRITING", "OUTLINE").reason)

# %% [markdown]
# REWRITING → REVIEWING is the interesting refusal: new text must be written (flow back to WRITING) before it is
# reviewed again. STEERING — a person changing direction — is reachable from every state.
#
# ## 3. The whole machine in one picture
#
# First the layers as a stack, at three moments of the scripted run that section 4 follows, drawn by labkit
# from the machine's declaration (`labkit.layers.draw_layer_stack`). Each band is one layer's table, with the
# state it is in filled; dotted lines are the [cross-layer rules](../docs/glossary.md); the lifecycle is not
# set by anyone but computed from the persisted layers. Watch the speeds: the phase hardly moves, the flow moves per section, the
# graph moves every step.

# %%
import matplotlib.pyplot as plt

rows_of_run = timeline(run_demo(EventLog(), scripted_writer()).events, spec)
moments = [next(r for r in rows_of_run if r["writing"] == "draft"),
           next(r for r in rows_of_run if r["flow"] == "REVIEWING"), rows_of_run[-1]]
fig, axes = plt.subplots(len(moments), 1, figsize=(12, 4.1 * len(moments)))
for ax, moment in zip(axes, moments, strict=True):
    draw_layer_stack(spec, moment, ax=ax, title=f"after event #{moment['seq']} ({moment['event']}): "
                                                f"lifecycle {moment['lifecycle']}")
plt.tight_layout()
plt.show()

# %% [markdown]
# The same machine with every row: `labkit diagram writing` prints this Mermaid text; one subgraph per layer,
# router edges labelled with the router and its key, and the cross-layer rules as dotted links. The lifecycle has
# a table too (it says which changes of the view are possible), but nothing ever sets it.

# %%
Markdown("```mermaid\n" + spec.to_mermaid({"phase": "WRITING", "flow": "REVIEWING", "writing": "review"})
         + "```\n")

# %% [markdown]
# ## 4. A run, step by step
#
# First with a scripted writer (deterministic, so every branch is visited: the first draft is too short and
# is rewritten, the second is too long and is polished). After every event the machine recomputes the
# lifecycle from the layers; the table shows the events that moved a layer.

# %%
run = run_demo(EventLog(), scripted_writer())
steps = [r for r in timeline(run.events, spec) if "->" in r["event"] or r["event"].startswith("loop")]
show(steps[:24], ["seq", "event", "phase", "flow", "writing", "lifecycle"])
print("...", len(run.events), "events in all; final lifecycle:", run.lifecycle)

# %% [markdown]
# The review is a plain rule on the draft's length (fewer than 4 words: rewrite; more than 45: polish; at most
# two revisions), so the layers can be followed with any writer. Now the same machine with the embedded model
# (Gemma 3 270M, a base model, plain completions) writing one- or two-sentence sections. The run was recorded
# once; here it is replayed from its cassette, and the replay writes the recorded log again, event for event.

# %%
provenance = json.loads((DATA / LIVE_FILES["provenance"]).read_text())
recorded = load_events(DATA / LIVE_FILES["log"])
replayed = run_demo(EventLog(), ReplayBackend(DATA / LIVE_FILES["cassette"]))
print("replayed log identical to the recorded one:", [e.hash for e in replayed.events] == [e.hash for e in recorded])
print("model sha256:", provenance["model_sha256"][:16] + "…", "| llama-cpp-python",
      provenance["backend"]["llama_cpp_python"], "| labkit commit", provenance["labkit_commit"])
print("decoding:", provenance["decoding"], "| weight repacking:", provenance["weight_repacking"])
print(f"recorded {provenance['recorded_utc']}: {provenance['model_calls']} model calls, "
      f"{provenance['tool_calls']} tool calls, lifecycle {provenance['lifecycle']}")
for number, text in enumerate(replayed.state.memo["sections"], 1):
    print(f"section {number}: {text!r}")

# %% [markdown]
# The prose is weak, and the run still ends `completed`. Be exact about what that word certifies. It says the
# *process* held: every section went through draft, review and checkpoint, the flow never left its whitelist,
# the phase only moved forward, nothing was aborted or refused. It says nothing about the *content* beyond what
# the review rule checks, and the rule checks one thing — the draft's length in words:

# %%
from labkit.layers.writing import MAX_REVISIONS, MAX_WORDS, MIN_WORDS

print(f"the review rule: {MIN_WORDS} to {MAX_WORDS} words, and after {MAX_REVISIONS} revisions anything goes")

for number, text in enumerate(replayed.state.memo["sections"], 1):
    lines = [line for line in text.splitlines() if line.strip()]
    print(f"section {number}: {len(text.split())} words | a line repeated: {len(lines) != len(set(lines))} | "
          f"ends a sentence: {text.rstrip()[-1:] in '.!?'}")

# %% [markdown]
# So one section is the prompt's own label echoed back, one repeats a sentence, one stops where the token cap cut
# it, and none of that is the machine's business as declared: the layers guarantee the order of the work, not its
# quality. A content check would be one more declared node (a validator that can send a section back), with its
# own budget — the same move as the validators of notebooks 02 and 05.

# %%
moves = [e for e in recorded if isinstance(e, LayerMoved) and e.layer == "writing"]
print(" -> ".join(["load", *(e.dest for e in moves)]))
print("model calls per node:", {n: sum(1 for e in recorded if isinstance(e, ModelCalled) and e.node == n)
                                for n in ("draft", "rewrite")})

# %% [markdown]
# ## 5. Trap 1 — layers that disagree
#
# A plausible bug: to save a step, the review's router sends the *last* accepted section straight to `finish`.
# `finish` moves the phase to COMPLETE. The graph builds (finish declares nothing about the flow).
#
# %%
def machine(spec, model=None, **switches):
    return LayeredMachine(spec, model=model or scripted_writer(), clock=tick_clock(),
                          params=job_params(TITLE, TOPICS), **switches)


# %% jupyter={"source_hidden": true}
_unchecked = machine(writing_spec("skip_checkpoint"), check_rules=False)
_unchecked.run()
predict("Without the cross-layer rules, what will the lifecycle say when this run ends?",
        ["completed", "paused", "running"], _unchecked.lifecycle,
        f"It says {_unchecked.lifecycle!r} with the layers at {dict(_unchecked.layers)}: the phase reached "
        "COMPLETE, and nothing compared it with the flow, which still has a review open.")

# %% tags=["reveal"]
unchecked = machine(writing_spec("skip_checkpoint"), check_rules=False)
print("lifecycle:", unchecked.run(), "| layers:", unchecked.layers)
print("sections saved:", len(unchecked.state.memo["sections"]), "of", len(TOPICS))

# %% [markdown]
# "Completed", with a review still open and the last section never saved: the screen says done while the
# work is not. With the rules on, the step that moved the phase is the step that is refused — recorded as an
# event, the run paused for a person to look:

# %%
checked = machine(writing_spec("skip_checkpoint"))
print("lifecycle:", checked.run())
violation = next(e for e in checked.events if isinstance(e, InvariantViolated))
print(f"#{violation.seq} {violation.invariant}: {violation.detail}")
print("the event that broke it:", checked.events[violation.after_seq].model_dump(include={"layer", "source", "dest"}))

# %% [markdown]
# ## 6. Trap 2 — a router returns a key missing from its map
#
# Routers declare their keys in their return annotation, e.g. `-> Literal["next", "finish"]`. The build
# compares that declaration with the map. A map that forgets a declared key is refused before anything runs:

# %%
from typing import Literal


def route_after_check(state) -> Literal["next", "finish"]:
    return "next"


try:
    Graph.build("tiny", [Node("check"), Node("plan")],
                {"check": Router.declare(route_after_check, {"next": "plan"}), "plan": "end"}, "check", ["end"])
except TableError as exc:
    print(exc.problems[0])

# %% [markdown]
# Python does not enforce `Literal` when the function runs, so a router can still return a misspelt key — the
# staged bug returns `"finsh"` after the last section. Without the run-time check the lookup fails like a
# graph library's would, mid-run:

# %%
crashing = machine(writing_spec("typo_route"), check_routes=False)
try:
    crashing.run()
except KeyError as exc:
    print("the run died with KeyError", exc)
print("lifecycle now:", crashing.lifecycle, "| a stop recorded:", any(isinstance(e, LoopStopped) for e in crashing.events))

# %% [markdown]
# The process is gone, the log does not say why, and the view still claims "running". With the check, the
# undeclared key is a typed event, and everything written before it is kept:

# %%
routed = machine(writing_spec("typo_route"))
print("lifecycle:", routed.run())
refused = next(e for e in routed.events if isinstance(e, RouteRefused))
print(refused.model_dump(include={"router", "node", "key", "declared"}))
print("sections saved:", len(routed.state.memo["sections"]))

# %% [markdown]
# Routers can also collide with a layer. Nodes declare the layer states they enter and leave, so the build
# checks every edge against every layer's whitelist. Here the `rewrite` node forgets to hand the flow back to
# WRITING, and its fixed edge to `review` would need REWRITING → REVIEWING:

# %%
forgetful = [dataclasses.replace(n, leaves={}) if n.name == "rewrite" else n for n in writing_nodes()]
try:
    writing_spec(nodes=forgetful)
except TableError as exc:
    print(exc.problems[0])

# %% [markdown]
# ## 7. Trap 3 — an abort the inner loop never sees
#
# A user clicks *stop* while the model is generating the second call. In the naive version, `abort()` flips the
# lifecycle to paused and nothing else: the loop keeps calling the model.
#
# %%
def aborted_run(**switches):
    holder = []
    model = AbortDuringCall(scripted_writer(), at_call=2, abort=lambda: holder[0].abort("user clicked stop"))
    holder.append(machine(writing_spec(), model=model, **switches))
    holder[0].run()
    return holder[0]


# %% jupyter={"source_hidden": true}
_late = calls_after_abort(aborted_run(abort_checkpoints=False).events)["model_calls"]
predict("Without abort checkpoints, how many model calls begin after the abort?",
        ["none", "one", "more than one"], "none" if _late == 0 else "one" if _late == 1 else "more than one",
        f"{_late} model calls began after the abort: the naive abort only changed the view, and the loop never "
        "looked at it again before calling the model.")

# %% tags=["reveal"]
for checkpoints in (False, True):
    m = aborted_run(abort_checkpoints=checkpoints)
    after = calls_after_abort(m.events)
    print(f"abort checkpoints {'on ' if checkpoints else 'off'}: lifecycle {m.lifecycle:9} | abort at seq "
          f"{after['abort_seq']} | model calls begun after it: {after['model_calls']} | tool calls: "
          f"{after['tool_calls']}")

# %% [markdown]
# The counts are read from the log: every model and tool call records the seq at which it began. With
# checkpoints, the abort is an event; each model or tool call (and each node) first checks for it, so the
# call that was in flight finishes and is recorded, and nothing new begins.
#
# ## 8. Who is in charge: the persisted layers
#
# The lifecycle has no setter, and the state has no field for it:

# %%
try:
    run.lifecycle = "completed"
except AttributeError as exc:
    print("AttributeError:", exc)
print("lifecycle" in {f.name for f in dataclasses.fields(run.state)})

# %% [markdown]
# A restart rebuilds everything from the log. Cut the scripted run's log just after event 40, as if the
# process had been killed there (the tests do it for real, with SIGKILL and a SQLite file).

# %%
cut = 40
kept = list(run.events[: cut + 1])
state_at_cut = replay_layers(kept, spec).state
print("layers at the cut:", dict(state_at_cut.layers), "| draft so far:", repr(state_at_cut.memo["draft"][:40]))


def restart(kept):
    """A machine resumed from the kept events (a log holding them as the killed process left it), not yet run."""
    return LayeredMachine(spec, model=scripted_writer(), log=EventLog.holding(kept), clock=tick_clock())


def first_node(restarted, kept):
    """Where the restarted run's graph went first."""
    return next(e.dest for e in restarted.events[len(kept):] if isinstance(e, LayerMoved) and e.layer == "writing")


# %% jupyter={"source_hidden": true}
_again = restart(kept)
_again.run()
predict(f"At the cut the graph says {state_at_cut.layers['writing']!r} and the persisted flow says "
        f"{state_at_cut.layers['flow']!r}. At which node will the restarted run continue?",
        ["draft", "plan", "load", "review"], first_node(_again, kept),
        "The graph's position is transient: a restart puts it back at `load`, whose router reads only the "
        "persisted phase and flow (and the memo), and sends the run on from there.")

# %% tags=["reveal"]
restarted = restart(kept)
print("lifecycle before the restart:", restarted.lifecycle, "(nobody recorded a stop)")
restarted.run()
first = next(e for e in restarted.events[len(kept):] if isinstance(e, LayerMoved) and e.layer == "writing")
print(f"the load router sent the restart to: {first.dest}")
print("same sections as the uninterrupted run:", restarted.state.memo["sections"] == run.state.memo["sections"])

# %% [markdown]
# `plan`, not `draft`: the graph's position is transient and a restart puts it back at `load`, whose router
# reads only the persisted phase and flow (and the memo). Flow IDLE in phase WRITING means "between sections",
# so the section is planned again — harmless, because planning only notes which section comes next. The lifecycle before the restart still said "running": a view can only be
# as current as the facts in the log, which is why a restart records its own start.
#
# ## 9. Self-check
#
# Try each question before opening its answer.
#
# **Q1. Dynamic rules.** A customer wants REWRITING → REVIEWING allowed in one special mode. Can the design
# support it, and at what cost?
#
# <details><summary>Answer</summary>
#
# Yes: the whitelist is data (`FLOW_WHITELIST` → `flow_layer(whitelist)`), so a second layer built from another
# whitelist can be chosen when the machine is built — the rules are injected, not hard-coded. Three costs:
# the build checks run per rule set (so build each set once, and test each); the graph build must be re-checked,
# since an edge that was a conflict may become legal or the other way round; and the log must say which rule set
# a run used (put it in the run's params), or a replay with the other set will refuse moves the run really made.
# Loosening is easy; tightening later breaks old logs.
# </details>
#
# **Q2. Router vs whitelist.** The router sends the run from `rewrite` to `review`, but the flow forbids
# REWRITING → REVIEWING. Who wins?
#
# <details><summary>Answer</summary>
#
# The whitelist. At run time the move is refused and recorded (`move_refused`), and the run pauses. Better,
# because nodes *declare* the layer states they enter and leave, the graph build checks every edge against every
# layer's whitelist and refuses such a graph before it runs (the last cell of section 6 shows the error for a
# `rewrite` node that forgets to leave the flow in WRITING). A router that reads the flow itself is the other
# fix, but then the rule lives in two places.
# </details>
#
# **Q3. Why may the lifecycle stay a plain string?**
#
# <details><summary>Answer</summary>
#
# Because nobody stores or sets it: it is computed by one function from checked layers, and its four values
# are closed and used in one place. There is nothing to validate on write, since there is no write. It needs a
# table of its own (here: `lifecycle_is_a_known_state` checks the view only returns its four states) once other
# programs read it — a UI, another service — and must agree on its values.
# </details>
#
# **Q4. What does reading lower layers cost?**
#
# <details><summary>Answer</summary>
#
# Almost nothing: the view and the routers read the current state, which the reducer keeps in memory —
# dictionary lookups per step, no messages between layers. The real costs are elsewhere: the model calls, and
# the rule checks after every event (a few predicates here). The one design rule that keeps it cheap is that
# upper layers *pull* the lower layers' state when they need it; lower layers never push into upper ones.
# </details>

# %% [markdown]
# ## 10. What the seed claimed, and what the kit measured
#
# The layers seed (001) describes one production system, an AI novel writer built on LangGraph, and measures
# nothing: it names no model, no run and no rate. Its claims are about structure. Four layers: a phase of five
# states that only moves forward by ordinal, a flow of five states behind a whitelist, a graph of twelve nodes
# with four conditional routers, and a host lifecycle of four values. The persisted lower layers are the truth
# and the lifecycle is a view computed from them. And three traps: layers that disagree (the phase complete while
# a review is still open), a router returning a key its map lacks (the run crashes), and an abort that changes
# the lifecycle while the graph keeps calling the model. The kit's writing machine is smaller and made for a
# lesson, so its counts are its own; the traps it stages on purpose, with the checks off and on. Side by side:

# %%
SEED_001 = {"layers": 4, "phase states": 5, "flow states": 5, "graph nodes": 12, "routers": 4,
            "lifecycle values": 4}
kit = {"layers": len((*spec.layers, spec.graph.layer, spec.lifecycle)), "phase states": len(phase.table.states),
       "flow states": len(flow.table.states), "graph nodes": len(spec.graph.nodes),
       "routers": len(spec.graph.routers()), "lifecycle values": len(spec.lifecycle.table.states)}
rows = [f"| {what} | {SEED_001[what]} | {kit[what]} |" for what in SEED_001]
late = {on: calls_after_abort(aborted_run(abort_checkpoints=on).events)["model_calls"] for on in (False, True)}
rows += [f"| trap 1, layers that disagree: lifecycle at the end | done while a review is open | "
         f"{unchecked.lifecycle} unchecked, {checked.lifecycle} with the rules |",
         f"| trap 2, an undeclared router key | the run crashes | a crash unchecked ({crashing.lifecycle} left "
         f"standing), a `route_refused` event with the check ({routed.lifecycle}) |",
         f"| trap 3, model calls begun after an abort | the graph keeps running | {late[False]} unchecked, "
         f"{late[True]} with abort checkpoints |"]
Markdown("| | seed (001) | kit |\n|---|---|---|\n" + "\n".join(rows))

# %% [markdown]
# The kit's flow has one state more than the seed's (`IDLE`, between sections), and its graph fewer nodes (no
# summaries of arcs or volumes, no expansion of the outline). Its fix for the first trap differs too: the seed
# lets the phase win and ends the loop; the kit refuses the step that would break the rule between the layers,
# records why, and pauses for a person.

# %% [markdown]
# ## Wrap-up quiz
#
# Answer in the boxes and press *check answers*; a wrong answer gets a hint, not the answer. Code answers are one
# line of Python, evaluated in this notebook: `flow` (the flow layer), `aborted_run` and `calls_after_abort` are
# there to use.

# %% jupyter={"source_hidden": true}
from labkit import Choice, CodeLine, Quiz
from labkit.layers import Refusal

quiz = Quiz([
    Choice("With the run-time route check on, a router returns a key its map does not have. What happens?",
           ["a KeyError ends the process", "a route_refused event is recorded, the run pauses, and what it wrote "
            "is kept", "the map's first key is used instead"],
           "a route_refused event is recorded, the run pauses, and what it wrote is kept",
           "An undeclared key is a typed event, not a crash (section 6)."),
    Choice("After a restart, which layer starts again from its beginning?",
           ["the phase", "the flow", "the graph (what runs next)"], "the graph (what runs next)",
           "The graph's position is transient; load's router reads the persisted phase and flow to go on."),
    Choice("Why does the lifecycle have no setter?",
           ["it is computed from the persisted layers, so it cannot disagree with them", "to save memory",
            "because it never changes"],
           "it is computed from the persisted layers, so it cannot disagree with them",
           "A field can be set anywhere and drift; a view is recomputed after every event and every restart."),
    Choice("With abort checkpoints, what happens to the model call that is running when the abort arrives?",
           ["it is cut off mid-call", "it finishes and is recorded; nothing new begins",
            "it is repeated after the restart"],
           "it finishes and is recorded; nothing new begins",
           "Each node and each model or tool call checks for the abort before it begins."),
    CodeLine("Write the line that asks the flow layer for the move POLISHING -> REVIEWING (it answers with a row or "
             "a refusal).",
             lambda answer: isinstance(answer, Refusal) and (answer.source, answer.dest) == ("POLISHING", "REVIEWING"),
             hint="a layer answers a destination with .row_to(source, dest)",
             explain="flow.row_to('POLISHING', 'REVIEWING') is refused: a polish goes back to WRITING first."),
    CodeLine("Write the line that gives, read from its log, the report of what began after the abort in a run "
             "WITHOUT abort checkpoints.",
             lambda report: report == calls_after_abort(aborted_run(abort_checkpoints=False).events),
             hint="aborted_run(...) takes the machine's switches; calls_after_abort reads a run's events",
             explain="calls_after_abort(aborted_run(abort_checkpoints=False).events)"),
], namespace=globals())
quiz

# %% [markdown]
# ## Take-aways
#
# - One status string answers four questions badly; four layers answer one question each.
# - A forward-only layer is an order plus a build check; a whitelist is a table; both refuse with a reason.
# - Routers declare their keys; the build compares them with the map and with every layer's whitelist, and
#   an undeclared key at run time is an event, not a crash.
# - The persisted layers are the truth; the lifecycle is a view with no setter, recomputed after every event
#   and after a restart.
# - An abort is an event that the inner loop checks before every model and tool call — and the log proves it.
# - Exercise 08a (`labkit check 08a`): write the flow whitelist and the lifecycle view yourself.
