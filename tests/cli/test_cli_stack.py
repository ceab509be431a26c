"""The stack verbs through the real CLI (typer's runner)."""

from __future__ import annotations

import tomllib

from typer.testing import CliRunner

from mpistack.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


def test_list():
    result = invoke("stack", "list")
    assert result.exit_code == 0
    assert "cscs-mpich-gh200" in result.stdout and "mpich4.3.1-ofi1.22-cuda12.8" in result.stdout


def test_list_at_80_columns_fits_and_names_what_it_left_out():
    """At 80 columns on purpose (the suite itself runs without COLUMNS): every line fits, each stack is a line of
    its own, and the columns that did not fit are named."""
    result = runner.invoke(app, ["stack", "list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert any(line.startswith("cscs-mpich-gh200") for line in lines)
    assert "# not shown: image tag" in result.stdout


def test_show():
    result = invoke("stack", "show", "debian-openmpi")
    assert result.exit_code == 0
    assert "localhost/mpistack/debian-openmpi:openmpi4.1.4-ucx" in result.stdout


def test_render_containerfile_and_apptainer():
    result = invoke("stack", "render", "cscs-mpich-cpu")
    assert result.exit_code == 0 and "--with-xpmem=/usr" in result.stdout
    result = invoke("stack", "render", "cscs-mpich-cpu", "--apptainer")
    assert result.exit_code == 0 and result.stdout.startswith("Bootstrap: docker\nFrom: docker.io/ubuntu:24.04")


def test_render_edf_env_binds():
    result = invoke("stack", "render", "cscs-mpich-gh200", "--edf", "--gpu",
                    "--image", "quay.io/ethcscs/mpich:4.3.1-ofi1.22-cuda12.8")
    data = tomllib.loads(result.stdout)
    assert data["image"] == "quay.io#ethcscs/mpich:4.3.1-ofi1.22-cuda12.8"
    assert data["env"] == {"MPIR_CVAR_CH4_OFI_ENABLE_HMEM": "1"}
    result = invoke("stack", "render", "cscs-openmpi5", "--env")
    assert "export PMIX_MCA_psec=native" in result.stdout
    # the host's libfabric and libcxi come from the named system's profile, never by default
    result = invoke("stack", "render", "lumi-ofi1152-mpich423", "--binds", "fabric-swap", "--system", "lumi")
    assert "/usr/lib64/libcxi.so.1:/usr/lib64/libcxi.so.1" in result.stdout
    result = invoke("stack", "render", "lumi-ofi1152-mpich423", "--binds", "fabric-swap")
    assert "/opt/cray" not in result.stdout and "libcxi" not in result.stdout
    result = invoke("stack", "render", "lumi-ofi1152-mpich423", "--binds", "nope")
    assert result.exit_code == 2
    # a UCX stack has no libfabric to swap: refused as a campaign and the doctor refuse it, with no bind list
    result = invoke("stack", "render", "debian-mpich", "--binds", "fabric-swap")
    assert result.exit_code == 2 and result.stdout == ""
    assert "carries its messages over UCX, not libfabric" in result.stderr
    # --system where it changes nothing is said to change nothing
    result = invoke("stack", "render", "cscs-openmpi5", "--env", "--system", "lumi")
    assert result.exit_code == 0 and "--system changes only --binds and --out" in result.stderr
    assert "export PMIX_MCA_psec=native" in result.stdout


def test_render_out_writes_context(tmp_path):
    result = invoke("stack", "render", "pip-mpich", "--out", str(tmp_path / "ctx"))
    assert result.exit_code == 0
    ctx = tmp_path / "ctx"
    assert (ctx / "Containerfile").is_file() and (ctx / "mpistack.def").is_file()
    assert (ctx / "bench" / "Makefile").is_file() and list((ctx / "bench" / "src").glob("*.c"))
    assert (ctx / "pip" / "pip.conf").read_text().startswith("# pip configuration")
    assert (ctx / "runtime" / "env.sh").is_file()


def test_render_unpinned_fails_clearly():
    result = invoke("stack", "render", "lumi-cxi-ofi1220-mpich423")
    assert result.exit_code == 2
    assert "listed without a sha256" in result.stderr or "listed without a sha256" in result.output


def test_check_exit_codes():
    assert invoke("stack", "check", "debian-mpich").exit_code == 0
    bad = invoke("stack", "check", "lumi-cxi-ofi1220-mpich423")
    assert bad.exit_code == 1


def test_check_findings_fit_80_columns_but_for_a_url(tmp_path):
    import os
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "mpistack.cli", "stack", "check", "lumi-ofi1152-mpich343"],
                            capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"}, timeout=120)
    lines = result.stdout.splitlines()  # the findings are the answer: stdout
    assert any(line.startswith("warning: [lumi-mpich343-container-slow]") for line in lines), result.stdout
    assert any(line.startswith("    why: ") for line in lines) and any(line.startswith("    source: ") for line in lines)
    assert all(len(line) <= 80 or "://" in line for line in lines), result.stdout


def test_bad_stack_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\n[base]\nimage = "docker.io/ubuntu:24.04"\n[mpi]\nimpl = "mpich"\n'
                    'version = "4.3.1"\ndevice = "ch4:tcp"\n')
    result = invoke("stack", "render", str(path))
    assert result.exit_code == 2
    assert "mine.toml: mpi.device: expected" in result.output


