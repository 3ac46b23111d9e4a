"""``labkit doctor --server URL``: is the server up, which model, chat or base, does it enforce a JSON
schema (:func:`labkit.llm.server_kinds.probe_schema`), how fast; each :class:`ServerCheck` prints its fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from labkit.core.errors import LabkitError
from labkit.doctor.report import Finding, Report
from labkit.llm.http import OpenAICompatBackend
from labkit.llm.server_kinds import SERVER_KINDS, ServerKind, probe_schema

SPEED_PROMPT = "Count from one to twenty in words: one, two, three,"
SPEED_TOKENS = 32
NEEDED = ("server",)
_KIND_HINT = f"pass --server-kind ({', '.join(SERVER_KINDS)}) if detection is wrong"


@dataclass
class ServerState:
    """What the checks found so far; a later check reads what an earlier one left."""

    url: str
    model: str | None
    kind_choice: str
    model_kind: str | None
    timeout_s: float
    backend: OpenAICompatBackend | None = None
    listed: list[str] = field(default_factory=list)
    kind: ServerKind | None = None
    stopped: bool = False  # a failure that makes the later checks pointless


Step = Callable[[ServerState], Finding]


@dataclass(frozen=True)
class ServerCheck:
    """A declared server check: its name and what it does with the state."""

    name: str
    run: Step


def _start_hint(state: ServerState) -> str:
    kind = SERVER_KINDS.get(state.kind_choice)
    start = kind.start if kind else SERVER_KINDS["llama-cpp-python"].start
    return f"is the server running at {state.url}? start one, e.g. `{start}`, or check the URL"


def check_reachable(state: ServerState) -> Finding:
    backend = OpenAICompatBackend(state.url, model=state.model, model_sha256="(not hashed by the doctor)",
                                  timeout_s=state.timeout_s, retries=0,
                                  server_kind=state.kind_choice, model_kind=state.model_kind)  # type: ignore[arg-type]
    state.backend = backend
    models = backend.facts().get("/v1/models")
    if not isinstance(models, dict):
        state.stopped = True
        return Finding("reachable", False, f"no OpenAI-compatible answer from {backend.base_url}/v1/models",
                       _start_hint(state), NEEDED)
    state.listed = [str(m.get("id")) for m in models.get("data", []) if isinstance(m, dict)]
    return Finding("reachable", True, f"{backend.base_url} answers; /v1/models lists {len(state.listed)} model(s)",
                   "", NEEDED)


def check_kind(state: ServerState) -> Finding:
    assert state.backend is not None
    kind = state.kind = state.backend.server_kind
    how = "given" if state.kind_choice != "auto" else "detected from its answers"
    fix = _KIND_HINT if state.kind_choice == "auto" and kind.name == "openai" else ""
    return Finding("server kind", True, f"{kind.name}: {kind.label} ({how}); independent calls: {kind.isolation}",
                   fix, NEEDED)


def check_model(state: ServerState) -> Finding:
    listed = ", ".join(state.listed[:5]) or "none"
    if state.model is not None:
        if state.listed and state.model not in state.listed:
            state.stopped = True
            return Finding("model", False, f"{state.model!r} is not among the served models ({listed})",
                           f"--server-model {state.listed[0]}   # or load {state.model} on the server", NEEDED)
        return Finding("model", True, f"{state.model} (given)", "", NEEDED)
    if not state.listed:
        state.stopped = True
        return Finding("model", False, "the server lists no model", "pass --server-model NAME", NEEDED)
    state.model = state.listed[0]
    if state.backend is not None:
        state.backend.model = state.model
    return Finding("model", True, f"{state.model} (the first model the server lists)",
                   "" if len(state.listed) == 1 else f"pass --server-model to choose another of: {listed}", NEEDED)


def check_chat(state: ServerState) -> Finding:
    assert state.backend is not None
    backend = state.backend
    form = ("chat turns through the server's chat template" if backend.model_kind == "chat" else
            "plain completions (the prompt as it is)")
    other = "base" if backend.model_kind == "chat" else "chat"
    how = backend.describe()["model_kind_source"]
    return Finding("chat or base", True, f"{backend.model_kind} model: {form} — {how}",
                   "" if state.model_kind else f"if that is wrong: --server-model-kind {other}", NEEDED)


def check_schema(state: ServerState) -> Finding:
    assert state.backend is not None and state.kind is not None
    fix = (f"{state.kind.schema_fix}; without it the kit still validates every answer, but expect many "
           "schema-invalid outputs")
    try:
        probe = probe_schema(state.backend)
    except LabkitError as exc:
        return Finding("schema enforced", False, f"the schema probe failed: {exc}", fix, NEEDED)
    return Finding("schema enforced", probe.enforced, probe.detail, "" if probe.enforced else fix, NEEDED)


def check_speed(state: ServerState) -> Finding:
    assert state.backend is not None
    try:
        out = state.backend.complete(SPEED_PROMPT, max_tokens=SPEED_TOKENS)
    except LabkitError as exc:
        return Finding("speed", False, f"a short completion failed: {exc}",
                       "check the server's log; raise --timeout for a slow server", NEEDED)
    if out.completion_tokens < 1 or out.seconds <= 0:
        return Finding("speed", False, f"the server wrote {out.completion_tokens} token(s) in {out.seconds:.2f} s",
                       "check the server's log: it answered without generating", NEEDED)
    rate = out.completion_tokens / out.seconds
    return Finding("speed", True, f"{out.completion_tokens} tokens in {out.seconds:.2f} s = {rate:.1f} tokens/s "
                   f"(prompt {out.prompt_tokens} tokens, prompt processing included)", "", NEEDED)


SERVER_CHECKS: tuple[ServerCheck, ...] = (
    ServerCheck("reachable", check_reachable),
    ServerCheck("server kind", check_kind),
    ServerCheck("model", check_model),
    ServerCheck("chat or base", check_chat),
    ServerCheck("schema enforced", check_schema),
    ServerCheck("speed", check_speed),
)
"""The server checks in order: each may read what the ones before found."""


def examine_server(url: str, *, model: str | None = None, kind: str = "auto", model_kind: str | None = None,
                   timeout_s: float = 60.0, checks: tuple[ServerCheck, ...] = SERVER_CHECKS) -> Report:
    """Run the server checks; after a failure that makes the rest pointless (down, no model) they stop."""
    state = ServerState(url, model, kind, model_kind, timeout_s)
    report = Report("a server", heading=f"labkit doctor — can the kit use the server at {url}?")
    for check in checks:
        if state.stopped:
            break
        report.findings.append(check.run(state))
    return report


def run_server_doctor(args: Any) -> Report:
    """``labkit doctor --server ...``'s report from its parsed options."""
    return examine_server(args.server, model=args.server_model, kind=args.server_kind or "auto",
                          model_kind=args.server_model_kind, timeout_s=args.timeout)
