"""What a probe's ending makes of its output (pure: a recorded Execution in, a transport record out)."""

from pathlib import Path

from mpistack.campaign.probe import evidence
from mpistack.launchers import LaunchPlan
from tests.helpers import execution

TCP_OUTPUT = (Path(__file__).resolve().parents[1] / "parsers" / "data" / "transport"
              / "mpich402-ucx-tls-tcp.txt").read_text()


def _plan() -> LaunchPlan:
    return LaunchPlan(argv=["mpiexec.mpich", "-n", "2", "mpistack-bench", "latency"], env={}, output=None)


def test_a_probe_that_ends_records_its_transport():
    found = evidence("mpich", _plan(), execution(stdout=TCP_OUTPUT))
    assert found["layer"] == "ucx" and "tcp" in found["transports"] and "note" not in found


def test_a_probe_that_hangs_after_printing_keeps_what_the_library_said_and_says_it_hung():
    # Debian's MPICH 4.0.2 with UCX_TLS=tcp can hang in MPI_Finalize after the transports were printed
    found = evidence("mpich", _plan(), execution(exit_code=None, timed_out=True, stdout=TCP_OUTPUT))
    assert "tcp" in found["transports"] and "no answer within" in found["note"]


def test_a_probe_that_hangs_silently_is_a_note_only():
    found = evidence("mpich", _plan(), execution(exit_code=None, timed_out=True))
    assert set(found) == {"probe", "mpi", "note"} and found["note"].startswith("probe failed")
