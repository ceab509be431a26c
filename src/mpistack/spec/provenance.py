"""What is known about a run besides its figures: what ran, where, with which libraries.

Parsers fill it from the output (an srun prompt line, mpistack-bench's JSON), the campaign from what it
launched, and `ingest --tag` from the user. The store maps it to columns; nobody else knows the columns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime

#: fields a user may set with `ingest --tag` (the context the output does not say); the rest are recorded
#: by mpistack itself and cannot be overwritten by a tag
CONTEXT_FIELDS = ("stack", "approach", "launcher", "ranks", "nodes", "buffers", "device")
_INTEGER_FIELDS = {"ranks", "nodes"}


@dataclass
class Provenance:
    # what ran
    stack: str | None = None
    approach: str | None = None
    launcher: str | None = None
    ranks: int | None = None
    nodes: int | None = None
    buffers: str | None = None  # H-H, D-D, ...
    device: str | None = None  # cuda, rocm; None for host memory
    command: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    # recorded facts
    mpi_library_version: str | None = None
    libfabric_version: str | None = None
    libfabric_provider: str | None = None
    image_digest: str | None = None
    hosts: list[str] = field(default_factory=list)
    transport: dict[str, str] = field(default_factory=dict)  # what the MPI library said it used
    tool_version: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    def update(self, other: "Provenance") -> "Provenance":
        """Fill in every field `other` knows (its values win); returns self."""
        for item in dataclasses.fields(self):
            value = getattr(other, item.name)
            if value not in (None, [], {}):
                setattr(self, item.name, value)
        return self

    def split_tags(self, tags: dict[str, str]) -> dict[str, str]:
        """Take the context fields out of user tags (typed and checked); return the plain tags.

        A tag that names a recorded field is refused: the record says what really ran."""
        plain = {}
        recorded = {item.name for item in dataclasses.fields(self)} - set(CONTEXT_FIELDS)
        for key, value in tags.items():
            if key in recorded:
                raise ValueError(f"tag {key}={value!r}: {key} is recorded by mpistack from the run itself, "
                                 "not set by a tag")
            if key not in CONTEXT_FIELDS:
                plain[key] = value
            elif key in _INTEGER_FIELDS:
                setattr(self, key, parse_count(f"tag {key}", value))
            else:
                setattr(self, key, str(value))
        return plain


def parse_count(key: str, value: object) -> int:
    """A rank or node count from text: a whole number of at least 1."""
    if isinstance(value, bool):
        raise ValueError(f"{key}={value!r}: expected a whole number")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{key}={value!r}: expected a whole number") from None
    if number < 1:
        raise ValueError(f"{key}={value!r}: expected at least 1")
    return number


def parse_time(value: str | datetime | None) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