def test_base_rejects_non_debian():
    result = invoke("base", "ubuntu:noble")
    assert result.exit_code == 2 and "only debian:<suite>" in result.output


def test_render_srun_lines_for_centre_runtimes():
    """One container per rank under srun, for the runtimes of centres: the PMI plug-in of the stack's MPI,
    the placement, and the stack's settings where each runtime takes them."""
    pyxis = invoke("stack", "render", "cscs-openmpi5-lnx", "--srun", "pyxis", "--ranks", "8", "--nodes", "4")
    assert pyxis.exit_code == 0
    assert pyxis.stdout.startswith("env PMIX_MCA_psec=native ")
    assert ("srun --mpi=pmix --nodes=4 --ntasks=8 --ntasks-per-node=2 --cpu-bind=none --kill-on-bad-exit=1 "
            "'--container-image=localhost#mpistack/cscs-openmpi5-lnx:openmpi5.0.8-cxi12.0.1-ofi2.1' "
            "--container-env=PMIX_MCA_psec,") in pyxis.stdout
    edf = invoke("stack", "render", "cscs-mpich-cpu", "--srun", "cscs-ce")
    assert edf.stdout == ("srun --mpi=pmi2 --nodes=2 --ntasks=2 --ntasks-per-node=1 --cpu-bind=none "
                          "--kill-on-bad-exit=1 --environment=cscs-mpich-cpu mpistack-bench latency\n")
    apptainer = invoke("stack", "render", "debian-mpich", "--srun", "apptainer", "--nodes", "1")
    assert "apptainer exec --no-eval debian-mpich.sif mpistack-bench latency" in apptainer.stdout
    unknown = invoke("stack", "render", "debian-mpich", "--srun", "shifter")
    assert unknown.exit_code == 2 and "expected one of" in unknown.output
    bad = invoke("stack", "render", "debian-mpich", "--srun", "pyxis", "--ranks", "1", "--nodes", "2")
    assert bad.exit_code == 2 and "ranks (1) must be at least nodes (2)" in bad.output


def test_build_takes_several_stacks_and_stops_at_the_first_that_fails(monkeypatch):
    import mpistack.images.build as build
    from mpistack.engines.base import BuildResult
    from mpistack.spec.stack import StackError

    built = []

    def fake_build(name, engine, **options):  # the images themselves are built for real in tests/images
        built.append(name)
        if name == "broken":
            raise StackError("stack 'broken': not a file and not in the catalogue")
        return BuildResult(tag=f"localhost/mpistack/{name}", ok=True, seconds=1.0, log_path=None, returncode=0)

    monkeypatch.setattr(build, "build_stack", fake_build)
    result = invoke("stack", "build", "debian-mpich", "debian-openmpi")
    assert result.exit_code == 0 and built == ["debian-mpich", "debian-openmpi"]
    built.clear()
    result = invoke("stack", "build", "broken", "debian-mpich")
    assert result.exit_code == 2 and built == ["broken"]  # nothing after the failure
    result = invoke("stack", "build", "a", "b", "--log", "x.log")
    assert result.exit_code == 2 and "--log names one file" in result.output
