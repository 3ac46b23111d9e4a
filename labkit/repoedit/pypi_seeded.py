"""The ``pypi:seeded`` benchmark: seeded bugs in real Python packages, as repo-editing tasks.

Each package of ``data/seeded/packages.yaml`` is an sdist pinned by version and sha256, fetched with pip
from the package index the kit installs from (or read from a local path), and laid out as a project: its
source folders and tests as the manifest maps them, nothing else (no packaging config, so pytest runs the
same everywhere). Its own suite must pass in the sandbox. :mod:`labkit.repoedit.seeded` then makes mutants
of its source and keeps those that 1 to ``FAILING_BOUND`` of its tests catch; each kept mutant is one task
whose project is the package with that one change, whose requirement is a bug report (failing tests and a
symptom, never the change), and whose oracle is the change turned back. The split is the package's: dev
packages to design on, other packages to report on. Built once into the cache, keyed by the manifest entry,
this builder's and its reports' versions and the seed; one split can be built alone. Every build writes each
task's digest (``tasks.sha256``) and is checked against the reference build's, pinned beside the manifest: a
recording replays only on tasks that are the same.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.core.errors import LabkitError
from labkit.repoedit.index import is_test_path
from labkit.repoedit.seeded import FAILING_BOUND, Mutant, bug_report, definition_mutants, keep, sample
from labkit.repoedit.tasks import load_tasks
from labkit.repoedit.workspace import Workspace

SOURCE = "pypi:seeded"
Split = Literal["dev", "test"]
SPLITS: tuple[str, ...] = get_args(Split)
MANIFEST = Path(__file__).resolve().parents[2] / "data" / "seeded" / "packages.yaml"
BUILDER_VERSION = 2  # 2: a unittest class named test... is not read as a module in the failing tests' ids
REPORT_VERSION = 2  # 2: the reports leave out machine-dependent text (seeded.MACHINE_TEXT); the kept mutants stay
SEED = 20261206
TRIES_PER_TASK = 4  # mutants tried per wanted task before a package is built with fewer
SUITE_TIMEOUT = 120.0
KEPT = MANIFEST.with_name("kept.yaml")
PINNED = MANIFEST.with_name("tasks.sha256")  # the reference build's task digests, which every build is checked against
KEPT_HEADER = ("# The mutants a pypi:seeded build kept, per package, in task order (pypi_seeded.mutant_key). A build\n"
               "# that finds this file beside its manifest (same builder version and seed) runs only these mutants,\n"
               "# and each must be caught again; without it, the build searches the candidates again.\n")


class Package(BaseModel):
    """One pinned sdist, how it is laid out as a project, and how many tasks it gives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    version: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    split: Split
    layout: dict[str, str] = Field(min_length=1)  # a path in the sdist -> its path in the project
    drop: tuple[str, ...] = ()  # project paths left out, each with its reason in the manifest's comment
    tasks: int = Field(ge=1, le=200)
    path: str | None = None  # a local sdist instead of the index (tests; a machine without the index)

    @property
    def sdist_name(self) -> str:
        return f"{self.name}-{self.version}"


class Manifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1]
    packages: tuple[Package, ...] = Field(min_length=1)


def load_manifest(path: Path = MANIFEST) -> Manifest:
    """The manifest, validated; a bad one is an error naming the field."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        manifest = Manifest.model_validate(raw)
    except OSError as exc:
        raise LabkitError(f"cannot read the package manifest {path}: {exc.strerror}", "check the path.") from None
    except (yaml.YAMLError, ValidationError) as exc:
        raise LabkitError(f"the package manifest {path} is not valid: {exc}",
                          "each package needs name, version, sha256, split, layout and tasks.") from None
    names = [p.name for p in manifest.packages]
    if len(set(names)) != len(names):
        raise LabkitError(f"the package manifest {path} names a package twice", "name each package once.")
    return manifest


def fetch_sdist(package: Package, cache: Path, *, base: Path | None = None) -> Path:
    """The package's sdist, checked against its sha256: a local ``path`` or one fetched once with pip."""
    if package.path is not None:
        found = Path(package.path) if base is None else base / package.path
    else:
        folder = cache / "sdists"
        folder.mkdir(parents=True, exist_ok=True)
        found = next(iter(sorted(folder.glob(f"{package.sdist_name}.tar.gz"))), folder / "missing")
        if not found.is_file():
            run = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                                  "--no-binary", ":all:", "--dest", str(folder),
                                  f"{package.name}=={package.version}"], capture_output=True, text=True)
            candidates = sorted(folder.glob(f"{package.name.replace('-', '_')}-{package.version}.tar.gz")
                                ) + sorted(folder.glob(f"{package.sdist_name}.tar.gz"))
            if run.returncode != 0 or not candidates:
                raise LabkitError(f"could not fetch the sdist of {package.name} {package.version}: "
                                  f"{(run.stderr or run.stdout).strip()[-400:]}",
                                  "this needs the package index; or download it yourself and give its path.")
            found = candidates[0]
    if not found.is_file():
        raise LabkitError(f"the sdist {found} of {package.name} is not there", "check the manifest's path.")
    digest = hashlib.sha256(found.read_bytes()).hexdigest()
    if digest != package.sha256:
        raise LabkitError(f"the sdist {found} has sha256 {digest}, not the manifest's {package.sha256}",
                          "the file is not the pinned release; delete it so it is fetched again.")
    return found


