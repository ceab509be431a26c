"""A failure whose own words do not say its likely cause gets the cause in its reason."""

from __future__ import annotations

from mpistack.campaign.stages import Parsed, classify
from tests.helpers import execution

# what rootless podman 4.3 says of `run --ipc host` on a host without /dev/mqueue (Debian 12, by hand)
MQUEUE = "Error: statfs /dev/mqueue: no such file or directory\n"


def test_a_rootless_hybrid_without_dev_mqueue_says_what_the_administrator_mounts():
    outcome = classify(execution(exit_code=126, stderr=MQUEUE), Parsed(runs=[]), 60)
    assert "the host has no /dev/mqueue for a container sharing its IPC namespace" in outcome.message
    assert "mount -t mqueue mqueue /dev/mqueue" in outcome.message.splitlines()[0]


def test_a_plain_failure_gets_no_hint():
    outcome = classify(execution(exit_code=1, stderr="Abort(1) on node 0\n"), Parsed(runs=[]), 60)
    assert outcome.message.splitlines()[0] == "exit status 1: Abort(1) on node 0"


# what rootless podman 4.3 printed when its OCI runtime failed (Debian 12, `podman --runtime /usr/bin/false run`)
ENGINE_FAILED = ('time="2026-11-29T02:07:24Z" level=error msg="Removing container 32824c35a3fa from runtime after '
                 'creation failed"\nError: container create failed (no logs from conmon): conmon bytes "": '
                 'readObjectStart: expect { or n\n')


def test_a_container_engines_log_line_gives_way_to_its_error():
    outcome = classify(execution(exit_code=126, stderr=ENGINE_FAILED), Parsed(runs=[]), 60)
    assert outcome.message.splitlines()[0].startswith("exit status 126: Error: container create failed")


# what srun 22.05 printed on the demo cluster for two Charliecloud ranks in separate user namespaces, one of which
# aborted in MPI_Init (the step ended 137 after 0.2 s)
SRUN_ABORTED = ("srun: cluster configuration lacks support for cpu binding\n"
                "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
                "Abort(876203535) on node 0 (rank 0 in comm 0): Fatal error in internal_Init: Other MPI error, "
                "error stack:\n"
                "srun: error: node1: task 0: Killed\n")


def test_srun_notes_on_the_step_give_way_to_the_ranks_complaint():
    outcome = classify(execution(exit_code=137, stderr=SRUN_ABORTED), Parsed(runs=[]), 60)
    assert outcome.message.splitlines()[0].startswith("exit status 137: Abort(876203535) on node 0")


def test_srun_notes_alone_are_still_the_reason():
    only = "srun: error: node1: task 0: Killed\n"
    outcome = classify(execution(exit_code=137, stderr=only), Parsed(runs=[]), 60)
    assert outcome.message.splitlines()[0] == "exit status 137: srun: error: node1: task 0: Killed"


def test_srun_notes_give_way_to_the_error_ucx_wrote_to_standard_output():
    """Two Charliecloud ranks on the demo cluster's two nodes: srun's notes on stderr, UCX's refusal on stdout
    (what srun 22.05 and UCX 1.13 printed); the reason is UCX's."""
    stderr = ("srun: cluster configuration lacks support for cpu binding\n"
              "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
              "srun: error: node2: task 1: Killed\n")
    stdout = ("[1795928304.785202] [node1:14819:0]        mm_posix.c:219  UCX  ERROR   open(file_name=/proc/14821/fd/14 "
              "flags=0x0) failed: Permission denied\n")
    outcome = classify(execution(exit_code=137, stderr=stderr, stdout=stdout), Parsed(runs=[]), 60)
    assert outcome.message.splitlines()[0] == ("exit status 137: mm_posix.c:219  UCX  ERROR   open(file_name=/proc/"
                                               "14821/fd/14 flags=0x0) failed: Permission denied")
