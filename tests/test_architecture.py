"""The house rules of the package layout (docs/architecture.md): every package is a stage, and a stage
imports only earlier stages, so no package imports a later one and no two packages import each other.
Imports inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mpistack"
FOUNDATION = {"__init__", "registry", "cache", "data"}  # used by every stage
STAGES = ["spec", "compat", "recipes", "engines", "images", "runtime", "launchers", "approaches", "parsers",
          "store", "campaign", "ingest", "analysis", "report", "doctor", "cli", "__main__"]


def stage_of(module: str) -> str:
    """mpistack.campaign.stages -> campaign"""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def imports_of(relative: Path, source: str) -> list[tuple[int, str]]:
    """(line, absolute module) of every mpistack import in `source`, the file at `relative` (to src/)."""
    package = list(relative.with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names = [f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}") else base for alias in node.names]
            found += [(node.lineno, name) for name in names if name.startswith("mpistack")]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("mpistack")]
    return found


def violations(relative: Path, source: str) -> list[str]:
    own = stage_of(".".join(relative.with_suffix("").parts))
    found = []
    for line, module in imports_of(relative, source):
        other = stage_of(module)
        if other in FOUNDATION or other == own:
            continue
        if own in FOUNDATION or STAGES.index(other) > STAGES.index(own):
            found.append(f"{relative}:{line}: the {own} stage imports {module}, a later stage ({other})")
    return found


def modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if path.relative_to(PACKAGE).parts[0] != "data")


def test_every_package_is_a_known_stage():
    packages = {path.relative_to(PACKAGE).parts[0].removesuffix(".py") for path in modules()}
    assert packages <= FOUNDATION | set(STAGES), packages - FOUNDATION - set(STAGES)


@pytest.mark.parametrize("path", modules(), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_imports_only_earlier_stages(path):
    assert violations(path.relative_to(PACKAGE.parent), path.read_text()) == []


@pytest.mark.parametrize("source", ["from ..campaign import stages\n", "import mpistack.store.writer\n",
                                    "def later():\n    from ..cli import app\n"])
def test_a_backward_import_is_reported(source):
    assert violations(Path("mpistack/parsers/model.py"), source)


def test_earlier_and_foundation_imports_pass():
    assert violations(Path("mpistack/parsers/model.py"),
                      "from ..spec.status import RunStatus\nfrom .. import __version__\nfrom ..registry import FORMATS\n") == []
