"""A real source build: MPICH 4.0.2 ch4:ofi compiled in podman from Debian's orig tarball (the `debian` source
mirror, checked against the sha256 of its .dsc) against Debian's libfabric-dev, then 2 ranks of mpistack-bench
latency with validation inside the image, with the image's own launcher.

The build is the lean one of tests/images/stacks/test-mpich-ofi-lean.toml: the catalogue stack source-mpich-ofi's
base, build-tool and libfabric layers (shared, built once), and an MPICH without yaksa (the dataloop datatype
engine), ROMIO, static libraries or optimisation beyond -O1, so that it builds in minutes on two cores; the
full build is the catalogue's. A second build of the same stack takes every layer from the cache.

Marked `podman`: it runs in `make test` wherever podman can build, and is skipped with the reason elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mpistack import runtime
from mpistack.engines import ContainerRun
from mpistack.parsers.bench_json import parse_bench_json
from mpistack.spec.stack import load_stack

pytestmark = pytest.mark.podman

LEAN_STACK = Path(__file__).parent / "stacks" / "test-mpich-ofi-lean.toml"


@pytest.fixture(scope="module")
def lean_build(podman, base_image, tmp_path_factory):
    """The lean MPICH image, built once for the module (from the cache when it was built before)."""
    from mpistack.images.build import build_stack

    logs = tmp_path_factory.mktemp("source-build")
    stack = load_stack(LEAN_STACK)
    result = build_stack(stack, "podman", log=logs / "first.log", quiet=True)
    assert result.ok, f"source build of {stack.name} failed; log {result.log_path}:\n" + "\n".join(result.tail)
    print(f"{stack.name}: built in {result.seconds:.0f} s")
    return stack, result, logs


def test_source_build_verifies_the_debian_tarball_and_links_debian_libfabric(podman, lean_build):
    stack, result, _ = lean_build
    labels = podman.labels(stack.image_ref())
    assert labels["org.mpistack.mpi"] == "mpich-4.0.2"
    assert labels["org.mpistack.tag"] == "mpich4.0.2-ofi1.17"
    # the library the image runs is the one configured here: ch4:ofi against /usr's libfabric
    argv = ["bash", "-c", "mpichversion && ldd /usr/lib/libmpi.so.12"]
    probe = podman.run(ContainerRun(stack.image_ref(), argv), timeout=120)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert re.search(r"^MPICH Version:\s+4\.0\.2$", probe.stdout, re.M), probe.stdout
    assert re.search(r"^MPICH Device:\s+ch4:ofi$", probe.stdout, re.M), probe.stdout
    assert "--with-libfabric=/usr" in probe.stdout and "--with-datatype-engine=dataloop" in probe.stdout
    # Debian's libfabric, with the libraries it links to (their -dev packages made the link possible)
    for library in ("libfabric.so.1", "libpsm2.so.2", "librdmacm.so.1"):
        assert re.search(rf"{re.escape(library)} => (/usr)?/lib/", probe.stdout), probe.stdout


def test_second_build_is_a_cache_hit(lean_build, tmp_path):
    from mpistack.images.build import build_stack

    stack, first, _ = lean_build
    second = build_stack(stack, "podman", log=tmp_path / "second.log", quiet=True)
    assert second.ok, "\n".join(second.tail)
    log = (tmp_path / "second.log").read_text()
    assert "checking for gcc" not in log  # MPICH's configure did not run again
    assert log.count("Using cache") >= 4  # build tools, libfabric, MPI build packages, MPICH at least
    assert second.digest == first.digest or second.seconds < 120
    print(f"{stack.name}: second build {second.seconds:.1f} s")


def test_two_rank_latency_passes_validation(podman, lean_build):
    stack, _, _ = lean_build
    argv = runtime.launch_command(stack, 2, ["mpistack-bench", "latency", "-c", "-m", "1:65536", "-i", "200",
                                             "-x", "20", "--format", "json"])
    env = runtime.presets(stack, local_root=True).env
    result = podman.run(ContainerRun(stack.image_ref(), argv, env=env), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    runs = parse_bench_json(result.stdout, f"{stack.name}:latency")
    assert [run.benchmark for run in runs] == ["latency"]
    run = runs[0]
    assert not run.validation_failed and not run.incomplete
    rows = list(run.rows)
    assert [row.size for row in rows] == [2 ** k for k in range(17)]
    assert all(row.validation == "pass" for row in rows), [row.validation for row in rows]
    assert all(row.values["latency"] > 0 for row in rows)
    assert "4.0.2" in (run.provenance.mpi_library_version or "")
    assert (run.provenance.libfabric_version or "").startswith("1.17")
    print(f"{stack.name}: 1 B latency {rows[0].values['latency']} us, 64 KiB {rows[-1].values['latency']} us")
