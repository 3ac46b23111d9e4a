"""The demo: a small writing workflow in four layers.

**phase** (forward-only), **flow** (by whitelist), **writing** (the graph: load → premise → outline → plan
→ draft → review → rewrite/polish → … → checkpoint) and **lifecycle** (a view). The review is a length rule,
so every branch is reachable; ``bug=`` stages ``"skip_checkpoint"`` and ``"typo_route"``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from labkit.core.errors import LabkitError
from labkit.core.reducer import TableEntry
from labkit.layers.graph import Graph, Node, Router
from labkit.layers.layer import CrossRule, Layer
from labkit.layers.spec import LayeredSpec
from labkit.layers.state import LayeredState, reduce_layers
from labkit.llm.backend import Backend, Request, WrappedBackend
from labkit.llm.fake import ScriptedBackend

PHASES = ("INIT", "PREMISE", "OUTLINE", "WRITING", "COMPLETE")
FLOWS = ("IDLE", "WRITING", "REVIEWING", "REWRITING", "POLISHING", "STEERING")
LIFECYCLE = ("idle", "running", "paused", "completed")

# A flow row's event is the verb of its destination, so a row reads "REVIEWING --rewrite--> REWRITING".
FLOW_VERBS = {"IDLE": "settle", "WRITING": "write", "REVIEWING": "review", "REWRITING": "rewrite",
              "POLISHING": "polish", "STEERING": "steer"}
FLOW_WHITELIST: dict[str, tuple[str, ...]] = {
    "IDLE": ("WRITING", "STEERING"),
    "WRITING": ("REVIEWING", "REWRITING", "POLISHING", "STEERING", "IDLE"),
    "REVIEWING": ("WRITING", "REWRITING", "POLISHING", "STEERING", "IDLE"),
    "REWRITING": ("WRITING", "STEERING"),
    "POLISHING": ("WRITING", "STEERING"),
    "STEERING": ("WRITING", "REVIEWING", "REWRITING", "POLISHING"),
}

MIN_WORDS, MAX_WORDS, MAX_REVISIONS = 4, 45, 2


def phase_layer() -> Layer:
    rows = [("INIT", "premise", "PREMISE"), ("INIT", "write", "WRITING"), ("PREMISE", "outline", "OUTLINE"),
            ("OUTLINE", "write", "WRITING"), ("WRITING", "complete", "COMPLETE")]
    return Layer.build("phase", PHASES, rows, "INIT", ["COMPLETE"], question="where are we", order=PHASES)


def flow_layer(whitelist: dict[str, tuple[str, ...]] | None = None) -> Layer:
    allowed = FLOW_WHITELIST if whitelist is None else whitelist
    rows = [(source, FLOW_VERBS[dest], dest) for source, dests in allowed.items() for dest in dests]
    return Layer.build("flow", FLOWS, rows, "IDLE", question="what are we doing")


def lifecycle_layer() -> Layer:
    rows = [("idle", "start", "running"), ("running", "pause", "paused"), ("running", "stop", "idle"),
            ("running", "complete", "completed"), ("paused", "resume", "running")]
    return Layer.build("lifecycle", LIFECYCLE, rows, "idle", ["completed"], question="may it run at all",
                       persisted=False)


def writing_rules() -> list[CrossRule]:
    return [
        CrossRule("complete_means_flow_idle", "phase", {"COMPLETE"}, "flow", {"IDLE"}),
        CrossRule("busy_flow_means_phase_writing", "flow", set(FLOWS) - {"IDLE"}, "phase", {"WRITING"}),
    ]


def lifecycle_view(state: LayeredState) -> str:
    """idle / running / paused / completed, derived from the persisted layers and the control facts."""
    if state.halted is not None or state.aborted is not None:
        return "paused"
    if state.layers.get("phase") == "COMPLETE":
        return "completed"
    return "running" if state.running else "idle"


# ---------------------------------------------------------------- routers (their keys are declared)
def route_after_load(state: LayeredState) -> Literal["premise", "outline", "plan", "draft", "review", "rewrite",
                                                     "polish", "checkpoint", "done"]:
    """Where a (re)started run continues, read from the persisted phase and flow alone."""
    phase, flow, memo = state.layers["phase"], state.layers["flow"], state.memo
    if phase != "WRITING":
        return {"INIT": "premise", "PREMISE": "outline", "OUTLINE": "plan", "COMPLETE": "done"}[phase]  # type: ignore[return-value]
    if flow == "IDLE":
        unsaved = memo.get("verdict") == "accept" and memo.get("section") == len(memo.get("sections", []))
        return "checkpoint" if unsaved else "plan"
    if flow == "WRITING":
        return "review" if memo.get("draft") else "draft"
    return {"REVIEWING": "review", "REWRITING": "rewrite", "POLISHING": "polish"}.get(flow, "draft")  # type: ignore[return-value]


def route_after_plan(state: LayeredState) -> Literal["draft", "finish"]:
    memo = state.memo
    return "draft" if memo["section"] < len(memo["outline"]) else "finish"


def route_after_review(state: LayeredState) -> Literal["accept", "rewrite", "polish"]:
    return state.memo["verdict"]


def route_after_review_skipping(state: LayeredState) -> Literal["accept", "rewrite", "polish", "finish"]:
    """The staged bug: the last accepted section goes straight to finish, skipping the checkpoint."""
    memo = state.memo
    last = memo["section"] == len(memo["outline"]) - 1
    return "finish" if memo["verdict"] == "accept" and last else memo["verdict"]


def route_after_checkpoint(state: LayeredState) -> Literal["next", "finish"]:
    memo = state.memo
    return "next" if len(memo["sections"]) < len(memo["outline"]) else "finish"


def route_after_checkpoint_typo(state: LayeredState) -> Literal["next", "finish"]:
    """The staged bug: a misspelt key on the last section (``Literal`` is not enforced by Python)."""
    memo = state.memo
    return "next" if len(memo["sections"]) < len(memo["outline"]) else "finsh"  # type: ignore[return-value]


# ---------------------------------------------------------------- the review rule and the polish tool
def review_verdict(draft: str, revisions: int) -> Literal["accept", "rewrite", "polish"]:
    """Too short: rewrite; too long: polish; else accept. After ``MAX_REVISIONS`` it is accepted as is."""
    words = len(draft.split())
    if revisions >= MAX_REVISIONS:
        return "accept"
    if words < MIN_WORDS:
        return "rewrite"
    return "polish" if words > MAX_WORDS else "accept"


def trim(text: str, sentences: int = 2, words: int = MAX_WORDS) -> str:
    """The polish tool: keep the first ``sentences`` sentences and at most ``words`` words."""
    parts = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    return " ".join(" ".join(parts[:sentences]).split()[:words])


def section_prompt(title: str, topic: str, number: int, *, again: bool = False) -> str:
    """A plain-completion prompt for the base model: a document it would continue with one short section."""
    hint = " (rewritten, two plain sentences)" if again else ""
    return (f"A very short story in small sections. Each section is one or two sentences.\n"
            f"Title: {title}\n\nSection {number}: {topic}{hint}\n")


# ---------------------------------------------------------------- the nodes
def _premise(ctx: Any) -> None:
    ctx.note("premise", f"A very short story titled '{ctx.memo['title']}'.")


def _outline(ctx: Any) -> None:
    ctx.note("outline", list(ctx.memo["topics"]))
    ctx.note("sections", [])


def _plan(ctx: Any) -> None:
    ctx.note("verdict", "")  # first, so that a restart never reads the previous section's verdict
    ctx.note("section", len(ctx.memo["sections"]))
    ctx.note("draft", "")
    ctx.note("revisions", 0)


def _draft(ctx: Any) -> None:
    memo = ctx.memo
    index = memo["section"]
    prompt = section_prompt(memo["title"], memo["outline"][index], index + 1)
    ctx.note("draft", ctx.call_model(prompt, max_tokens=48, stop=["\n\n", "Section"]).strip())


def _review(ctx: Any) -> None:
    ctx.note("verdict", review_verdict(ctx.memo["draft"], ctx.memo["revisions"]))


def _rewrite(ctx: Any) -> None:
    memo = ctx.memo
    index = memo["section"]
    prompt = section_prompt(memo["title"], memo["outline"][index], index + 1, again=True)
    ctx.note("draft", ctx.call_model(prompt, max_tokens=48, stop=["\n\n", "Section"]).strip())
    ctx.note("revisions", memo["revisions"] + 1)


def _polish(ctx: Any) -> None:
    ctx.note("draft", ctx.call_tool("trim", trim, text=ctx.memo["draft"]))
    ctx.note("revisions", ctx.memo["revisions"] + 1)


def _checkpoint(ctx: Any) -> None:
    memo = ctx.memo
    ctx.call_tool("save_section", lambda index, text: {"saved": index}, index=memo["section"], text=memo["draft"])
    ctx.note("sections", [*memo["sections"], memo["draft"]])


def writing_nodes() -> list[Node]:
    return [
        Node("load", doc="reads the persisted layers; its router says where work continues"),
        Node("premise", _premise, enters={"phase": "PREMISE"}),
        Node("outline", _outline, enters={"phase": "OUTLINE"}),
        Node("plan", _plan, enters={"phase": "WRITING"}),
        Node("draft", _draft, enters={"flow": "WRITING"}),
        Node("review", _review, enters={"flow": "REVIEWING"}),
        Node("rewrite", _rewrite, enters={"flow": "REWRITING"}, leaves={"flow": "WRITING"}),
        Node("polish", _polish, enters={"flow": "POLISHING"}, leaves={"flow": "WRITING"}),
        Node("checkpoint", _checkpoint, enters={"flow": "IDLE"}),
        Node("finish", enters={"phase": "COMPLETE"}),
    ]


def writing_spec(bug: str | None = None, *, nodes: Sequence[Node] | None = None,
                 flow: Layer | None = None) -> LayeredSpec:
    """The demo machine; ``bug`` stages a trap ("skip_checkpoint" or "typo_route"), None is the sound one."""
    if bug not in (None, "skip_checkpoint", "typo_route"):
        raise LabkitError(f"unknown staged bug {bug!r}", "use None, 'skip_checkpoint' or 'typo_route'.")
    layers = [phase_layer(), flow if flow is not None else flow_layer()]
    review = (Router.declare(route_after_review_skipping, {"accept": "checkpoint", "rewrite": "rewrite",
                                                           "polish": "polish", "finish": "finish"})
              if bug == "skip_checkpoint" else
              Router.declare(route_after_review, {"accept": "checkpoint", "rewrite": "rewrite", "polish": "polish"}))
    after_checkpoint = route_after_checkpoint_typo if bug == "typo_route" else route_after_checkpoint
    edges: dict[str, Any] = {
        "load": Router.declare(route_after_load, {
            "premise": "premise", "outline": "outline", "plan": "plan", "draft": "draft", "review": "review",
            "rewrite": "rewrite", "polish": "polish", "checkpoint": "checkpoint", "done": "done"}),
        "premise": "outline",
        "outline": "plan",
        "plan": Router.declare(route_after_plan, {"draft": "draft", "finish": "finish"}),
        "draft": "review",
        "review": review,
        "rewrite": "review",
        "polish": "review",
        "checkpoint": Router.declare(after_checkpoint, {"next": "plan", "finish": "finish"}),
        "finish": "done",
    }
    graph = Graph.build("writing", list(nodes) if nodes is not None else writing_nodes(), edges, "load",
                        ["done"], layers)
    return LayeredSpec.build("writing", layers, graph, writing_rules(), lifecycle_view, lifecycle_layer())


def job_params(title: str, topics: Sequence[str]) -> dict[str, Any]:
    """The run's inputs: recorded in its first event, from which the reducer starts the memo."""
    return {"memo": {"title": title, "topics": list(topics)}}