def lay_out(sdist: Path, package: Package, project: Path) -> None:
    """The project folder: the manifest's paths copied out of the sdist, minus the dropped ones."""
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(sdist) as archive:
        archive.extractall(tmp, filter="data")
        tops = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise LabkitError(f"{sdist} does not hold one top folder", "an sdist has one; check the file.")
        for inside, target in package.layout.items():
            source = tops[0] / inside
            if not source.exists():
                raise LabkitError(f"{package.name}: the layout's {inside!r} is not in its sdist",
                                  f"name paths inside {tops[0].name}/.")
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, project / target)
    for drop in package.drop:
        gone = project / drop
        if not gone.exists():
            raise LabkitError(f"{package.name}: the dropped path {drop!r} is not in the project",
                              "name paths as the layout places them.")
        shutil.rmtree(gone) if gone.is_dir() else gone.unlink()
    for cache in project.rglob("__pycache__"):
        shutil.rmtree(cache)


def source_files(project: Path) -> list[str]:
    """The package's source files a bug may be seeded in (not its tests, not conftest files)."""
    return sorted(p.relative_to(project).as_posix() for p in project.rglob("*.py")
                  if not is_test_path(p.relative_to(project).as_posix()) and p.name != "conftest.py")


def candidates(project: Path, seed: int) -> list[Mutant]:
    """Every mutant of the package's source, in the seeded order that spreads them over definitions."""
    found: list[Mutant] = []
    for file in source_files(project):
        try:
            found += definition_mutants((project / file).read_text(encoding="utf-8"), file)
        except (SyntaxError, UnicodeDecodeError):
            continue  # a file for another Python, or not text: nothing to seed there
    return sample(found, len(found), seed)


def oracle_search(text: str, mutant: Mutant) -> tuple[str, str]:
    """The mutated lines, widened by whole lines until they occur once in the mutated file, and their fix."""
    lines = mutant.text.splitlines(keepends=True)
    at, k = mutant.line - 1, mutant.mutated.count("\n") + 1
    before, after = 0, 0
    while True:
        search = "".join(lines[at - before:at + k + after])
        if text.count(search) == 1:
            head, tail = "".join(lines[at - before:at]), "".join(lines[at + k:at + k + after])
            body = search[len(head):len(search) - len(tail)]
            return search, head + body.replace(mutant.mutated, mutant.original, 1) + tail
        if at - before > 0:
            before += 1
        elif at + k + after < len(lines):
            after += 1
        else:
            raise LabkitError(f"{mutant.file}: no unique span around line {mutant.line}", "this is a bug.")


def _safe_report(verdict_report: str, mutant: Mutant) -> str:
    """The report without any line that quotes the changed code (a traceback may print it)."""
    quoted = [s.strip() for s in (mutant.original + "\n" + mutant.mutated).splitlines() if len(s.strip()) >= 4]
    return "\n".join(line for line in verdict_report.splitlines() if not any(q in line for q in quoted))


def mutant_key(mutant: Mutant) -> str:
    """A short id of one mutant (where and what it changes), as :data:`KEPT` lists it."""
    return hashlib.sha256(f"{mutant.file}\0{mutant.line}\0{mutant.operator}\0{mutant.mutated}".encode()
                          ).hexdigest()[:16]


