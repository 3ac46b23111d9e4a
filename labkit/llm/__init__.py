"""LLM backends: one small interface (:class:`Backend`), several implementations.

- :class:`LlamaCppBackend` — a GGUF model in this process (the embedded model by default);
- :class:`OpenAICompatBackend` — an OpenAI-compatible ``/v1/completions`` server;
- :class:`ServerPool` — several servers of one model; each run borrows one for all its calls;
- :class:`RecordingBackend` / :class:`ReplayBackend` — JSONL cassettes of real calls;
- :class:`ScriptedBackend` — scripted answers for unit tests of logic.

Every model this kit opens goes through :func:`open_llama`, which loads it by this machine's
:class:`LoadPlan` (no AMX weight-repack route where it crashes; see :mod:`labkit.llm.native`).

Structured output: pass ``schema=`` (a JSON schema) to ``complete``; read the answer with
:func:`parse_json_output` (or an :class:`OutputTally`, which counts invalid outputs).
"""

from labkit.llm.backend import Backend, Completion, Request
from labkit.llm.cassette import RecordingBackend, ReplayBackend, cassette_key
from labkit.llm.errors import BackendError, CassetteError, CassetteMiss, GrammarError, ModelFileError, ServerError
from labkit.llm.fake import ScriptedBackend
from labkit.llm.grammar import CompiledSchema, compile_schema
from labkit.llm.http import OpenAICompatBackend
from labkit.llm.llamacpp import LlamaCppBackend
from labkit.llm.native import LoadPlan, decide_load_plan, load_plan, open_llama
from labkit.llm.parse import OutputTally, parse_json_output
from labkit.llm.pool import ServerPool

__all__ = ["Backend", "BackendError", "CassetteError", "CassetteMiss", "CompiledSchema", "Completion",
           "GrammarError", "LlamaCppBackend", "LoadPlan", "ModelFileError", "OpenAICompatBackend", "OutputTally",
           "RecordingBackend", "ReplayBackend", "Request", "ScriptedBackend", "ServerError", "ServerPool",
           "cassette_key", "compile_schema", "decide_load_plan", "load_plan", "open_llama", "parse_json_output"]
