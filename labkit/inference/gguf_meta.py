"""What a model needs in memory, as an :class:`ArchSpec` read from a GGUF file or given by hand;
:func:`read_gguf_arch` parses header and tensor table itself, skipping long arrays (``GGUFReader`` is slow)."""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gguf

from labkit.core.errors import LabkitError

_MAGIC = b"GGUF"
_SCALAR = {  # GGUF value type -> struct format (little-endian)
    gguf.GGUFValueType.UINT8: "<B", gguf.GGUFValueType.INT8: "<b",
    gguf.GGUFValueType.UINT16: "<H", gguf.GGUFValueType.INT16: "<h",
    gguf.GGUFValueType.UINT32: "<I", gguf.GGUFValueType.INT32: "<i",
    gguf.GGUFValueType.FLOAT32: "<f", gguf.GGUFValueType.BOOL: "<?",
    gguf.GGUFValueType.UINT64: "<Q", gguf.GGUFValueType.INT64: "<q",
    gguf.GGUFValueType.FLOAT64: "<d",
}
_KEEP_ARRAY = 4096  # arrays longer than this (vocabularies) are skipped; only their length is kept

# Sliding-window layout per architecture when the file does not carry it. llama.cpp hard-codes these
# in its model loader (src/llama-model.cpp, ``set_swa_pattern``): in Gemma 3 every 6th layer is global
# and the other five use the sliding window; in Gemma 2 every 2nd layer is global. The load log of the
# embedded model confirms the Gemma 3 rule ("layer 5 ... is_swa = 0").
_SWA_PERIOD = {"gemma3": 6, "gemma2": 2}

_LAYER_RE = re.compile(r"^blk\.(\d+)\.")


class GGUFError(LabkitError):
    """A file could not be read as a GGUF model."""


@dataclass(frozen=True)
class TensorInfo:
    """One entry of a GGUF tensor table; ``n_bytes`` is exact for its quantisation type."""

    name: str
    shape: tuple[int, ...]
    type_name: str
    n_bytes: int


@dataclass(frozen=True)
class ArchSpec:
    """The numbers memory depends on: ``layer_bytes[i]`` per block, ``input_bytes`` (embedding, on the host),
    ``output_bytes`` (the head), ``n_head_kv`` per layer and ``swa_layers``."""

    name: str
    architecture: str
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: tuple[int, ...]
    head_dim_k: int
    head_dim_v: int
    n_vocab: int
    n_ctx_train: int
    layer_bytes: tuple[int, ...]
    input_bytes: int
    output_bytes: int
    n_swa: int = 0
    swa_layers: tuple[bool, ...] = ()
    tied_output: bool = False
    source: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if len(self.layer_bytes) != self.n_layer or len(self.n_head_kv) != self.n_layer:
            raise LabkitError(f"architecture '{self.name}': per-layer lists do not have n_layer="
                              f"{self.n_layer} entries", "give one value per layer.")
        if self.swa_layers and len(self.swa_layers) != self.n_layer:
            raise LabkitError(f"architecture '{self.name}': swa_layers has {len(self.swa_layers)} entries, "
                              f"expected {self.n_layer}", "give one flag per layer, or none.")

    @property
    def weight_bytes(self) -> int:
        """All weights once (what the file holds; the tied-output copy is not counted twice)."""
        return (self.input_bytes + sum(self.layer_bytes) + self.output_bytes
                - (self.input_bytes if self.tied_output else 0))


@dataclass(frozen=True)
class GGUFFile:
    """The parsed header of a GGUF file: metadata (long arrays replaced by their length) and tensors."""

    path: Path
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorInfo, ...]

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    def arch_key(self, suffix: str, default: Any = None) -> Any:
        return self.metadata.get(f"{self.architecture}.{suffix}", default)


class _Cursor:
    """Reads little-endian values from a memory map; every read is bounds-checked."""

    def __init__(self, buf: mmap.mmap, path: Path) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise GGUFError(f"{self.path} ends inside its GGUF header (at byte {self.pos})",
                            "the file is truncated; download or assemble it again.")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        length = self.take("<Q")
        if self.pos + length > len(self.buf):
            raise GGUFError(f"{self.path}: a string in the GGUF header runs past the end of the file",
                            "the file is truncated or not a GGUF model.")
        raw = bytes(self.buf[self.pos:self.pos + length])
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def value(self, vtype: int) -> Any:
        if vtype == gguf.GGUFValueType.STRING:
            return self.string()
        if vtype == gguf.GGUFValueType.ARRAY:
            etype, count = self.take("<I"), self.take("<Q")
            if count > _KEEP_ARRAY:
                self.skip_array(etype, count)
                return _LongArray(count)
            return [self.value(etype) for _ in range(count)]
        try:
            return self.take(_SCALAR[gguf.GGUFValueType(vtype)])
        except (ValueError, KeyError):
            raise GGUFError(f"{self.path}: unknown GGUF value type {vtype} at byte {self.pos}",
                            "the file is damaged or from a newer GGUF version than the gguf package "
                            "knows; update the gguf package.") from None

    def skip_array(self, etype: int, count: int) -> None:
        if etype == gguf.GGUFValueType.STRING:
            for _ in range(count):
                length = self.take("<Q")  # read first: ``pos += take()`` would lose take's own advance
                self.pos += length
        elif etype == gguf.GGUFValueType.ARRAY:
            for _ in range(count):
                self.value(etype)
        else:
            self.pos += count * struct.calcsize(_SCALAR[gguf.GGUFValueType(etype)])


@dataclass(frozen=True)
class _LongArray:
    """Stands in for a skipped metadata array (a vocabulary): only its length is kept."""

    length: int


