"""How long each image took to build the last time a campaign built it, so that a dry run can say what the
images a campaign still lacks will cost (a stack's image takes seconds from a local base, an hour from
source)."""

from __future__ import annotations

import json
from pathlib import Path

from ..cache import cache_dir, write_file_atomically


def _path() -> Path:
    return cache_dir() / "build-times.json"


def recorded_build_times() -> dict[str, float]:
    """Image reference -> seconds of its last successful build; empty when none was recorded (or the record
    is unreadable: it only informs an estimate)."""
    try:
        data = json.loads(_path().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(key): float(value) for key, value in data.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0}


def record_build_time(reference: str, seconds: float) -> None:
    """Remember the build time of an image (written whole, then renamed: a reader never sees half a file)."""
    times = recorded_build_times()
    times[reference] = round(seconds, 1)
    write_file_atomically(_path(), json.dumps(times, indent=1, sort_keys=True))
