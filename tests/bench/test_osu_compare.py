"""bench/osu_compare.py (OSU 7.4 beside mpistack-bench fixed and adaptive at 1 and 2 MiB): the OSU pin read from
the project's pinned versions, a missing or altered tarball refused naming the pin and its source, OSU's text
read, agreement judged against the launches' spread, and the mpistack-bench arms measured under Debian's MPICH
when OSU cannot be built."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib

import pytest

from conftest import load_benchlib  # noqa: E402  (tests/bench/conftest.py)

lib = load_benchlib()
SCRIPT = lib.BENCH / "osu_compare.py"


@pytest.fixture(scope="module")
def compare():
    spec = importlib.util.spec_from_file_location("mpistack_osu_compare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pin_is_the_projects_with_its_source(compare):
    table = tomllib.loads(compare.VERSIONS.read_text())["osu"]
    sha, url, source = compare.pin()
    assert sha == table["versions"]["7.4"] and len(sha) == 64
    assert url.endswith("osu-micro-benchmarks-7.4.tar.gz") and "package.py" in source


def test_a_missing_or_altered_tarball_is_not_built_and_says_what_to_do(compare, tmp_path):
    binaries, why = compare.build_osu(tmp_path / "osu.tar.gz", tmp_path / "build", "mpicc.mpich")
    assert binaries == {} and "no such file" in why and compare.pin()[0] in why and "--tarball" in why
    altered = tmp_path / "osu-micro-benchmarks-7.4.tar.gz"
    altered.write_bytes(b"not the release")
    binaries, why = compare.build_osu(altered, tmp_path / "build", "mpicc.mpich")
    assert binaries == {} and f"is not the pinned {compare.pin()[0]}" in why and "not built" in why
    assert not (tmp_path / "build").exists()


def test_osu_text_is_read_by_size(compare):
    text = ("# OSU MPI Bandwidth Test v7.4\n# Size      Bandwidth (MB/s)\n# Datatype: MPI_CHAR.\n"
            "1048576              9123.45\n2097152             10011.20\n")
    assert compare.osu_figures(text) == {1 << 20: 9123.45, 2 << 20: 10011.2}


def test_two_arms_agree_when_their_medians_lie_within_the_wider_spread(compare):
    steady, shifted = [100.0, 101.0, 99.0], [110.0, 111.0, 109.0]
    assert compare.spread(steady) == pytest.approx(2.0)
    diff, ok = compare.agree(steady, shifted, 0.02)
    assert diff == pytest.approx(10.0) and not ok  # 10 % apart, the spreads 2 %: apart
    diff, ok = compare.agree(steady, [95.0, 103.0, 120.0], 0.02)
    assert ok  # 3 % apart within a 26 % spread


def test_without_osu_the_mpistack_bench_arms_run_and_the_status_says_osu_is_missing(builds, tmp_path):
    binary = builds("mpich")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--bin", str(binary), "--launch", "mpiexec.mpich -n 2",
                           "--tarball", str(tmp_path / "none.tar.gz"), "--build", str(tmp_path / "b"),
                           "--rounds", "2"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("# OSU 7.4 not run: ") and "no such file" in lines[0]
    rows = [line.split() for line in lines if line.startswith(("bw ", "bibw "))]
    assert [(row[0], row[1]) for row in rows] == [("bw", "1"), ("bw", "2"), ("bibw", "1"), ("bibw", "2")]
    assert all(float(row[3]) > 0 for row in rows)  # the fixed-count median, MB/s
    assert sum("adaptive vs fixed:" in line for line in lines) == 4
