"""How `mpistack doctor` names the runs a cause was found in, when one line stands for several launches."""

from mpistack.cli.doctor import _runs


def test_runs_of_one_configuration_and_benchmark_share_their_description():
    assert _runs(["run 1 (debian-mpich container, latency)", "run 3 (debian-mpich container, latency)"]) == \
        "runs 1, 3 (debian-mpich container, latency)"


def test_runs_of_different_benchmarks_are_named_by_number_alone():
    # (the description of the first run would call run 3 a latency run)
    assert _runs(["run 1 (debian-mpich container, latency)", "run 3 (debian-mpich container, bw)"]) == "runs 1, 3"


def test_other_subjects_are_listed_once_each():
    assert _runs(["host", "host", "image x"]) == "host; image x"
