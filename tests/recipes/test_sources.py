"""Source mirrors: where each release tarball of a source build comes from (upstream, the Debian archive's orig
tarball, a local directory), in which order they are tried, and what the Containerfile says about it. The
fetch step a mirror directory renders is run for real against a file in a directory."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile

import pytest

from mpistack.recipes import render, write_context
from mpistack.recipes import blocks as B
from mpistack.recipes.sources import (MirrorError, UserMirrors, _mirrors_from_text, mirror_order, resolve,
                                      user_mirrors)
from mpistack.spec import catalogue
from mpistack.spec.pins import UnpinnedError, debian_pool_directory, pinned, pinned_debian
from mpistack.spec.stack import StackError

MPICH_ORIG = "b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860"  # mpich_4.0.2-3.dsc
OPENMPI_ORIG = "ddaee7dbdb01eb4fab1fda5b5e03e8bbff026711806c095c1f39bb410f99f263"  # openmpi_4.1.4-3.dsc

MPICH_STACK = """
name = "t"
[base]
image = "localhost/debian:bookworm"
[libfabric]
version = "1.17.0"
channel = "apt"
[mpi]
impl = "mpich"
version = "4.0.2"
"""


@pytest.fixture(autouse=True)
def no_user_configuration(tmp_path, monkeypatch):
    """The user's own mirrors.toml and versions.toml stay out of these tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("MPISTACK_VERSIONS", raising=False)


def test_debian_pins_are_the_dsc_checksums():
    mpich = pinned_debian("mpich", "4.0.2", "http://deb.debian.org/debian")
    assert mpich.url == "http://deb.debian.org/debian/pool/main/m/mpich/mpich_4.0.2.orig.tar.xz"
    assert mpich.sha256 == MPICH_ORIG
    assert "mpich_4.0.2-3.dsc" in mpich.source and mpich.origin == "debian"
    assert pinned_debian("openmpi", "4.1.4").sha256 == OPENMPI_ORIG
    assert pinned_debian("mpich", "4.3.1") is None  # Debian's archive holds no such release: none pinned


def test_pool_directory_of_lib_packages():
    assert debian_pool_directory("mpich") == "pool/main/m/mpich"
    assert debian_pool_directory("libfabric") == "pool/main/libf/libfabric"


def test_mirror_order_user_then_stack_then_upstream(stack_from):
    stack = stack_from(MPICH_STACK + '[sources]\nmirrors = ["debian", "/srv/b"]\n')
    assert mirror_order(stack, UserMirrors(("/srv/a", "debian"))) == ["/srv/a", "debian", "/srv/b", "upstream"]
    explicit = stack_from(MPICH_STACK + '[sources]\nmirrors = ["upstream", "debian"]\n')
    assert mirror_order(explicit, UserMirrors()) == ["upstream", "debian"]
    assert mirror_order(stack_from(MPICH_STACK), UserMirrors()) == ["upstream"]


def test_debian_mirror_renders_the_archive_download_and_says_where_it_came_from(stack_from):
    stack = stack_from(MPICH_STACK + '[sources]\nmirrors = ["debian"]\n')
    recipe = render(stack)
    text = recipe.containerfile
    assert "/pool/main/m/mpich/mpich_4.0.2.orig.tar.xz" in text
    assert f"echo '{MPICH_ORIG}  mpich_4.0.2.orig.tar.xz' | sha256sum -c -" in text
    comment = next(line for line in text.splitlines() if line.startswith("# source: mpich 4.0.2"))
    assert "from the Debian archive http" in comment and MPICH_ORIG in comment
    assert "https://deb.debian.org/debian/pool/main/m/mpich/mpich_4.0.2-3.dsc" in comment
    assert "# source: mpich 4.0.2" in recipe.apptainer
    assert recipe.downloads[0]["origin"] == "debian"


def test_upstream_source_is_described_too(stack_from):
    recipe = render(stack_from(MPICH_STACK.replace('"4.0.2"', '"4.3.2"')))
    upstream = pinned("mpich", "4.3.2")
    assert f"# source: mpich 4.3.2 from {upstream.url}, sha256 {upstream.sha256} (pinned from spack" \
        in recipe.containerfile


