"""The command-line options that put a model behind OpenAI-compatible servers, declared once so every
command means the same by them; a command says only whether ``--server`` may repeat."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from labkit.core.errors import LabkitError
from labkit.llm.http import SCHEMA_MODES, OpenAICompatBackend
from labkit.llm.server_kinds import KIND_CHOICES

# (option, the argparse attribute) of the options that mean nothing without --server
_SERVER_ONLY = (("--server-model", "server_model"), ("--model-sha256", "model_sha256"),
                ("--server-kind", "server_kind"), ("--server-model-kind", "server_model_kind"))


def add_server_options(parser: Any, *, server_help: str) -> None:
    """Add ``--server`` (repeatable; the command decides whether it accepts several) and its options."""
    parser.add_argument("--server", action="append", metavar="URL", help=server_help)
    parser.add_argument("--server-model", metavar="NAME",
                        help="the model name asked for in every request to --server and written in provenance "
                             "(default: the first model the server lists)")
    parser.add_argument("--schema-mode", choices=list(SCHEMA_MODES), default="grammar",
                        help="how a schema reaches --server: grammar (llama.cpp servers, default), "
                             "structured_outputs (vLLM), json_schema (llama-server), none")
    parser.add_argument("--server-kind", choices=list(KIND_CHOICES),
                        help="speak to --server as this kind of server (auto: detect it): chat turns through the "
                             "server's template for a chat model, the schema where that server reads it, "
                             "per-request cache control where it has one (default: plain completions, "
                             "--schema-mode, a barrier request before each call)")
    parser.add_argument("--server-model-kind", choices=["base", "chat"],
                        help="with --server-kind: whether the served model is a base model (plain completions) "
                             "or a chat model (its chat template); default: asked of the server")
    parser.add_argument("--model-sha256", help="the served model file's sha256, for provenance and cassette keys "
                        "(a llama.cpp server's local file is hashed without it)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per server request (default 60)")
    parser.add_argument("--retries", type=int, default=2,
                        help="retries per server request, its barrier request included (default 2; every retry "
                             "is counted in the run's record)")


def check_server_options(args: argparse.Namespace, *, several: bool,
                         one_only_hint: str = "give --server once.") -> None:
    """Refuse what would be ignored: the options that describe a server without ``--server``, and a
    repeated ``--server`` where the command uses one server only (``several=False``)."""
    given = [option for option, attr in _SERVER_ONLY if getattr(args, attr, None)]
    if given and not args.server:
        raise LabkitError(f"{' and '.join(given)} describe(s) a server, but no --server is given",
                          "add --server URL, or drop the option(s) for an in-process model.")
    if len(args.server or []) > 1 and not several:
        raise LabkitError(f"--server is given {len(args.server)} times, but this command uses one server",
                          one_only_hint)


def connect_servers(args: argparse.Namespace, *, several: bool,
                    one_only_hint: str = "give --server once.") -> list[OpenAICompatBackend]:
    """The servers ``--server`` names, each asked to describe itself (a down server fails here); [] without."""
    check_server_options(args, several=several, one_only_hint=one_only_hint)
    urls: list[str] = list(args.server or [])
    if not urls:
        return []
    if args.retries < 0:
        raise LabkitError(f"--retries must be 0 or more, got {args.retries}", "use 0 for no retries.")
    servers = []
    for url in urls:
        server = OpenAICompatBackend(url, model=args.server_model, model_sha256=args.model_sha256,
                                     timeout_s=args.timeout, retries=args.retries, schema_mode=args.schema_mode,
                                     server_kind=getattr(args, "server_kind", None),
                                     model_kind=getattr(args, "server_model_kind", None))
        server.describe()  # fails early, with a clear error, when the server is down
        servers.append(server)
    return servers


def add_slots_option(parser: Any) -> None:
    """``--slots``: how many runs each ``--server`` takes at once (a comparison that spreads its runs)."""
    parser.add_argument("--slots", type=int, default=1, help="runs each --server takes at once (a llama.cpp "
                        "server started with --parallel N has N; default 1)")


def live_backend(args: argparse.Namespace, local: Callable[[], Any]) -> Any:
    """The model a comparison records with: one server, a pool (several ``--server`` or ``--slots`` > 1, as
    the runner asks the pool how many runs go at once), else ``local()``."""
    if args.server and getattr(args, "model", None):
        raise LabkitError("give either --model or --server, not both", "one model per recording.")
    servers = connect_servers(args, several=True)
    slots = getattr(args, "slots", 1)
    if len(servers) > 1 or (servers and slots > 1):
        from labkit.llm.pool import ServerPool

        return ServerPool(servers, slots=slots)  # refuses servers that do not serve the same model alike
    if servers:
        return servers[0]
    if slots > 1:
        raise LabkitError("--slots is for servers: an in-process model runs one run at a time",
                          "drop --slots, or give --server URL (once or more).")
    return local()