def build_package(package: Package, sdist: Path, out: Path, seed: int = SEED, log=lambda message: None,
                  kept: Sequence[str] | None = None) -> list[dict]:
    """Lay out one package, check its suite, and write its tasks' projects under ``out``; their entries. With
    ``kept`` (a list of :func:`mutant_key`), only those mutants are tried, and each must be caught again."""
    base = out / "_packages" / package.sdist_name
    base.mkdir(parents=True)
    lay_out(sdist, package, base)
    with Workspace(base) as ws:
        original = ws.run_tests(timeout=SUITE_TIMEOUT)
    if original.outcome != "passed":
        raise LabkitError(f"{package.name} {package.version}: its own suite does not pass as laid out "
                          f"({original.outcome}; failing: {', '.join(original.failed[:5]) or 'none'})",
                          "drop the test files that need what the sandbox lacks (in the manifest's drop).")
    entries: list[dict] = []
    keys: list[str] = []
    tried = 0
    wanted = None if kept is None else set(kept)
    for mutant in candidates(base, seed):
        if len(entries) == (package.tasks if wanted is None else len(wanted)) or \
                (wanted is None and tried == package.tasks * TRIES_PER_TASK):
            break
        if wanted is not None and mutant_key(mutant) not in wanted:
            continue
        tried += 1
        verdict = keep(mutant, base, original, timeout=SUITE_TIMEOUT)
        log(f"{package.name}: {mutant.file} {mutant.definition} {mutant.operator}: {verdict.why}")
        if not verdict.kept and wanted is not None:
            raise LabkitError(f"{package.name}: mutant {mutant_key(mutant)} of {KEPT.name} is not caught here "
                              f"({verdict.why})", f"move {KEPT.name} away to search for mutants again.")
        if not verdict.kept:
            continue
        task_id = f"{package.name}-{len(entries) + 1:03d}"
        project = out / task_id
        shutil.copytree(base, project, copy_function=os.link)  # the unchanged files shared with the base
        target = project / mutant.file
        target.unlink()
        target.write_text(mutant.text, encoding="utf-8")
        search, replace = oracle_search(mutant.text, mutant)
        keys.append(mutant_key(mutant))
        entries.append({
            "id": task_id, "project": task_id, "split": package.split, "kind": "mutation",
            "requirement": _safe_report(bug_report(verdict, package.name), mutant),
            "failing": list(verdict.broken),
            "origin": f"{package.name} {package.version}: {mutant.file}:{mutant.line} in {mutant.definition} "
                      f"({mutant.operator})",
            "oracle": [{"path": mutant.file, "why": f"undo the seeded {mutant.operator} change in "
                        f"{mutant.definition}", "edits": [{"search": search, "replace": replace}]}]})
    if wanted is not None and len(entries) < len(wanted):
        raise LabkitError(f"{package.name}: {len(wanted) - len(entries)} mutant(s) of {KEPT.name} are not among its "
                          "mutants", f"move {KEPT.name} away to search for mutants again.")
    (out / "_packages" / f"{package.sdist_name}.kept").write_text("\n".join(keys) + "\n", encoding="utf-8")
    return entries


def _package_key(package: Package) -> str:
    return f"{package.name} {package.version}"


def load_kept(path: Path, seed: int = SEED) -> dict[str, list[str]]:
    """The kept mutants of an earlier build, per package (``name version``); empty where ``path`` is missing or
    was written by another builder version or seed (such a build searches again)."""
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if data.get("builder") != BUILDER_VERSION or data.get("seed") != seed:
        return {}
    return {str(k): [str(key) for key in v] for k, v in (data.get("packages") or {}).items()}


def build(manifest: Manifest, out: Path, cache: Path, *, base: Path | None = None, seed: int = SEED,
          log=lambda message: None, kept: dict[str, list[str]] | None = None) -> list[dict]:
    """Every package's tasks into ``out`` (with ``tasks.yaml``, and ``kept.yaml``: which mutants were kept,
    which a later build can verify instead of searching again); the entries, in manifest order. ``kept`` is an
    earlier build's :func:`load_kept`."""
    out.mkdir(parents=True, exist_ok=True)
    entries: list[dict] = []
    for package in manifest.packages:
        entries += build_package(package, fetch_sdist(package, cache, base=base), out, seed, log,
                                 (kept or {}).get(_package_key(package)))
    (out / "tasks.yaml").write_text(yaml.safe_dump({"format": 1, "tasks": entries}, sort_keys=False,
                                                   allow_unicode=True, width=200), encoding="utf-8")
    (out / PINNED.name).write_text("".join(f"{task.digest()}  {task.id}\n"
                                           for task in load_tasks(out / "tasks.yaml").values()), encoding="utf-8")
    packages = {_package_key(p): (out / "_packages" / f"{p.sdist_name}.kept").read_text().split()
                for p in manifest.packages}
    (out / KEPT.name).write_text(KEPT_HEADER + yaml.safe_dump({"format": 1, "builder": BUILDER_VERSION, "seed": seed,
                                                               "packages": packages}, sort_keys=False),
                                 encoding="utf-8")
    return entries