def test_user_archive_is_used(stack_from, tmp_path):
    (tmp_path / "config" / "mpistack").mkdir(parents=True)
    (tmp_path / "config" / "mpistack" / "mirrors.toml").write_text(
        'mirrors = ["debian"]\ndebian_archive = "http://ftp.de.debian.org/debian/"\n')
    recipe = render(stack_from(MPICH_STACK))
    assert "curl -fsSL --retry 3 -o mpich_4.0.2.orig.tar.xz " \
           "http://ftp.de.debian.org/debian/pool/main/m/mpich/mpich_4.0.2.orig.tar.xz" in recipe.containerfile


def test_a_release_debian_lacks_falls_back_to_upstream(stack_from):
    stack = stack_from(MPICH_STACK.replace('"4.0.2"', '"4.3.2"') + '[sources]\nmirrors = ["debian"]\n')
    assert resolve(stack, "mpich", "4.3.2", field="mpi.version", user=UserMirrors()) == pinned("mpich", "4.3.2")


def test_directory_mirror_copies_the_file_into_the_context(stack_from, tmp_path):
    mirror = tmp_path / "tarballs"
    (mirror / "mpich").mkdir(parents=True)  # Spack's layout: one directory per component
    (mirror / "mpich" / "mpich_4.0.2.orig.tar.xz").write_bytes(b"the orig tarball")
    stack = stack_from(MPICH_STACK + f'[sources]\nmirrors = ["{mirror}", "debian"]\n')
    recipe = render(stack)
    lines = recipe.containerfile.splitlines()
    source = next(i for i, line in enumerate(lines) if line.startswith("# source: mpich"))
    run = lines[source + 1]
    assert run.startswith("RUN --mount=type=bind,source=sources,target=/tmp/mpistack-sources set -eu;")
    assert "cp /tmp/mpistack-sources/mpich_4.0.2.orig.tar.xz mpich_4.0.2.orig.tar.xz" in recipe.containerfile
    assert "curl" not in recipe.containerfile.split("# MPICH")[1].split("# mpistack-bench")[0]
    assert f"mirror directory {mirror}/mpich/mpich_4.0.2.orig.tar.xz (a copy of http" in recipe.containerfile
    assert "sources/mpich_4.0.2.orig.tar.xz /tmp/mpistack-sources/mpich_4.0.2.orig.tar.xz" in recipe.apptainer
    context = tmp_path / "context"
    write_context(recipe, context)
    assert (context / "sources" / "mpich_4.0.2.orig.tar.xz").read_bytes() == b"the orig tarball"
    # a later build without the mirror leaves no stale copy behind
    write_context(render(stack_from(MPICH_STACK)), context)
    assert not (context / "sources").exists()


def test_directory_without_the_file_is_skipped(stack_from, tmp_path):
    stack = stack_from(MPICH_STACK + f'[sources]\nmirrors = ["{tmp_path}", "debian"]\n')
    pin = resolve(stack, "mpich", "4.0.2", field="mpi.version", user=UserMirrors())
    assert pin.origin == "debian" and not pin.local_path


def test_unpinned_everywhere_names_the_pinned_versions(stack_from):
    stack = stack_from(MPICH_STACK.replace('"4.0.2"', '"4.0.1"') + '[sources]\nmirrors = ["debian"]\n')
    with pytest.raises(UnpinnedError, match=r"mpi.version: mpich 4.0.1 has no pinned sha256 .*pinned versions: "):
        resolve(stack, "mpich", "4.0.1", field="mpi.version", user=UserMirrors())


@pytest.mark.parametrize("text, message", [
    ('mirrors = "debian"', "mirrors: expected a list of strings"),
    ('mirrors = ["relative/dir"]', "mirrors[0]: expected 'upstream', 'debian' or a directory's absolute path"),
    ('mirror = ["debian"]', "mirror: unknown key"),
    ('debian_archive = "ftp://x"', "debian_archive: expected an http(s):// URL"),
    ('mirrors = [', "cannot read the mirrors"),
])
def test_bad_mirrors_file_names_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "mirrors.toml"
    path.write_text(text + "\n")
    with pytest.raises(MirrorError, match=f"^{path}: .*") as error:
        user_mirrors(path)
    assert message in str(error.value)


