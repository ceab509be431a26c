"""Golden-string tests per building block: the flags each block renders from the spec."""

from __future__ import annotations

import platform
import shlex

import pytest

from mpistack.recipes import blocks as B
from mpistack.recipes import RecipeError, render, tristate

BASE = '''
name = "t"
[base]
image = "docker.io/ubuntu:24.04"
'''


def commands(step) -> str:
    return "\n".join(step.commands)


@pytest.mark.parametrize("value, expected", [
    (True, ["--with-cuda"]),
    ("/usr/local/cuda", ["--with-cuda=/usr/local/cuda"]),
    (False, ["--without-cuda"]),
    (None, []),
])
def test_tristate_with(value, expected):
    assert tristate("cuda", value) == expected


def test_tristate_enable():
    assert tristate("cxi", True, kind="enable") == ["--enable-cxi"]
    assert tristate("cxi", False, kind="enable") == ["--disable-cxi"]
    assert tristate("cxi", "/opt/cxi", kind="enable") == ["--enable-cxi=/opt/cxi"]


def test_fetch_step_verifies_before_unpacking(stack_from):
    s = stack_from(BASE + '[libfabric]\nversion = "1.22.0"\n[mpi]\nimpl = "mpich"\nversion = "4.3.1"\n')
    step = B.LibfabricBlock(s).step()
    lines = step.commands
    download = next(i for i, l in enumerate(lines) if l.startswith("curl "))
    verify = next(i for i, l in enumerate(lines) if "sha256sum -c" in l)
    unpack = next(i for i, l in enumerate(lines) if l.startswith("tar "))
    assert download < verify < unpack
    assert ("485e6cafa66c9e4f6aa688d2c9526e274c47fda3a783cf1dd8f7c69a07e2d5fe  libfabric-1.22.0.tar.bz2"
            in lines[verify])
    assert "https://github.com/ofiwg/libfabric/releases/download/v1.22.0/libfabric-1.22.0.tar.bz2" in lines[download]


def test_libfabric_block_providers_and_gpu(stack_from):
    s = stack_from(BASE + '''
[gpu]
kind = "cuda"
[gdrcopy]
version = "2.5.1"
[libcxi]
version = "12.0.1"
[libfabric]
version = "1.22.0"
providers = ["cxi", "shm"]
disable = ["verbs"]
cuda = true
gdrcopy = true
[mpi]
impl = "mpich"
version = "4.3.1"
''')
    args = B.LibfabricBlock(s).configure_args()
    assert args[0] == "--prefix=/usr"
    assert "--enable-cxi=/usr" in args and "--with-cassini-headers=/usr/include" in args
    assert "--with-cxi-uapi-headers=/usr/include" in args
    assert "--enable-shm" in args and "--disable-verbs" in args
    assert "--with-cuda=/usr/local/cuda" in args and "--with-gdrcopy=/usr" in args


def test_libfabric_rocm_path(stack_from):
    s = stack_from(BASE + '[gpu]\nkind = "rocm"\n[libfabric]\nversion = "1.15.2"\nrocm = "/opt/rocm-6.0.3"\n'
                   '[mpi]\nimpl = "mpich"\nversion = "4.2.3"\n')
    assert "--with-rocr=/opt/rocm-6.0.3" in B.LibfabricBlock(s).configure_args()


def test_ucx_block(stack_from):
    s = stack_from(BASE + '[gpu]\nkind = "cuda"\n[ucx]\nversion = "1.19.0"\ncuda = true\ngdrcopy = false\n'
                   '[mpi]\nimpl = "mpich"\nversion = "4.3.1"\ndevice = "ch4:ucx"\n')
    step = B.UcxBlock(s).step()
    text = commands(step)
    assert "./contrib/configure-release --prefix=/usr --without-go --disable-doxygen-doc --enable-mt " \
           "--with-cuda=/usr/local/cuda --without-gdrcopy" in text
    assert "9af07d55281059542f20c5b411db668643543174e51ac71f53f7ac839164f285  ucx-1.19.0.tar.gz" in text


def test_mpich_block_flags(stack_from):
    s = stack_from(BASE + '[xpmem]\nversion = "2.6.3"\n[libfabric]\nversion = "1.22.0"\n'
                   '[mpi]\nimpl = "mpich"\nversion = "4.3.1"\nfortran = true\ncxx = true\nconfigure = ["--with-pm=hydra"]\n')
    args = B.MpichBlock(s).configure_args()
    assert args == ["--prefix=/usr", "--enable-fast=O3,ndebug", "--enable-fortran", "--enable-cxx",
                    "--with-device=ch4:ofi", "--with-libfabric=/usr", "--with-xpmem=/usr", "--with-pm=hydra"]
    assert "gfortran" in B.MpichBlock(s).step().build_packages


def test_mpich_tristate_overrides(stack_from):
    s = stack_from(BASE + '[libfabric]\nversion = "1.22.0"\n[mpi]\nimpl = "mpich"\nversion = "4.3.1"\n'
                   'libfabric = "/opt/ofi"\nxpmem = false\n')
    args = B.MpichBlock(s).configure_args()
    assert "--with-libfabric=/opt/ofi" in args and "--without-xpmem" in args


