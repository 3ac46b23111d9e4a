"""LLM backends: one small interface (:class:`Backend`) and its implementations: in process, servers, a
pool of servers, cassettes and a scripted one for tests. Models open through :func:`open_llama` with this
machine's :class:`LoadPlan`; answers are read with :func:`parse_json_output` or an :class:`OutputTally`."""

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
