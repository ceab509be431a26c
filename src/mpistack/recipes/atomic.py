"""A directory written all at once: the files go into a temporary sibling, which is renamed into place only
when everything is written, so a failure leaves nothing half-written behind (and an earlier directory as it
was)."""

from __future__ import annotations

import os
import secrets
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class DirectoryInUse(ValueError):
    """The target exists and is not something this write may replace."""


def is_build_context(path: Path) -> bool:
    """A directory that `mpistack stack render --out` wrote before (and may therefore replace)."""
    return (path / "Containerfile").is_file() and (path / "mpistack.def").is_file()


@contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield an empty temporary directory beside ``target``; when the block ends without an error, it becomes
    ``target``. An existing ``target`` is replaced when it is empty or a build context, refused otherwise
    (DirectoryInUse). On an error the temporary directory, and any parent directory made for it, is removed."""
    target = Path(os.path.abspath(target))
    if target.exists() and not _may_replace(target):
        raise DirectoryInUse(f"{target}: exists and is not a build context written by mpistack "
                             "(no Containerfile and mpistack.def): choose a new directory or remove it")
    made = _make_parents(target.parent)
    staging = None
    try:
        staging = _sibling(target, "tmp")
        yield staging
        _swap(staging, target)
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for directory in reversed(made):  # deepest first; only those still empty
            try:
                directory.rmdir()
            except OSError:
                break
        raise


def _sibling(target: Path, kind: str) -> Path:
    """A new empty directory beside ``target`` (made with the usual umask, unlike tempfile.mkdtemp's 0700)."""
    for _ in range(100):
        candidate = target.parent / f".{target.name[:100]}.{secrets.token_hex(4)}.{kind}"
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(f"{target.parent}: no free name for a temporary directory")


def _may_replace(target: Path) -> bool:
    if not target.is_dir() or target.is_symlink():
        return False
    return not any(target.iterdir()) or is_build_context(target)


def _make_parents(parent: Path) -> list[Path]:
    missing = []
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    made = []
    for directory in reversed(missing):
        directory.mkdir()
        made.append(directory)
    return made


def _swap(staging: Path, target: Path) -> None:
    """rename(2) replaces a missing or empty directory at once; a full one is first moved aside."""
    if not target.exists() or not any(target.iterdir()):
        os.replace(staging, target)
        return
    old = _sibling(target, "old")
    os.replace(target, old / "previous")
    try:
        os.replace(staging, target)
    except BaseException:
        os.replace(old / "previous", target)
        shutil.rmtree(old, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