def read_gguf(path: str | Path) -> GGUFFile:
    """Parse a GGUF file's header (metadata and tensor table) without loading any weights."""
    path = Path(path)
    if not path.exists():
        raise GGUFError(f"model file not found: {path}",
                        "pass the path of a .gguf file, or leave --model out to use the embedded model.")
    if not path.is_file():
        raise GGUFError(f"{path} is not a file", "pass the path of a .gguf file.")
    with path.open("rb") as handle:
        if handle.read(4) != _MAGIC:
            raise GGUFError(f"{path} is not a GGUF file (it does not start with the bytes 'GGUF')",
                            "llama.cpp reads only GGUF models; convert the model with llama.cpp's "
                            "convert_hf_to_gguf.py, or download a .gguf file.")
        handle.seek(0)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            cur = _Cursor(buf, path)
            cur.pos = 4
            version = cur.take("<I")
            if version not in (2, 3):
                raise GGUFError(f"{path}: GGUF version {version} is not supported (2 and 3 are)",
                                "re-convert the model with a current llama.cpp.")
            n_tensors, n_kv = cur.take("<Q"), cur.take("<Q")
            metadata: dict[str, Any] = {}
            for _ in range(n_kv):
                key = cur.string()
                metadata[key] = cur.value(cur.take("<I"))
            tensors = []
            for _ in range(n_tensors):
                name = cur.string()
                dims = tuple(cur.take("<Q") for _ in range(cur.take("<I")))
                qtype = gguf.GGMLQuantizationType(cur.take("<I"))
                cur.take("<Q")  # data offset: not needed for sizes
                block, type_size = gguf.GGML_QUANT_SIZES[qtype]
                n_elements = 1
                for d in dims:
                    n_elements *= d
                tensors.append(TensorInfo(name, dims, qtype.name, n_elements // block * type_size))
    return GGUFFile(path, version, metadata, tuple(tensors))


def _per_layer(value: Any, n_layer: int, what: str) -> tuple[int, ...]:
    if isinstance(value, list):
        if len(value) != n_layer:
            raise GGUFError(f"metadata {what} has {len(value)} entries for {n_layer} layers",
                            "the file's metadata is inconsistent; re-convert the model.")
        return tuple(int(v) for v in value)
    return (int(value),) * n_layer


def arch_from_gguf(model: GGUFFile) -> ArchSpec:
    """Turn a parsed GGUF header into the numbers the estimator needs."""
    arch = model.architecture
    required = ("block_count", "embedding_length", "attention.head_count")
    missing = [k for k in required if model.arch_key(k) is None]
    if not arch or missing:
        raise GGUFError(f"{model.path} lacks the metadata an estimate needs "
                        f"(architecture '{arch}', missing: {', '.join(f'{arch}.{m}' for m in missing)})",
                        "this is not a decoder language model llama.cpp can load, or its metadata is damaged.")
    n_layer = int(model.arch_key("block_count"))
    n_embd = int(model.arch_key("embedding_length"))
    n_head = _per_layer(model.arch_key("attention.head_count"), n_layer, "head_count")
    n_head_kv = _per_layer(model.arch_key("attention.head_count_kv", n_head[0]), n_layer, "head_count_kv")
    head_k = int(model.arch_key("attention.key_length", n_embd // max(n_head)))
    head_v = int(model.arch_key("attention.value_length", head_k))

    layer_bytes = [0] * n_layer
    input_bytes = output_bytes = 0
    names = {t.name for t in model.tensors}
    for t in model.tensors:
        match = _LAYER_RE.match(t.name)
        if match and int(match.group(1)) < n_layer:
            layer_bytes[int(match.group(1))] += t.n_bytes
        elif t.name.startswith("output"):
            output_bytes += t.n_bytes
        else:
            input_bytes += t.n_bytes  # token_embd and any other non-repeating tensor
    notes: list[str] = []
    tied = "output.weight" not in names and "token_embd.weight" in names
    if tied:
        output_bytes += next(t.n_bytes for t in model.tensors if t.name == "token_embd.weight")

    n_swa = int(model.arch_key("attention.sliding_window", 0) or 0)
    swa_layers: tuple[bool, ...] = ()
    if n_swa:
        pattern = model.arch_key("attention.sliding_window_pattern")
        if isinstance(pattern, list):
            swa_layers = tuple(bool(v) for v in pattern)
        elif isinstance(pattern, int) and pattern > 0:
            swa_layers = tuple((i + 1) % pattern != 0 for i in range(n_layer))
        elif arch in _SWA_PERIOD:
            period = _SWA_PERIOD[arch]
            swa_layers = tuple((i + 1) % period != 0 for i in range(n_layer))
        else:
            notes.append("sliding window declared but its layer pattern is unknown: all layers counted as "
                         "full attention (an over-estimate)")
    tokens = model.metadata.get("tokenizer.ggml.tokens")
    n_vocab = tokens.length if isinstance(tokens, _LongArray) else len(tokens or [])
    name = str(model.metadata.get("general.name", model.path.stem))
    return ArchSpec(
        name=name, architecture=arch, n_layer=n_layer, n_embd=n_embd, n_head=max(n_head),
        n_head_kv=n_head_kv, head_dim_k=head_k, head_dim_v=head_v, n_vocab=n_vocab,
        n_ctx_train=int(model.arch_key("context_length", 0) or 0), layer_bytes=tuple(layer_bytes),
        input_bytes=input_bytes, output_bytes=output_bytes, n_swa=n_swa if swa_layers else 0,
        swa_layers=swa_layers, tied_output=tied, source=f"GGUF metadata of {model.path.name}", notes=tuple(notes))


def read_gguf_arch(path: str | Path) -> ArchSpec:
    """Read a GGUF file's header and describe its architecture (no weights are loaded)."""
    return arch_from_gguf(read_gguf(path))