def test_openmpi_block(stack_from):
    s = stack_from(BASE + '[libfabric]\nversion = "1.22.0"\n[ucx]\nversion = "1.19.0"\n[pmix]\nversion = "5.0.8"\n'
                   '[mpi]\nimpl = "openmpi"\nversion = "5.0.8"\n')
    args = B.OpenmpiBlock(s).configure_args()
    assert args[:4] == ["--prefix=/usr", "--with-ofi=/usr", "--with-ucx=/usr", "--with-pmix=/usr"]
    assert "--enable-oshmem" in args and "--disable-mpi-fortran" in args
    text = commands(B.OpenmpiBlock(s).step())
    assert "https://download.open-mpi.org/release/open-mpi/v5.0/openmpi-5.0.8.tar.bz2" in text


def test_pmix_block(stack_from):
    s = stack_from(BASE + '[pmix]\nversion = "5.0.8"\n[mpi]\nimpl = "openmpi"\nversion = "5.0.8"\n')
    text = commands(B.PmixBlock(s).step())
    assert "./configure --prefix=/usr --with-libevent=/usr --with-hwloc=/usr --disable-sphinx" in text
    assert "bf5f0a341d0ec7f465627a7570f4dcda3b931bc859256428a35f6c72f13462d0  pmix-5.0.8.tar.bz2" in text


def test_xpmem_block_builds_library_only(stack_from):
    s = stack_from(BASE + '[xpmem]\nversion = "2.6.3"\n[libfabric]\nversion = "1.22.0"\n'
                   '[mpi]\nimpl = "mpich"\nversion = "4.3.1"\n')
    text = commands(B.XpmemBlock(s).step())
    assert "gcc -O2 -fPIC -I../include -shared -Wl,-soname,libxpmem.so.0 -o libxpmem.so.0 libxpmem.c" in text
    assert "install -m 0644 ../include/xpmem.h /usr/include/xpmem.h" in text


def test_gdrcopy_block(stack_from):
    s = stack_from(BASE + '[gpu]\nkind = "cuda"\n[gdrcopy]\nversion = "2.5.1"\n[mpi]\nimpl = "mpich"\nversion = "4.3.1"\n'
                   '[libfabric]\nversion = "1.22.0"\n')
    text = commands(B.GdrcopyBlock(s).step())
    assert "make prefix=/usr CUDA=/usr/local/cuda lib_install" in text


def test_osu_block_cuda(seed_stack):
    s = seed_stack("cscs-osu-mpich-gh200")
    text = commands(B.OsuBlock(s).step())
    assert "--enable-cuda --with-cuda-include=/usr/local/cuda/include --with-cuda-libpath=/usr/local/cuda/lib64" in text
    assert "ldconfig /usr/local/cuda/targets/sbsa-linux/lib/stubs" in text
    assert "CC=/usr/bin/mpicc" in text


def test_bench_block_uses_repository_sources(seed_stack):
    step = B.MpistackBenchBlock(seed_stack("debian-mpich")).step()
    assert step.before == ["COPY bench/ /opt/mpistack/bench-src/"]
    assert step.commands[0].startswith("make -C /opt/mpistack/bench-src MPICC=mpicc.mpich ")
    gpu = B.MpistackBenchBlock(seed_stack("cscs-mpich-gh200")).step()
    assert "CUDA=/usr/local/cuda" in gpu.commands[0]


MPICH_4_3_2_X86_64 = "afb503104df7e3ba828d86e78f54427ef410e9fc4a2da113de529fc851128ed4"  # PyPI's published sha256
OPENMPI_5_0_8_X86_64 = "d8353fc70887f3373b3878826ce95771500202c1f7980e4d4755e0793b01acc8"


@pytest.fixture
def x86_64(monkeypatch):
    """Images are built for this machine's architecture: pretend it is x86_64, whose wheels are pinned."""
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")


def test_pip_block(seed_stack, x86_64):
    step = B.PipMpiBlock(seed_stack("pip-mpich")).step()
    assert step.commands == [
        "export PIP_CONFIG_FILE=/etc/mpistack/pip/pip.conf",
        "if [ -f /run/secrets/mpistack-pip.conf ]; then export PIP_CONFIG_FILE=/run/secrets/mpistack-pip.conf; fi",
        f"printf '%s\\n' 'mpich==4.3.2 --hash=sha256:{MPICH_4_3_2_X86_64}' > /etc/mpistack/pip/requirements.txt",
        "python3 -m venv /opt/mpi",
        "/opt/mpi/bin/pip install --no-cache-dir --require-hashes --only-binary=:all: "
        "-r /etc/mpistack/pip/requirements.txt",
        "/opt/mpi/bin/pip show --files mpich > /opt/mpi/mpistack-wheel-files.txt"]
    assert step.env["MPICH_CH4_NETMOD"] == "ofi"
    assert step.comment == "mpich 4.3.2 wheel from PyPI, sha256 as PyPI publishes it " \
                           "(https://pypi.org/pypi/mpich/4.3.2/json)"
    assert (step.pin.component, step.pin.sha256) == ("mpich-wheel-x86_64", MPICH_4_3_2_X86_64)


