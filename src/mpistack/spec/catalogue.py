"""Named stacks (one TOML file each) covering the public guides plus stacks that build on this host, and the
user's own stack files beside them: the directory given with `mpistack stack --stacks DIR`, else
$MPISTACK_STACKS, else the `stacks_dir` key of ~/.config/mpistack/config.toml."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from ..data import data_path
from .stack import Stack, StackError, load_stack
from .toml_files import user_config_file

CATALOGUE = data_path("catalogue")
_stacks_dir: Path | None = None  # set by `mpistack stack --stacks DIR`


def use_stacks_dir(directory: Path | None) -> None:
    """Take the user's stacks from ``directory`` (over $MPISTACK_STACKS and the configuration file)."""
    global _stacks_dir
    _stacks_dir = directory


def user_stacks_dir() -> tuple[Path, str] | None:
    """The user's stacks directory and where it was named, or None when none is."""
    if _stacks_dir is not None:
        return _stacks_dir, "--stacks"
    if os.environ.get("MPISTACK_STACKS"):
        return Path(os.environ["MPISTACK_STACKS"]).expanduser(), "$MPISTACK_STACKS"
    path = user_config_file("config.toml")
    if not path.is_file():
        return None
    try:
        value = tomllib.loads(path.read_text(encoding="utf-8")).get("stacks_dir")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise StackError(f"{path}: cannot read the configuration: {error}") from None
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise StackError(f"{path}: stacks_dir: expected a directory path as a string (got {value!r})")
    directory = Path(value).expanduser()
    return (directory if directory.is_absolute() else path.parent / directory), f"{path}: stacks_dir"


def stack_files() -> list[Path]:
    """The shipped stack files and the user's, by name; a user file that takes a shipped name is an error."""
    shipped = sorted(CATALOGUE.glob("*.toml"))
    user = user_stacks_dir()
    if user is None:
        return shipped
    directory, named_by = user
    if not directory.is_dir():
        raise StackError(f"{directory} (the user's stacks directory, from {named_by}): not a directory")
    taken = {path.stem: path for path in shipped}
    own = sorted(directory.glob("*.toml"))
    for path in own:
        if path.stem in taken:
            raise StackError(f"{path}: the stack name {path.stem!r} is already the shipped {taken[path.stem]}; "
                             "give the user's stack file another name")
    return sorted([*shipped, *own], key=lambda path: path.stem)


def _catalogue_file(name: str) -> Path | None:
    return next((path for path in stack_files() if path.stem == name), None)


def names() -> list[str]:
    return [p.stem for p in stack_files()]


def load(name_or_path: str) -> Stack:
    """A catalogue stack by name, or a stack file by path."""
    path = Path(name_or_path)
    try:
        is_file = path.suffix == ".toml" or path.exists()
        candidate = None if is_file else _catalogue_file(name_or_path)
        in_catalogue = candidate is not None
    except (OSError, ValueError) as error:  # a name too long for a file name; a NUL byte (ValueError)
        reason = getattr(error, "strerror", None) or str(error)
        raise StackError(f"stack {_shown(name_or_path)!r}: not a usable file name ({reason})") from None
    if is_file:
        return load_stack(path)
    if in_catalogue:
        return load_stack(candidate)
    raise StackError(f"stack {_shown(name_or_path)!r}: not a file and not in the catalogue "
                     f"(known: {', '.join(names())})")


def _shown(name: str) -> str:
    """``name`` as an error message shows it: long ones cut short."""
    return name if len(name) <= 120 else f"{name[:100]}... ({len(name)} characters)"


def shipped(path: Path) -> bool:
    """Whether a catalogue stack file is one mpistack ships (else it is the user's)."""
    return path.parent == CATALOGUE


def all_stacks() -> list[Stack]:
    return [load_stack(p) for p in stack_files()]
