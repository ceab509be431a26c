"""A user's own stacks beside the shipped catalogue, and a user's own pins merged over the shipped versions.toml,
through the library and the real `mpistack stack` verbs."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mpistack.cli import app
from mpistack.spec import StackError, catalogue, pins

MINE = '''name = "my-mpich"
description = "MPICH 4.0.2 from Debian, my way"
mode = "distro"
network = "ucx"
[base]
image = "localhost/debian:bookworm"
make = "debian:bookworm"
[mpi]
impl = "mpich"
version = "4.0.2"
device = "ch4:ucx"
channel = "apt"
'''
SHA = "ab" * 32


@pytest.fixture(autouse=True)
def no_user_settings(monkeypatch, tmp_path):
    """Each test starts with no user stacks and no user pins, whatever the machine's configuration says."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("MPISTACK_STACKS", raising=False)
    monkeypatch.delenv("MPISTACK_VERSIONS", raising=False)
    catalogue.use_stacks_dir(None)
    yield
    catalogue.use_stacks_dir(None)


def stacks_dir(tmp_path, files: dict[str, str]):
    directory = tmp_path / "stacks"
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def test_user_stacks_from_the_environment_join_the_catalogue(tmp_path, monkeypatch):
    monkeypatch.setenv("MPISTACK_STACKS", str(stacks_dir(tmp_path, {"my-mpich.toml": MINE})))
    assert "my-mpich" in catalogue.names() and "debian-mpich" in catalogue.names()
    stack = catalogue.load("my-mpich")
    assert stack.image_ref() == "localhost/mpistack/my-mpich:mpich4.0.2-ucx"
    (path,) = [path for path in catalogue.stack_files() if path.stem == "my-mpich"]
    assert not catalogue.shipped(path)


def test_the_configuration_file_names_a_directory_relative_to_itself(tmp_path):
    stacks_dir(tmp_path, {"my-mpich.toml": MINE})
    config = tmp_path / "config" / "mpistack"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('stacks_dir = "../../stacks"\n')
    assert catalogue.load("my-mpich").name == "my-mpich"
    (config / "config.toml").write_text("stacks_dir = 3\n")
    with pytest.raises(StackError, match=r"config\.toml: stacks_dir: expected a directory path"):
        catalogue.names()


def test_a_user_stack_with_a_shipped_name_is_an_error_naming_both_files(tmp_path, monkeypatch):
    directory = stacks_dir(tmp_path, {"debian-mpich.toml": MINE})
    monkeypatch.setenv("MPISTACK_STACKS", str(directory))
    with pytest.raises(StackError) as error:
        catalogue.load("pip-mpich")
    message = str(error.value)
    assert str(directory / "debian-mpich.toml") in message
    assert str(catalogue.CATALOGUE / "debian-mpich.toml") in message


def test_a_missing_stacks_directory_says_where_it_was_named(tmp_path, monkeypatch):
    monkeypatch.setenv("MPISTACK_STACKS", str(tmp_path / "nowhere"))
    with pytest.raises(StackError, match=r"nowhere .*from \$MPISTACK_STACKS.*not a directory"):
        catalogue.stack_files()
    # the command line says the same: the variable is the catalogue's to read, not the --stacks option's
    result = CliRunner().invoke(app, ["stack", "list"], env={"MPISTACK_STACKS": str(tmp_path / "nowhere")})
    assert "from $MPISTACK_STACKS" in result.output and "from --stacks" not in result.output


def test_the_stacks_variable_may_name_a_directory_under_home(tmp_path, monkeypatch):
    stacks_dir(tmp_path, {"my-mpich.toml": MINE})
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["stack", "list", "-f", "json"], env={"MPISTACK_STACKS": "~/stacks"})
    assert result.exit_code == 0, result.output
    assert "my-mpich" in result.output


def test_stack_list_as_json_gives_data_not_display_strings(tmp_path):
    import json

    directory = stacks_dir(tmp_path, {"my-mpich.toml": MINE, "broken.toml": "name = 3\n"})
    result = CliRunner().invoke(app, ["stack", "--stacks", str(directory), "list", "-f", "json"])
    assert result.exit_code == 0, result.output
    records = {record["name"]: record for record in json.loads(result.stdout)}
    mine = records["my-mpich"]
    assert mine["own"] is True and mine["problem"] is None and mine["built"] in (True, False, None)
    assert (mine["mpi"], mine["mpi_version"], mine["device"]) == ("mpich", "4.0.2", "ch4:ucx")
    assert mine["gpu"] is None and mine["libfabric"] is None and mine["channel"] == "apt"
    assert mine["image"].endswith(":" + mine["image_tag"])
    assert records["broken"]["own"] is True and "broken.toml" in records["broken"]["file"]
    assert records["broken"]["problem"]  # why it cannot be used, as the table's problem column says
    shipped = [record for record in records.values() if not record["own"]]
    assert len(shipped) == len(list(catalogue.CATALOGUE.glob("*.toml")))
    assert all(isinstance(record["built"], (bool, type(None))) for record in records.values())