# ---------------------------------------------------------------- writers
def scripted_writer(short_first: bool = True, delay: float = 0.0) -> ScriptedBackend:
    """A deterministic writer: the first draft of section 1 is too short (a rewrite), section 2 runs
    long (a polish), everything else is two plain sentences. ``delay`` seconds per call stand in for
    generation time (the crash test needs calls long enough to be killed in)."""
    def answer(request: Request) -> str:
        if delay:
            time.sleep(delay)
        match = re.search(r"Section (\d+): ([^\n(]+)", request.prompt)
        number, topic = (int(match.group(1)), match.group(2).strip()) if match else (0, "something")
        again = "(rewritten" in request.prompt
        if number == 1 and short_first and not again:
            return " Rain."
        if number == 2 and not again:
            return (f" The {topic} began before anyone noticed. " + "It went on and on, " * 12
                    + "until the night was over. Nobody spoke of it again.")
        return f" The {topic} came slowly. Everyone in the village remembered it."
    return ScriptedBackend(answer, name="scripted-writer")


class AbortDuringCall(WrappedBackend):
    """A user who clicks abort while the model generates call ``at_call`` (the call itself completes)."""

    kind = "abort-during-call"

    def __init__(self, inner: Backend, at_call: int, abort: Callable[[], Any]) -> None:
        super().__init__(inner)
        self.at_call, self.abort_fn, self.calls = at_call, abort, 0

    def _complete(self, request: Request) -> Any:
        self.calls += 1
        if self.calls == self.at_call:
            self.abort_fn()
        return self.inner._complete(request)



TABLES = {"writing": TableEntry(table=writing_spec, reduce=reduce_layers, empty=LayeredState,
                                invariants=lambda: writing_spec().invariants())}
"""Read by :mod:`labkit.core.catalog` (this module is named in ``labkit.core.registry.TABLE_MODULES``)."""
