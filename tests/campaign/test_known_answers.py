"""Known answers on this machine, measured for real: MPICH forced through TCP is a loss at small messages that the
answer must find in every run, and a container running the very build the host runs is never called slower.

The TCP variant runs the PyPI MPICH (ch4:ofi, libfabric's tcp provider): Debian's MPICH 4.0.2 over UCX's tcp
transport hangs in about one launch of three here, which a campaign records as timeouts."""

import shutil

import pytest

from mpistack.analysis.answers import SYSTEM, answer
from mpistack.analysis.evidence import load_rows
from mpistack.store import open_database
from mpistack.store.query import Where
from tests.helpers import mpistack

pytestmark = [
    pytest.mark.podman,
    pytest.mark.skipif(shutil.which("podman") is None or shutil.which("mpiexec.mpich") is None,
                       reason="needs podman and Debian's mpich"),
]

CAMPAIGN = """name = "tcp-known"
repeats = 6
timeout = 60
approaches = ["native", "container"]
benchmark_options = ["-m", "1:4096", "--stop", "ci:0.05", "--stop-min", "50"]
benchmarks = ["latency"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "debian-mpich"
[[stack]]
name = "pip-mpich"
[[variant]]
name = "tcp"
env = { FI_PROVIDER = "tcp", MPIR_CVAR_NOLOCAL = "1" }
stacks = ["pip-mpich"]
"""


def test_mpich_through_tcp_is_slower_at_small_messages_and_the_plain_container_is_not(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN)
    db = tmp_path / "r.db"
    result = mpistack("--db", db, "run", path, timeout=1200)
    answers = {(a.key.stack, a.key.approach, a.key.variant): a
               for a in answer(load_rows(open_database(str(db)), [Where("campaign", "=", 1)]))
               if a.baseline == SYSTEM}
    tcp = answers[("pip-mpich", "container", "tcp")]
    assert tcp.label == "(Y)", tcp.row_class.reason
    assert tcp.row_class.slow[0].regime == "small" and tcp.row_class.slow[0].sizes[0] == 1
    assert tcp.row_class.slow[0].worst_ratio < 0.5  # several microseconds against a fraction of one natively
    plain = answers[("debian-mpich", "container", "default")]
    assert plain.label != "(Y)", plain.row_class.reason
    assert plain.same_build_as_system  # Debian's MPICH in a Debian image: the host's very build
    assert "(Y)" in result.stdout and "tcp" in result.stdout  # the run ends with the answer