def test_stack_list_marks_own_stacks_and_says_which_images_are_built(tmp_path):
    directory = stacks_dir(tmp_path, {"my-mpich.toml": MINE})
    result = CliRunner().invoke(app, ["stack", "--stacks", str(directory), "list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    header, *lines = [line for line in result.stdout.splitlines() if not line.startswith("#")]
    assert header.split()[:4] == ["name", "image", "tag", "built"] and header.split()[-1] == "from"
    (mine,) = [line for line in lines if line.startswith("my-mpich ")]
    assert mine.split()[2] in ("yes", "no", "?") and mine.split()[-1] == "own"
    assert all(line.split()[2] in ("yes", "no", "?") for line in lines)
    assert len(lines) == len(list(catalogue.CATALOGUE.glob("*.toml"))) + 1


def test_stack_list_asks_the_engine_once_for_all_images(tmp_path, monkeypatch):
    from mpistack.engines.podman import PodmanEngine

    calls = []

    def existing_images(self, tags):
        calls.append(list(tags))
        return {tag for tag in tags if "/debian-mpich:" in tag}

    monkeypatch.setattr(PodmanEngine, "existing_images", existing_images)
    result = CliRunner().invoke(app, ["stack", "list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert len(calls) == 1 and len(calls[0]) == len(catalogue.names())
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[2:]}
    assert rows["debian-mpich"][2] == "yes" and rows["pip-mpich"][2] == "no"
    assert "1 built here" in result.stdout


def test_stack_check_prints_its_findings_on_stdout_and_fails_on_errors():
    runner = CliRunner()
    good = runner.invoke(app, ["stack", "check", "debian-mpich"])
    assert good.exit_code == 0 and "debian-mpich: 0 error(s)" in good.stdout
    bad = runner.invoke(app, ["stack", "check", "lumi-cxi-ofi1220-mpich423"])
    assert bad.exit_code == 1
    assert "error:" in bad.stdout and "source:" in bad.stdout and "lumi-cxi-ofi1220-mpich423: " in bad.stdout


def versions_file(tmp_path, text: str):
    path = tmp_path / "versions.toml"
    path.write_text(text)
    return path


def test_a_user_pin_is_merged_over_the_shipped_table_with_its_source(tmp_path, monkeypatch):
    shipped_ucx = pins.known_versions("ucx")
    path = versions_file(tmp_path, f'[ucx]\nsource = "my centre\'s mirror list"\n[ucx.versions]\n"1.99.0" = "{SHA}"\n')
    monkeypatch.setenv("MPISTACK_VERSIONS", str(path))
    assert set(pins.known_versions("ucx")) == {*shipped_ucx, "1.99.0"}
    pin = pins.pinned("ucx", "1.99.0")
    assert pin.sha256 == SHA and pin.url.endswith("/v1.99.0/ucx-1.99.0.tar.gz")  # the shipped URL pattern
    assert pin.source == f"my centre's mirror list (pinned in {path})"
    shipped = pins.pinned("ucx", shipped_ucx[0])
    assert "spack" in shipped.source  # the shipped pins keep their own source


def test_a_new_component_needs_its_url(tmp_path, monkeypatch):
    path = versions_file(tmp_path, f'[hwloc]\nsource = "hwloc\'s release page"\n[hwloc.versions]\n"2.9.0" = "{SHA}"\n')
    monkeypatch.setenv("MPISTACK_VERSIONS", str(path))
    with pytest.raises(ValueError, match=r"versions\.toml: hwloc\.url: required"):
        pins.table()
    path.write_text('[hwloc]\nurl = "https://download.open-mpi.org/release/hwloc/v{major_minor}/hwloc-{version}'
                    f'.tar.bz2"\nsource = "hwloc\'s release page"\n[hwloc.versions]\n"2.9.0" = "{SHA}"\n')
    monkeypatch.setenv("MPISTACK_VERSIONS", str(path.rename(tmp_path / "versions2.toml")))
    assert pins.pinned("hwloc", "2.9.0").url == "https://download.open-mpi.org/release/hwloc/v2.9/hwloc-2.9.0.tar.bz2"


@pytest.mark.parametrize("text, problem", [
    (f'[ucx.versions]\n"1.99.0" = "{SHA}"\n', r"ucx\.source: required"),
    ('[ucx]\nsource = "x"\n[ucx.versions]\n"1.99.0" = ""\n', r"ucx\.versions: expected .* each with its sha256"),
    ('[ucx]\nsource = "x"\n[ucx.versions]\n"1.99.0" = "abc"\n', r"not a sha256"),
])
def test_every_user_pin_needs_its_sha256_and_source(tmp_path, monkeypatch, text, problem):
    monkeypatch.setenv("MPISTACK_VERSIONS", str(versions_file(tmp_path, text)))
    with pytest.raises(ValueError, match=problem):
        pins.table()


def test_a_named_versions_file_that_is_missing_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("MPISTACK_VERSIONS", str(tmp_path / "absent.toml"))
    with pytest.raises(ValueError, match=r"absent\.toml \(named by \$MPISTACK_VERSIONS\): no such file"):
        pins.table()


def test_the_configuration_directory_versions_file_is_read_without_the_variable(tmp_path):
    config = tmp_path / "config" / "mpistack"
    config.mkdir(parents=True)
    (config / "versions.toml").write_text(f'[ucx]\nsource = "mine"\n[ucx.versions]\n"1.98.0" = "{SHA}"\n')
    assert pins.pinned("ucx", "1.98.0").sha256 == SHA
