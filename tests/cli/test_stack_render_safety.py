"""`mpistack stack render`: names that cannot break the file system, and --out written all at once."""

from __future__ import annotations

from typer.testing import CliRunner

from mpistack.cli import app

runner = CliRunner()

STACK = ('name = "{name}"\n[base]\nimage = "localhost/debian:bookworm"\n'
         '[mpi]\nimpl = "mpich"\nversion = "4.0.2"\nchannel = "apt"\ndevice = "ch4:ucx"\n')


def invoke(*args, env=None):
    return runner.invoke(app, list(args), env=env)


def test_a_300_character_stack_name_is_a_clean_error():
    result = invoke("stack", "render", "a" * 300)
    assert result.exit_code == 2
    assert not isinstance(result.exception, OSError) and "Traceback" not in result.output
    assert "not a usable file name (File name too long)" in result.output
    assert "(300 characters)" in result.output


def test_a_300_character_name_in_a_stack_file_is_a_clean_error(tmp_path):
    path = tmp_path / "long.toml"
    path.write_text("mode = 'distro'\n" + STACK.format(name="a" * 300))
    result = invoke("stack", "render", str(path), "--out", str(tmp_path / "ctx"))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{path}: name: expected at most 100 characters" in result.output
    assert not (tmp_path / "ctx").exists()


def test_a_newline_in_a_stack_file_is_a_clean_error(tmp_path):
    path = tmp_path / "evil.toml"
    path.write_text("mode = 'distro'\norigin = \"x\\nRUN touch /tmp/x\"\n" + STACK.format(name="evil"))
    result = invoke("stack", "render", str(path))
    assert result.exit_code == 2
    assert f"{path}: origin: expected one line of printable text: control character '\\n'" in result.output


def test_a_failing_render_leaves_no_directory(tmp_path):
    out = tmp_path / "new" / "ctx"
    result = invoke("stack", "render", "debian-mpich", "--out", str(out), env={"MPISTACK_BENCH_DIR": "/nonexistent"})
    assert result.exit_code == 2
    assert "mpistack-bench sources not found at /nonexistent" in result.output
    assert list(tmp_path.iterdir()) == []  # neither ctx, nor its parent, nor a temporary sibling


def test_a_failing_render_leaves_an_earlier_context_as_it_was(tmp_path):
    out = tmp_path / "ctx"
    assert invoke("stack", "render", "debian-mpich", "--out", str(out)).exit_code == 0
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    containerfile = (out / "Containerfile").read_text()
    result = invoke("stack", "render", "debian-openmpi", "--out", str(out), env={"MPISTACK_BENCH_DIR": "/nonexistent"})
    assert result.exit_code == 2
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert (out / "Containerfile").read_text() == containerfile
    assert [p.name for p in tmp_path.iterdir()] == ["ctx"]


def test_render_replaces_an_earlier_context_whole(tmp_path):
    out = tmp_path / "ctx"
    assert invoke("stack", "render", "debian-mpich", "--out", str(out)).exit_code == 0
    (out / "stale.txt").write_text("from an earlier render")
    assert invoke("stack", "render", "debian-openmpi", "--out", str(out)).exit_code == 0
    assert not (out / "stale.txt").exists()
    assert "from stack debian-openmpi" in (out / "Containerfile").read_text()
    assert (out / "runtime" / "env.sh").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["ctx"]


def test_render_does_not_replace_a_directory_it_did_not_write(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    result = invoke("stack", "render", "debian-mpich", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "exists and is not a build context written by mpistack" in result.output
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
