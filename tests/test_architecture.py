"""The house rules of the package layout (docs/architecture.md): every package is a stage, and a stage
imports only earlier stages, so no package imports a later one and no two packages import each other.
Imports inside functions count too, and so does a registry lookup: a registry (registry.py) imports the
package of its plug-ins on first use, so `APPROACHES.get(...)` in a module is an import of
mpistack.approaches; only registering into one (`@APPROACHES.register(...)`) is not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mpistack"
FOUNDATION = {"__init__", "registry", "cache", "data", "system_tools"}  # used by every stage
STAGES = ["spec", "compat", "recipes", "engines", "images", "runtime", "launchers", "approaches", "parsers",
          "store", "campaign", "ingest", "analysis", "report", "doctor", "cli", "__main__"]


def stage_of(module: str) -> str:
    """mpistack.campaign.stages -> campaign"""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def registry_packages() -> dict[str, str]:
    """Registry name -> the package it imports on first use, read off registry.py
    (`APPROACHES: Registry = Registry("approach", "mpistack.approaches")`)."""
    found = {}
    for node in ast.walk(ast.parse((PACKAGE / "registry.py").read_text())):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call) \
                and getattr(node.value.func, "id", None) == "Registry":
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            found[target.id] = node.value.args[1].value
    return found


def registry_lookups(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, package) of every use of a registry imported from mpistack.registry, registering excepted."""
    packages = registry_packages()
    imported = {alias.asname or alias.name: packages[alias.name] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "registry"
                for alias in node.names if alias.name in packages}
    registering = {id(node.value) for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and node.attr == "register"}
    return [(node.lineno, imported[node.id]) for node in ast.walk(tree)
            if isinstance(node, ast.Name) and node.id in imported and isinstance(node.ctx, ast.Load)
            and id(node) not in registering]


def imports_of(relative: Path, source: str) -> list[tuple[int, str]]:
    """(line, absolute module) of every mpistack import in `source`, the file at `relative` (to src/), and of
    every registry lookup (the package it loads)."""
    package = list(relative.with_suffix("").parts[:-1])
    tree = ast.parse(source)
    found = registry_lookups(tree)
    for node in ast.walk(tree):
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


@pytest.mark.parametrize("source", ["from ..registry import APPROACHES\nAPPROACHES.check('bind')\n",
                                    "from ..registry import LAUNCHERS\ndef later(name):\n    return name in LAUNCHERS\n",
                                    "from ..registry import ENGINES as E\nfor entry in E:\n    pass\n"])
def test_a_registry_lookup_is_an_import_of_its_plugins_package(source):
    assert violations(Path("mpistack/spec/campaign.py"), source)


def test_registering_into_a_registry_is_not_a_lookup():
    assert violations(Path("mpistack/approaches/bind.py"),
                      "from ..registry import APPROACHES\n@APPROACHES.register('bind', image=True)\nclass Bind:\n"
                      "    pass\n") == []
