"""Pure pieces of the runner's messages: why a case failed, what changed in a campaign file, durations."""

import pytest

from mpistack.campaign.estimate import duration
from mpistack.campaign.reasons import first_reason
from mpistack.campaign.resume import spec_changes

HYDRA = ("[proxy:0:0@vm] HYDU_create_process (utils/launch/launch.c:73): [proxy:0:0@vm] execvp error on file ./nope "
         "(No such file or directory)\n")
MPICH_BANNER = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 4242 RUNNING AT vm
=   EXIT CODE: 9
===================================================================================
"""
OPEN_MPI = """--------------------------------------------------------------------------
mpirun.openmpi was unable to launch the specified application as it could not access
or execute an executable:
"""


@pytest.mark.parametrize("stderr, reason", [
    (HYDRA, "execvp error on file ./nope (No such file or directory)"),  # two proxies' writes interleaved
    ("\n\n" + MPICH_BANNER + "Abort(1) on node 0: Fatal error in MPI_Init\n", "Abort(1) on node 0: Fatal error in MPI_Init"),
    (OPEN_MPI, "mpirun.openmpi was unable to launch the specified application as it could not access"),
    (MPICH_BANNER, None),
    ("", None),
])
def test_the_first_meaningful_line_of_stderr_is_the_reason(stderr, reason):
    assert first_reason(stderr) == reason


def test_a_long_reason_is_cut():
    assert len(first_reason("x" * 5000)) == 300


def test_spec_changes_name_each_field_by_its_path():
    old = {"timeout": 60.0, "description": "a", "benchmarks": [{"name": "latency"}, {"name": "bw"}],
           "tags": {"system": "a"}, "placement": [{"ranks": 2}]}
    new = {"timeout": 30.0, "description": "b", "benchmarks": [{"name": "latency"}, {"name": "bibw"}],
           "tags": {"system": "a", "owner": "me"}, "placement": [{"ranks": 2}, {"ranks": 4}]}
    assert spec_changes(old, new) == [
        'benchmarks[1].name: "bw" -> "bibw"',
        'placement: 1 -> 2 entries ([{"ranks": 2}] -> [{"ranks": 2}, {"ranks": 4}])',
        'tags.owner: added "me"',
        "timeout: 60.0 -> 30.0",
    ]  # the description says nothing of what is measured
    assert spec_changes(old, old) == []


@pytest.mark.parametrize("seconds, text", [(42, "42 s"), (600, "10 min"), (7260, "2 h 1 min"), (86400, "24 h"),
                                           (240000, "2 d 18 h"), (172800, "2 d")])
def test_durations_read_as_a_person_says_them(seconds, text):
    assert duration(seconds) == text