def test_bad_stack_mirror_names_the_field(stack_from):
    with pytest.raises(StackError, match=r"test.toml: sources.mirrors.0: expected 'upstream', 'debian' or a "):
        stack_from(MPICH_STACK + '[sources]\nmirrors = ["ftp://x"]\n')


def test_apt_libfabric_refuses_build_options(stack_from):
    with pytest.raises(StackError, match=r"test.toml: libfabric: channel 'apt' installs .*remove providers"):
        stack_from(MPICH_STACK.replace('channel = "apt"', 'channel = "apt"\nproviders = ["tcp"]'))


def test_apt_libfabric_is_a_checked_package_layer(stack_from):
    recipe = render(stack_from(MPICH_STACK))
    text = recipe.containerfile
    assert "apt-get install -y --no-install-recommends libfabric-dev libpsm-infinipath1-dev libpsm2-dev " \
           "librdmacm-dev" in text
    assert 'test "$(pkg-config --modversion libfabric)" = 1.17.0 ||' in text
    assert "--with-libfabric=/usr" in text
    assert "libfabric-" not in "".join(d["component"] for d in recipe.downloads)  # nothing downloaded for it


def test_source_stacks_share_base_tools_and_libfabric_layers():
    """MPICH and Open MPI differ from the first line that is theirs: everything before (base, build tools,
    libfabric) is the same text, so podman builds it once."""
    mpich = render(catalogue.load("source-mpich-ofi")).containerfile.splitlines()
    openmpi = render(catalogue.load("source-openmpi-ofi")).containerfile.splitlines()
    body = [i for i, line in enumerate(mpich) if line.startswith("FROM")][0]
    first_difference = next(i for i, (a, b) in enumerate(zip(mpich[body:], openmpi[body:])) if a != b) + body
    shared = "\n".join(mpich[body:first_difference])
    assert "build-essential" in shared and "libfabric-dev" in shared
    assert "pkg-config --modversion libfabric" in shared


def test_apt_sources_are_read_in_both_formats():
    one_line = "deb [arch=amd64] http://a.example/debian bookworm main\n"
    deb822 = "Types: deb\nURIs: http://b.example/debian\nSuites: bookworm\n"
    assert _mirrors_from_text(one_line + "\n" + deb822) == ["http://a.example/debian", "http://b.example/debian"]


def _tarball(content: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz") as tar:
        info = tarfile.TarInfo("fake-1.0/README")
        info.size = len(content)
        tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


@pytest.mark.parametrize("served, ok", [(b"genuine", True), (b"tampered", False)])
def test_mirror_directory_file_is_verified_by_the_rendered_step(tmp_path, served, ok):
    """The lines a Containerfile RUN carries for a mirrored file, run for real: copied from the mounted
    directory, checked against the pin, unpacked only when it matches."""
    genuine = _tarball(b"genuine")
    versions = tmp_path / "versions.toml"
    versions.write_text('[fake]\nurl = "https://example.org/fake-{version}.tar.xz"\nsource = "test"\n'
                        f'[fake.versions]\n"1.0" = "{hashlib.sha256(genuine).hexdigest()}"\n')
    mount = tmp_path / "mount"
    mount.mkdir()
    (mount / "fake-1.0.tar.xz").write_bytes(_tarball(served))
    pin = pinned("fake", "1.0", path=versions)
    from dataclasses import replace
    pin = replace(pin, origin=str(mount), local_path=str(mount / "fake-1.0.tar.xz"))
    lines = [line.replace("/tmp/mpistack-sources", str(mount)) for line in B.fetch_lines(pin, str(tmp_path / "src"))]
    result = subprocess.run(["bash", "-c", "set -eu -o pipefail\n" + "\n".join(lines) + "\necho UNPACKED"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=60)
    if ok:
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "src" / "README").read_bytes() == b"genuine"
    else:
        assert result.returncode != 0 and "UNPACKED" not in result.stdout
        assert f"mpistack: checksum mismatch for fake 1.0 ({mount}/fake-1.0.tar.xz): expected sha256" in result.stderr
