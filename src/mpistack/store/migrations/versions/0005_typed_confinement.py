"""Confinement as a typed record: runs recorded a container's podman flags (`container_flags`), which the
doctor parsed back; now each run records `confinement_record` (engines.Confinement as JSON). The flags of runs
stored before are read here, once, into the record: the last place podman's flags are parsed.

Revision ID: 0005
Revises: 0004
"""

import json
import shlex

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
_PER_RANK = ("hybrid", "bind", "fabric-swap")  # approaches that started a container per rank


def record_of(flags: str, per_rank: bool, rootless: bool = False) -> str:
    """The Confinement record of a podman run with these flags (engines/base.py Engine.confinement)."""
    words = [part for flag in shlex.split(flags) for part in flag.split("=", 1)]
    value = {name: words[index + 1] for index, name in enumerate(words[:-1]) if name.startswith("--")}
    host = {"net"} | (set() if rootless else {"user"})
    if value.get("--ipc") == "host":
        host.add("ipc")
    if value.get("--pid") == "host":
        host.add("pid")
    shared = host | {"user"} | (set() if per_rank else {"ipc", "pid", "mnt"})
    single = value.get("--cap-add") == "SYS_PTRACE"
    size = value.get("--shm-size", "").lower()
    number = size.rstrip("bkmg")
    shm = int(number) * _UNITS[size[len(number):]] if number.isdigit() and len(size) - len(number) <= 1 else None
    return json.dumps({"runtime": "podman", "shared": sorted(shared), "host": sorted(host),
                       "capabilities": ["SYS_PTRACE"] if single else [], "seccomp": not single,
                       "shm_bytes": None if "ipc" in host else shm, "one_container": not per_rank}, sort_keys=True)


def upgrade() -> None:
    connection = op.get_bind()
    tags = sa.table("run_tags", sa.column("run_id", sa.Integer), sa.column("key", sa.String),
                    sa.column("value", sa.Text))
    runs = sa.table("runs", sa.column("id", sa.Integer), sa.column("approach", sa.String))
    found = connection.execute(sa.select(tags.c.run_id, tags.c.value, runs.c.approach)
                               .join(runs, runs.c.id == tags.c.run_id)
                               .where(tags.c.key == "container_flags")).all()
    for run_id, flags, approach in found:
        connection.execute(tags.insert().values(run_id=run_id, key="confinement_record",
                                                value=record_of(flags or "", approach in _PER_RANK)))
    connection.execute(tags.delete().where(tags.c.key == "container_flags"))


def downgrade() -> None:
    # the flags are not written back: a record says more than podman's flags can (another runtime's ranks)
    op.execute("DELETE FROM run_tags WHERE key = 'confinement_record'")