def load_digests(path: Path) -> dict[str, str]:
    """A ``tasks.sha256`` file: task id -> :meth:`RepoTask.digest`, one ``<digest>  <id>`` line each."""
    found: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        digest, _, task_id = line.partition("  ")
        if len(digest) != 64 or not task_id:
            raise LabkitError(f"{path}:{number}: {line!r} is not `<sha256>  <task id>`",
                              "restore the file from git, or copy a build's tasks.sha256 over it.")
        found[task_id] = digest
    return found


def unlike_pinned(built: Path, pinned: Path = PINNED) -> list[str]:
    """The tasks of the build in ``built`` whose digest is not the pinned one (tasks the pin lacks are not
    counted); on this machine, recordings of these tasks will not replay."""
    if not pinned.is_file():
        return []
    wanted, found = load_digests(pinned), load_digests(built / PINNED.name)
    return [task for task, digest in found.items() if task in wanted and wanted[task] != digest]


def cache_key(manifest_path: Path, seed: int = SEED) -> str:
    data = manifest_path.read_bytes()
    versions = f"|{seed}|{BUILDER_VERSION}|{REPORT_VERSION}|{FAILING_BOUND}"
    return hashlib.sha256(data + versions.encode()).hexdigest()[:16]


def is_source(spec: str) -> bool:
    """Whether ``spec`` names this benchmark: ``pypi:seeded``, or one split of it (``pypi:seeded:test``)."""
    return spec == SOURCE or spec.startswith(SOURCE + ":")


def tasks_file(source: str = SOURCE, cache_dir: Path | None = None, manifest_path: Path = MANIFEST,
               log=lambda message: print(message, file=sys.stderr)) -> Path:
    """The ``tasks.yaml`` of ``source``, built into the cache on first use (a partial build never counts):
    ``pypi:seeded`` holds every package, ``pypi:seeded:dev`` and ``pypi:seeded:test`` one split's packages
    (a recording of one split need not build the other)."""
    from labkit.llm.modelfile import default_cache_dir

    split = source.removeprefix(SOURCE).removeprefix(":")
    if not is_source(source) or split not in ("", *SPLITS):
        raise LabkitError(f"unknown benchmark source {source!r}",
                          f"name {SOURCE}, or one split of it: {', '.join(f'{SOURCE}:{s}' for s in SPLITS)}.")
    manifest = load_manifest(manifest_path)
    if split:
        manifest = Manifest(format=1, packages=tuple(p for p in manifest.packages if p.split == split))
    cache = cache_dir or default_cache_dir()
    folder = cache / "pypi-seeded" / f"{cache_key(manifest_path)}-{split or 'all'}"
    done = folder / "tasks.yaml"
    if not done.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=folder.name + ".partial-", dir=folder.parent))
        log(f"labkit: building the {source} tasks into {folder} (once, 5 to 40 min)")
        try:
            build(manifest, partial / "tasks", cache, base=manifest_path.parent, log=log,
                  kept=load_kept(manifest_path.with_name(KEPT.name)))
            (partial / "tasks").rename(folder)
        except OSError:
            if not done.exists():
                raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        differing = unlike_pinned(folder, manifest_path.with_name(PINNED.name))
        if differing:
            log(f"labkit: {len(differing)} task(s) built here differ from the pinned build "
                f"({', '.join(differing[:5])}); recordings of them will not replay on this machine")
    return done


__all__ = ["KEPT", "MANIFEST", "PINNED", "SOURCE", "SPLITS", "Manifest", "Package", "build", "build_package",
           "candidates", "fetch_sdist", "is_source", "lay_out", "load_digests", "load_kept", "load_manifest",
           "mutant_key", "oracle_search", "source_files", "tasks_file", "unlike_pinned"]
