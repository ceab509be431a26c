"""pip index credentials never reach a build context or an image layer: the context's pip.conf carries the
URLs without their user and password, and the pip step alone gets the full configuration as a build secret
(`podman build --secret`, `RUN --mount=type=secret`), from a private file that is removed after the build.

The unit tests render and write real contexts; the podman test builds a real image with the secret mounted
and then looks for the password in every layer, the history and the image's files."""

from __future__ import annotations

import gzip
import importlib
import io
import os
import secrets as token
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

from mpistack.engines.base import Engine
from mpistack.recipes.blocks import PipMpiBlock
from mpistack.recipes.render import build_secrets, host_pip_settings, render, without_credentials, write_context
from mpistack.spec import catalogue

render_module = importlib.import_module("mpistack.recipes.render")  # the package exports a function of that name
PASSWORD = "pw-" + token.token_hex(8)  # a value found nowhere else, so that any occurrence is a leak
INDEX = f"https://user:{PASSWORD}@pypi.example.org/simple"
MOUNT = "RUN --mount=type=secret,id=mpistack-pip,target=/run/secrets/mpistack-pip.conf set -eu; \\"


@pytest.fixture
def host_pip(monkeypatch, tmp_path):
    """A host whose pip settings are only those a test sets: no pip.conf, no PIP_* variable."""
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(render_module, "PIP_CONFIG_FILES", ())
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where mkdtemp creates (TMPDIR, read once)
    return tmp_path


@pytest.fixture
def stack():
    return catalogue.load("pip-mpich")


def _files(directory: Path) -> list[Path]:
    return [path for path in directory.rglob("*") if path.is_file()]


def test_urls_lose_their_user_and_password():
    assert without_credentials(INDEX) == "https://pypi.example.org/simple"
    # an unquoted @ in a password: everything up to the host goes
    assert without_credentials("https://u:p@ss@h.example/x") == "https://h.example/x"
    # several URLs (extra-index-url), a proxy, and an @ in a path, which is no userinfo
    assert without_credentials("https://a:b@one.example/s\nhttp://proxy:pw@two.example:3128 https://h/p@x") == \
        "https://one.example/s\nhttp://two.example:3128 https://h/p@x"


def test_a_credential_goes_as_a_build_secret_and_nowhere_in_the_context(host_pip, stack, monkeypatch):
    conf = host_pip / "pip.conf"
    conf.write_text("[global]\nextra-index-url =\n    https://tok:%s@extra.example.org/simple\n"
                    "    https://plain.example.org/simple\nclient-cert = /root/key.pem\n" % PASSWORD)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    context = host_pip / "context"
    with build_secrets(stack, context) as supplied:
        recipe = render(stack, secrets=supplied)
        write_context(recipe, context)
        secret = supplied["mpistack-pip"]
        # the credential file: 0600, in a private (0700) directory outside the context, with the credentials
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        assert stat.S_IMODE(secret.parent.stat().st_mode) == 0o700
        assert not secret.resolve().is_relative_to(context.resolve())
        text = secret.read_text()
        assert f"index-url = {INDEX}" in text
        assert f"https://tok:{PASSWORD}@extra.example.org/simple" in text
    assert not secret.exists() and not secret.parent.exists()
    assert recipe.secrets == ["mpistack-pip"]
    # no file of the context holds the password or a user name of an index
    for path in _files(context):
        content = path.read_bytes()
        assert PASSWORD.encode() not in content, path
        assert b"user:" not in content and b"tok:" not in content, path
    pip_conf = (context / "pip" / "pip.conf").read_text()
    assert "index-url = https://pypi.example.org/simple" in pip_conf
    assert "extra-index-url = https://extra.example.org/simple\n    https://plain.example.org/simple" in pip_conf
    assert "build secret mpistack-pip" in pip_conf and "client-cert" not in pip_conf
    for name in ("Containerfile", "mpistack.def", "pip/pip.conf", ".containerignore"):
        assert stat.S_IMODE((context / name).stat().st_mode) & 0o133 == 0, name  # 0644 at most
    # the mount is on the pip step's RUN, and only there; the step prefers the secret when it is mounted
    lines = recipe.containerfile.splitlines()
    assert [line for line in lines if "--mount" in line] == [MOUNT]
    start = lines.index(MOUNT)
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    pip_run = "\n".join(lines[start:end])  # the RUN with its continuation lines
    assert "/opt/mpi/bin/pip install" in pip_run
    assert "if [ -f /run/secrets/mpistack-pip.conf ]; then export PIP_CONFIG_FILE=/run/secrets/mpistack-pip.conf" \
        in pip_run
    assert PASSWORD not in recipe.apptainer


