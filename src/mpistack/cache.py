"""Where mpistack keeps files between runs (build contexts, build logs, podman's configuration), and how it
writes them."""

from __future__ import annotations

import os
from pathlib import Path


def write_file_atomically(path: Path, text: str, *, durable: bool = False) -> Path:
    """Write ``text`` to ``path`` whole: a temporary file beside it (named after this process, so that two
    writers never share one), renamed into place, so that a reader never sees half a file. ``durable`` syncs it
    to disk first, for records that must outlive a crash of the machine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.part")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    temporary.replace(path)
    return path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mpistack"
