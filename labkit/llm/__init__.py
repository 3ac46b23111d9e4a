"""LLM backends: one small interface (:class:`Backend`), several implementations.

:class:`LlamaCppBackend` (a GGUF model in process), :class:`OpenAICompatBackend` (a server),
:class:`ServerPool` (several servers of one model, one per run), :class:`RecordingBackend` /
:class:`ReplayBackend` (JSONL cassettes), :class:`ScriptedBackend` (unit tests). Every model is opened
through :func:`open_llama` with this machine's :class:`LoadPlan` (:mod:`labkit.llm.native`). Pass
``schema=`` to ``complete`` and read the answer with :func:`parse_json_output` or an :class:`OutputTally`.
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