def test_the_secret_file_goes_on_ctrl_c(host_pip, stack, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    with pytest.raises(KeyboardInterrupt):
        with build_secrets(stack, host_pip / "context") as supplied:
            secret = supplied["mpistack-pip"]
            raise KeyboardInterrupt
    assert not secret.exists() and not secret.parent.exists()


def test_a_temporary_directory_inside_the_context_is_refused(host_pip, stack, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    context = host_pip / "tmp"  # TMPDIR itself
    with pytest.raises(render_module.RecipeError, match="inside the build context"):
        with build_secrets(stack, context):
            pass
    assert list(context.iterdir()) == []


def test_without_credentials_nothing_changes(host_pip, stack, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", "https://pypi.example.org/simple")
    context = host_pip / "context"
    with build_secrets(stack, context) as supplied:
        assert supplied == {}
        recipe = render(stack, secrets=supplied)
    assert recipe.containerfile == render(stack).containerfile
    assert "--mount" not in recipe.containerfile and recipe.secrets == []
    write_context(recipe, context)
    assert (context / "pip" / "pip.conf").read_text() == (
        "# pip configuration for the build stage, written by mpistack from this host's\n[global]\n"
        "disable-pip-version-check = true\nindex-url = https://pypi.example.org/simple\n")
    assert list((host_pip / "tmp").iterdir()) == []


def test_a_stack_without_pip_needs_no_secret(host_pip, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    with build_secrets(catalogue.load("debian-mpich"), host_pip / "context") as supplied:
        assert supplied == {}


def test_a_percent_encoded_password_in_pip_conf_is_read_and_removed(host_pip, monkeypatch):
    conf = host_pip / "pip.conf"
    conf.write_text("[global]\nindex-url = https://user:p%40ss@pypi.example.org/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    settings = host_pip_settings()
    assert settings.has_credentials
    assert "p%40ss" not in settings.context_config()
    assert "https://user:p%40ss@pypi.example.org/simple" in settings.secret_config()


def test_the_engine_passes_each_secret_as_a_build_flag(tmp_path):
    fake = tmp_path / "fake-engine"
    record = tmp_path / "argv"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {record}\nexit 1\n")
    fake.chmod(0o755)
    result = Engine(executable=str(fake)).build(tmp_path, tmp_path / "Containerfile", "localhost/t:1",
                                               secrets={"mpistack-pip": Path("/private/x.conf")})
    assert not result.ok
    argv = record.read_text().splitlines()
    assert argv[argv.index("--secret") + 1] == "id=mpistack-pip,src=/private/x.conf"
    assert argv[-1] == str(tmp_path)


# -- with real podman --------------------------------------------------------------------------------

def _layer_bytes(archive: bytes):
    """Every file of a `podman save` archive, and every file of each layer inside it (plain or gzip tar)."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as outer:
        for member in outer.getmembers():
            if not member.isfile():
                continue
            data = outer.extractfile(member).read()
            yield member.name, data
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            try:
                with tarfile.open(fileobj=io.BytesIO(data)) as layer:
                    for inner in layer.getmembers():
                        if inner.isfile():
                            yield f"{member.name}:{inner.name}", layer.extractfile(inner).read()
            except tarfile.TarError:
                pass  # a manifest or configuration, already yielded whole


@pytest.mark.podman
def test_no_layer_of_a_built_image_holds_the_secret(podman, base_image, host_pip, stack, monkeypatch):
    engine, base = podman, base_image
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    context = host_pip / "context"
    tag = f"localhost/mpistack-test/pip-secret:{token.token_hex(6)}"
    step_lines = PipMpiBlock(stack).step().commands[:2]  # the pip step's choice of PIP_CONFIG_FILE
    assert "/run/secrets/mpistack-pip.conf" in step_lines[1]
    try:
        with build_secrets(stack, context) as supplied:
            write_context(render(stack, secrets=supplied), context)
            # a throwaway Containerfile with the context's real pip/ and the pip step's real selection: the RUN
            # proves it read the credentials (the user name, not the password, is in the command) and records
            # which file it used
            (context / "Containerfile.test").write_text(
                f"FROM {base}\nCOPY pip/ /etc/mpistack/pip/\n"
                "RUN --mount=type=secret,id=mpistack-pip,target=/run/secrets/mpistack-pip.conf set -eu; "
                + " ; ".join(step_lines)
                + " ; grep -q '^index-url = https://user:' \"$PIP_CONFIG_FILE\""
                " ; echo \"$PIP_CONFIG_FILE\" > /etc/mpistack/pip-config-used\n")
            built = engine.build(context, context / "Containerfile.test", tag, log_path=host_pip / "build.log",
                                 secrets=supplied)
            assert built.ok, "\n".join(built.tail)
        assert PASSWORD not in (host_pip / "build.log").read_text()

        def inside(*argv: str) -> str:
            return subprocess.run(engine.command("run", "--rm", tag, *argv), env=engine.env(), capture_output=True,
                                  text=True, check=True).stdout

        assert inside("cat", "/etc/mpistack/pip-config-used").strip() == "/run/secrets/mpistack-pip.conf"
        assert "index-url = https://pypi.example.org/simple" in inside("cat", "/etc/mpistack/pip/pip.conf")
        assert inside("sh", "-c", "test -e /run/secrets/mpistack-pip.conf && echo present || echo absent").strip() \
            == "absent"
        history = subprocess.run(engine.command("history", "--no-trunc", tag), env=engine.env(), capture_output=True,
                                 text=True, check=True).stdout
        assert "--mount=type=secret" in history and PASSWORD not in history
        archive = subprocess.run(engine.command("save", tag), env=engine.env(), capture_output=True,
                                 check=True).stdout
        scanned = list(_layer_bytes(archive))
        assert any(name.endswith("etc/mpistack/pip/pip.conf") for name, _ in scanned)  # the layers were read
        leaks = [name for name, data in scanned if PASSWORD.encode() in data]
        assert leaks == []
    finally:
        engine.remove_image(tag)
    assert not engine.image_exists(tag)