def test_pip_block_openmpi(seed_stack, x86_64):
    text = commands(B.PipMpiBlock(seed_stack("pip-openmpi")).step())
    assert f"'openmpi==5.0.8 --hash=sha256:{OPENMPI_5_0_8_X86_64}'" in text
    assert "--require-hashes --only-binary=:all: -r /etc/mpistack/pip/requirements.txt" in text


def test_pip_recipe_lists_the_wheel_as_a_pinned_download(seed_stack, x86_64):
    recipe = render(seed_stack("pip-mpich"))
    assert recipe.downloads == [{"component": "mpich-wheel-x86_64", "version": "4.3.2",
                                 "url": "https://pypi.org/pypi/mpich/4.3.2/json", "sha256": MPICH_4_3_2_X86_64,
                                 "source": recipe.downloads[0]["source"], "origin": "upstream", "file": None}]
    assert recipe.downloads[0]["source"].startswith("PyPI JSON API https://pypi.org/pypi/mpich/VERSION/json")
    assert f"mpich==4.3.2 --hash=sha256:{MPICH_4_3_2_X86_64}" in recipe.apptainer
    assert "pip install --no-cache-dir mpich" not in recipe.containerfile + recipe.apptainer


def test_pip_pin_follows_the_architecture(seed_stack, tmp_path, monkeypatch):
    versions = tmp_path / "versions.toml"
    versions.write_text('[mpich-wheel-aarch64]\nurl = "https://pypi.org/pypi/mpich/{version}/json"\nsource = "t"\n'
                        f'[mpich-wheel-aarch64.versions]\n"4.3.2" = "{"a" * 64}"\n')
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    step = B.PipMpiBlock(seed_stack("pip-mpich"), versions).step()
    assert f"'mpich==4.3.2 --hash=sha256:{'a' * 64}'" in commands(step)


def test_pip_stack_without_a_pinned_wheel_for_the_architecture_fails(seed_stack, monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    with pytest.raises(RecipeError) as failure:
        render(seed_stack("pip-mpich"))
    message = str(failure.value)
    assert "pip-mpich: mpi.version: the mpich 4.3.2 wheel for riscv64 has no sha256 pinned in versions.toml " \
           "([mpich-wheel-riscv64]; pinned mpich wheels for riscv64: none)" in message
    assert "https://pypi.org/pypi/mpich/4.3.2/json" in message


def test_pip_release_without_a_pinned_wheel_fails(stack_from, x86_64):
    s = stack_from('name = "old-pip"\nmode = "distro"\n[base]\nimage = "localhost/debian:bookworm"\n'
                   '[mpi]\nimpl = "mpich"\nversion = "4.1.0"\nchannel = "pip"\n')
    with pytest.raises(RecipeError, match=r"old-pip: mpi.version: the mpich 4.1.0 wheel for x86_64 has no sha256 "
                                          r"pinned in versions.toml \(\[mpich-wheel-x86_64\]; pinned mpich wheels "
                                          r"for x86_64: 5.0.1, 4.3.2\)"):
        render(s)


def test_apt_block(seed_stack):
    step = B.AptMpiBlock(seed_stack("debian-openmpi")).step()
    assert step.build_packages == ["openmpi-bin", "libopenmpi-dev"] and step.runtime_packages == ["openmpi-bin"]


def test_values_are_shell_quoted(stack_from):
    s = stack_from(BASE + '[libfabric]\nversion = "1.22.0"\nconfigure = ["CFLAGS=-O2 -g; touch /pwned"]\n'
                   '[mpi]\nimpl = "mpich"\nversion = "4.3.1"\n')
    text = commands(B.LibfabricBlock(s).step())
    assert shlex.quote("CFLAGS=-O2 -g; touch /pwned") in text
    assert "'CFLAGS=-O2 -g; touch /pwned'" in text


def test_env_and_labels_are_escaped(stack_from):
    s = stack_from('description = "a \\"quoted\\" $HOME"\n' + BASE + '[libfabric]\nversion = "1.22.0"\n'
                   '[mpi]\nimpl = "mpich"\nversion = "4.3.1"\n[env]\nFOO = "a b $X"\n')
    cf = render(s).containerfile
    assert 'FOO="a b \\$X"' in cf
    assert 'org.opencontainers.image.description="a \\"quoted\\" \\$HOME"' in cf


def test_apptainer_definition(seed_stack):
    recipe = render(seed_stack("debian-mpich"))
    assert recipe.apptainer.startswith("Bootstrap: localimage\nFrom: localhost/debian:bookworm")
    assert "%post" in recipe.apptainer and "make -C /opt/mpistack/bench-src" in recipe.apptainer
    assert "    bench /opt/mpistack/bench-src" in recipe.apptainer
