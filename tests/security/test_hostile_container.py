"""A hostile benchmark in a `container` case, with real podman, a real campaign and the real command line.
The case runs as root in its container; it used to get the campaign's whole work directory, and the runner
trusted what it found there: a forged "running case" marker made the next `--resume` end a host cgroup's
processes, a link at a case's output made the runner write or read a host file. Now the container gets its
own case directory alone, and the runner reads nothing through a link."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess

import pytest

from mpistack.engines.containment import cgroup_parent
from tests.helpers import campaign_file, mpistack

pytestmark = [pytest.mark.podman,
              pytest.mark.skipif(shutil.which("podman") is None or os.geteuid() != 0,
                                 reason="the podman tests run as root")]

# Inside the container: find the case's directory among the mounts, then go for the runner's files.
HOSTILE = r"""
case=$(awk '$2 ~ /\/cases\/mpistack-/ {print $2}' /proc/self/mounts | head -n1)
work=${case%/cases/*}
echo "case=$case work=$work"
mkdir -p "$work/running" && echo 'FORGED' > "$work/running/running-1.json" || true
ls "$work/journal" >/dev/null 2>&1 && echo SAW-JOURNAL
rm -f "$case/stderr"; ln -s "SECRET" "$case/stderr"; ln -s "PRECIOUS" "$case/stdout.next"
exit 1
"""


@pytest.fixture
def victim():
    """A host process in a cgroup of its own, which a forged marker names."""
    parent = cgroup_parent()[0]
    if parent is None:
        pytest.skip(cgroup_parent()[1])
    cgroup = parent / f"victim-{os.getpid()}"
    cgroup.mkdir()
    process = subprocess.Popen(["sleep", "1000"])
    (cgroup / "cgroup.procs").write_text(str(process.pid))
    yield process, cgroup
    process.kill()
    process.wait()
    cgroup.rmdir()


def test_a_hostile_container_case_reaches_no_runner_file_and_no_host_file(tmp_path, victim):
    process, cgroup = victim
    secret, precious = tmp_path / "secret", tmp_path / "precious"
    secret.write_text("root-only content\n")
    secret.chmod(0o600)
    precious.write_text("keep me\n")
    marker = {"label": None, "command": "forged", "job": "case-1-0-abcdef", "cgroup": str(cgroup),
              "host": socket.gethostname(), "pid": 2**22 + 1, "pid_started": 1}
    script = HOSTILE.replace("FORGED", json.dumps(marker)).replace("SECRET", str(secret)) \
                    .replace("PRECIOUS", str(precious))
    path = campaign_file(tmp_path, f"""
timeout = 120
approaches = ["container"]
[[stack]]
name = "pip-mpich"
[[placement]]
ranks = 1
[[benchmark]]
name = "hostile"
program = "sh"
options = {json.dumps(["-c", script])}
""", name="hostile")
    db = tmp_path / "r.db"
    first = mpistack("run", path, "--db", db, home=tmp_path, check=None, timeout=1800)
    (run,) = _runs(db)
    assert run["status"] == "failed", first.stdout + first.stderr
    assert "root-only" not in (run["message"] or "") and "root-only" not in first.stdout + first.stderr
    assert "removed unread" in run["message"]
    work = next((tmp_path / "cache" / "mpistack" / "work").iterdir())
    case = next(path for path in (work / "cases").iterdir() if not path.name.startswith("mpistack-probe-"))
    assert f"case={case}" in (case / "stdout").read_text()  # it ran, and saw its own directory only
    assert "SAW-JOURNAL" not in (case / "stdout").read_text()
    assert not (work / "running" / "running-1.json").exists()  # its forged marker stayed in the container
    assert sorted(entry.name for entry in case.iterdir()) == ["stdout"]  # its links (stderr too) are gone
    # the next start reads the work directory again, and ends nothing of the host
    again = mpistack("run", path, "--db", db, "--resume", "--force", home=tmp_path, check=None, timeout=1800)
    assert "ended what an earlier run left" not in again.stdout, again.stdout
    assert process.poll() is None and cgroup.is_dir()
    assert precious.read_text() == "keep me\n" and secret.read_text() == "root-only content\n"


def _runs(db):
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        return [dict(row) for row in connection.execute("SELECT * FROM runs ORDER BY id")]
