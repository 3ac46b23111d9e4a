"""The layout is the architecture (docs/architecture.md): imports go downwards only, and every package is drawn."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LABKIT = Path(__file__).resolve().parents[1] / "labkit"
MACHINES = {"runtime", "repoedit", "dialog", "layers", "reading"}
MAY_IMPORT = {  # package -> the packages of labkit it may import besides itself
    "core": set(),
    "llm": {"core"},
    "compare": {"core", "llm"},
    **{machine: {"core", "llm", "compare"} for machine in MACHINES},
    "reading": {"core", "llm", "compare", "runtime"},  # the reading comparison runs the runtime's machine
    "course": {"core", "llm", "compare"},
    "doctor": {"core", "llm"},
    "inference": {"core", "llm", "compare"},
}


def _imports(path: Path) -> set[str]:
    """The labkit packages a module imports (``labkit.X...`` -> X), lazily or not."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found |= {name.split(".")[1] for name in names if name.startswith("labkit.")}
    return found


PACKAGES = sorted(p.name for p in LABKIT.iterdir() if (p / "__init__.py").exists())


def test_every_package_has_its_place_in_the_layers() -> None:
    assert set(PACKAGES) == set(MAY_IMPORT)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    climbs = {f"{path.relative_to(LABKIT)} imports labkit.{other}" for path in (LABKIT / package).rglob("*.py")
              for other in _imports(path) - MAY_IMPORT[package] - {package}}
    assert not climbs


def test_at_most_ten_modules_sit_at_the_top_level() -> None:
    assert len(list(LABKIT.glob("*.py"))) <= 10


def test_the_architecture_page_names_every_package() -> None:
    page = (LABKIT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert not [p for p in PACKAGES if f"{p}/" not in page]
