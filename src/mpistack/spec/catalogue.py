"""Named stacks (one TOML file each) covering the public guides plus stacks that build on this host."""

from __future__ import annotations

from pathlib import Path

from ..data import data_path
from .stack import Stack, StackError, load_stack

CATALOGUE = data_path("catalogue")


def stack_files() -> list[Path]:
    return sorted(CATALOGUE.glob("*.toml"))


def names() -> list[str]:
    return [p.stem for p in stack_files()]


def load(name_or_path: str) -> Stack:
    """A catalogue stack by name, or a stack file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        return load_stack(path)
    candidate = CATALOGUE / f"{name_or_path}.toml"
    if candidate.is_file():
        return load_stack(candidate)
    raise StackError(f"stack {name_or_path!r}: not a file and not in the catalogue (known: {', '.join(names())})")


def all_stacks() -> list[Stack]:
    return [load_stack(p) for p in stack_files()]
