"""`mpistack doctor FILE...` on outputs as users post them (excerpts written from public issue threads, with the
noise around them), through the real command line: the cause named with its fix and source, --json, the same
findings after `mpistack ingest` and `doctor --run N`, a Slingshot file at TCP class read --like a shipped reference,
unrecognised messages listed, and files that are not output (binary, empty, a directory, a FIFO) told in one line."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from typer.testing import CliRunner

from mpistack.cli import app
from tests.helpers import MPISTACK, plain_environment

# openucx/ucx issue 4224 and pull request 4511: Open MPI over UCX, a container per rank (apptainer run), then
# MPI_Init fails; the job printed no table
UCX_USER_NAMESPACES = """\
+ mpirun -np 2 -mca pml ucx -x UCX_TLS=posix,cma,ib apptainer run osu.sif /opt/osu/libexec/osu_latency
[1688710000.495329] [c7:2019617:0]       mm_posix.c:195  UCX  ERROR open(file_name=/proc/2019618/fd/20 flags=0x0) failed: Permission denied
[1688710000.495329] [c7:2019618:0]       mm_posix.c:195  UCX  ERROR open(file_name=/proc/2019617/fd/20 flags=0x0) failed: Permission denied
[1688710000.495362] [c7:2019618:0]          mm_ep.c:155  UCX  ERROR mm ep failed to connect to remote FIFO id 0xc0000005001ed121: Shared memory error
[c7:2019618] ../../../../../ompi/mca/pml/ucx/pml_ucx.c:424  Error: ucp_ep_create(proc=1) failed: Shared memory error
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
"""

# Open MPI 4's help text (help-btl-vader.txt) above a complete bandwidth table, every rank printing it
CMA_BANNER_BW = """\
$ mpirun -np 2 ./osu_bw
--------------------------------------------------------------------------
WARNING: Linux kernel CMA support was requested via the
btl_vader_single_copy_mechanism MCA variable, but CMA support is
not available due to restrictive ptrace settings.

The vader shared memory BTL will fall back on another single-copy
mechanism if one is available. This may result in lower performance.

  Local host: 3f2c1d9e8a7b
--------------------------------------------------------------------------
# OSU MPI Bandwidth Test v5.9
# Size      Bandwidth (MB/s)
1                       2.51
1024                 1873.22
1048576              7410.50
[3f2c1d9e8a7b:00031] 1 more process has sent help message help-btl-vader.txt / cma-permission-denied
[3f2c1d9e8a7b:00031] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / error messages
"""

# a batch job's whole output: two tests, a PMIx version skew (open-mpi/ompi issue 12146) and a line nobody knows
SLURM_OUT = """\
Loading openmpi/5.0.3
[nid200018:821449] UNPACK-PMIX-VALUE: UNSUPPORTED TYPE 104
[nid200019:1324764] UNPACK-PMIX-VALUE: UNSUPPORTED TYPE 104
[nid200019:1324764] PMIX ERROR: OUT-OF-RESOURCE in file base/bfrop_base_unpack.c at line 750

# OSU MPI Latency Test v7.3
# Size          Latency (us)
1                       2.10
8                       2.12
frobnicator: error: the flux capacitor is not charged
# OSU MPI Bandwidth Test v7.3
# Size      Bandwidth (MB/s)
1                       1.10
4194304             20000.00
"""

# a Slingshot system's inter-node bandwidth at TCP class (the figures of CSCS's own page without the CXI hook)
SLINGSHOT_AT_TCP = """\
$ srun -N2 -n2 --mpi=pmi2 ./pt2pt/osu_bw
# OSU MPI Bandwidth Test v7.5
# Size      Bandwidth (MB/s)
1                       0.14
65536                 832.10
1048576              2910.45
4194304              3121.42
"""


def doctor(*args, stdin: str | None = None, columns: str = "80", cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*MPISTACK, "doctor", *map(str, args)], capture_output=True, text=True, input=stdin,
                          env={**plain_environment(), "COLUMNS": columns}, timeout=120, cwd=cwd)


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_failed_output_without_a_table_is_explained_with_fix_and_source(tmp_path):
    result = doctor(write(tmp_path, "slurm-4224.out", UCX_USER_NAMESPACES))
    assert result.returncode == 1, result.stderr
    assert "problem  ucx-posix-proc-link-denied" in result.stdout
    assert "UCX_POSIX_USE_PROC_LINK=n" in result.stdout and "openucx/ucx/issues/4224" in result.stdout
    assert "Traceback" not in result.stderr
    # at 80 columns, every line fits but a word that cannot be broken (a URL, the long path of pytest's directory)
    assert all(len(line) <= 80 or " " not in line.strip() for line in result.stdout.splitlines())


def test_json_carries_each_findings_rule_title_meaning_fix_and_source(tmp_path):
    result = doctor(write(tmp_path, "out.txt", UCX_USER_NAMESPACES), "--json")
    document = json.loads(result.stdout)
    assert result.returncode == 1 and document["status"] == 1
    found = {finding["title"]: finding for finding in document["findings"]}
    finding = found["ucx-posix-proc-link-denied"]
    assert finding["rule"] == "run-signatures" and finding["verdict"] == "problem"
    assert finding["meaning"] and finding["fix"] and "https://github.com/openucx/ucx/issues/4224" in finding["source"]
    assert document["files"][0]["tests"][0]["benchmark"] == "latency"  # named by the command line


def test_a_warning_banner_above_a_table_is_read_and_the_figures_kept(tmp_path):
    result = doctor(write(tmp_path, "bw.txt", CMA_BANNER_BW), "--json")
    document = json.loads(result.stdout)
    assert result.returncode == 0, result.stdout  # a warning: the test ran
    # the message's signature, and the single-copy rule reading the same refusal
    assert {(f["rule"], f["verdict"]) for f in document["findings"]} == {("run-signatures", "warning"),
                                                                         ("single-copy", "warning")}
    assert "cma-permission-denied" in {f["title"] for f in document["findings"]}
    assert document["files"][0]["tests"] == [{"benchmark": "bw", "line": 12, "status": "ok", "ranks": 2,
                                              "nodes": None}]
    assert document["files"][0]["unrecognised"]["count"] == 0


def test_several_tests_per_file_and_an_unrecognised_line_listed(tmp_path):
    write(tmp_path, "slurm-77.out", SLURM_OUT)
    result = doctor("slurm-77.out", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "warning  pmix-version-skew" in result.stdout
    assert "slurm-77.out:6 (latency), " in result.stdout and "slurm-77.out:11 (bw)" in result.stdout
    assert "1 line(s) that read like errors" in result.stdout
    assert "frobnicator: error: the flux capacitor is not charged" in result.stdout


def test_srun_labels_do_not_hide_a_help_text(tmp_path):
    labelled = "".join(f"0: {line}\n" for line in (
        "-" * 74, 'The application appears to have been direct launched using "srun",',
        "but OMPI was not built with SLURM's PMI support and therefore cannot", "execute.", "-" * 74))
    result = doctor(write(tmp_path, "labelled.out", labelled), "--json")
    assert {f["title"] for f in json.loads(result.stdout)["findings"]} >= {"ompi-no-slurm-pmi"}


def test_a_help_text_with_no_error_word_is_listed_when_nothing_explains_it(tmp_path):
    # a frame is kept whole for its dashes; its words need not read like an error to be worth showing
    framed = "\n".join(["-" * 74, 'The value of the MCA parameter "frob_agent" was set to a path', "that is wrong:",
                        "", "  frob_agent: frob", "-" * 74, ""])
    document = json.loads(doctor(write(tmp_path, "frame.out", framed), "--json").stdout)
    assert document["files"][0]["unrecognised"]["lines"] == [
        'The value of the MCA parameter "frob_agent" was set to a path that is wrong: frob_agent: frob']


def test_standard_input(tmp_path):
    result = doctor("-", "--json", stdin=UCX_USER_NAMESPACES)
    document = json.loads(result.stdout)
    assert document["looked_at"] == ["<stdin>"]
    assert "ucx-posix-proc-link-denied" in {f["title"] for f in document["findings"]}


def test_after_ingest_the_stored_run_gets_the_same_findings(tmp_path):
    db = tmp_path / "s.db"
    for text in (UCX_USER_NAMESPACES, CMA_BANNER_BW):
        path = write(tmp_path, "out.txt", text)
        from_file = json.loads(doctor(path, "--json").stdout)["findings"]
        ingest = subprocess.run([*MPISTACK, "--db", db, "ingest", path, "-t", "system=x", "-t", "approach=container"],
                                capture_output=True, text=True, env=plain_environment(), timeout=120)
        assert ingest.returncode == 0, ingest.stderr
        run = ingest.stderr.split("(run ")[1].split(")")[0]
        stored = json.loads(doctor("--run", run, "--json", "--db", db).stdout)["findings"]
        key = lambda findings: sorted((f["rule"], f["verdict"], f["title"]) for f in findings)  # noqa: E731
        assert key(stored) == key(from_file) and key(from_file)


def test_a_slingshot_file_at_tcp_class_is_called_so_like_the_reference(tmp_path):
    result = doctor(write(tmp_path, "bw.out", SLINGSHOT_AT_TCP), "--like", "ref:alps-gh200-mpich-ce", "--json")
    document = json.loads(result.stdout)
    assert result.returncode == 1
    finding = next(f for f in document["findings"] if f["rule"] == "like-reference")
    assert finding["verdict"] == "problem" and finding["title"].startswith("TCP-class bandwidth")
    evidence = finding["evidence"]
    assert evidence["figure"] == "3121 MB/s at 4 MiB"
    assert evidence["reference_figure"].startswith("24008 MB/s at 4 MiB (CXI hook on)")
    assert "CSCS" in evidence["reference_source"]
    # without a reference, the text alone proves no class
    assert json.loads(doctor(tmp_path / "bw.out", "--json").stdout)["findings"] == []


def test_an_ingested_run_is_read_like_the_reference_as_its_file_is(tmp_path):
    db, path = tmp_path / "s.db", write(tmp_path, "bw.out", SLINGSHOT_AT_TCP)
    ingest = subprocess.run([*MPISTACK, "--db", db, "ingest", path, "-t", "system=x", "-t", "approach=container"],
                            capture_output=True, text=True, env=plain_environment(), timeout=120)
    assert ingest.returncode == 0, ingest.stderr
    run = ingest.stderr.split("(run ")[1].split(")")[0]
    result = doctor("--run", run, "--like", "ref:alps-gh200-mpich-ce", "--json", "--db", db)
    assert result.returncode == 1, result.stdout + result.stderr
    finding = next(f for f in json.loads(result.stdout)["findings"] if f["rule"] == "like-reference")
    assert finding["title"].startswith("TCP-class bandwidth")
    assert finding["evidence"]["figure"] == "3121 MB/s at 4 MiB"
    assert finding["evidence"]["reference_figure"].startswith("24008 MB/s at 4 MiB")
    # the run alone, without a reference, is blamed for nothing; --like with a campaign is refused in one line
    assert all(f["rule"] != "like-reference" for f in json.loads(doctor("--run", run, "--json", "--db", db).stdout)
               ["findings"])
    refused = doctor("--campaign", "x", "--like", "ref:alps-gh200-mpich-ce", "--db", db)
    assert refused.returncode == 2 and "--like reads output files" in refused.stdout + refused.stderr


def test_an_unknown_reference_lists_the_shipped_ones(tmp_path):
    result = doctor(write(tmp_path, "bw.out", SLINGSHOT_AT_TCP), "--like", "ref:nowhere")
    assert result.returncode == 2 and "ref:alps-gh200-mpich-ce" in result.stderr + result.stdout


def test_what_is_not_output_is_one_line_each(tmp_path):
    (tmp_path / "empty").write_text("")
    (tmp_path / "binary").write_bytes(b"\x7fELF\x00\x00\x01" * 100)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    result = doctor("empty", "binary", "fifo", "dir", cwd=tmp_path, columns="200")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    text = result.stdout
    for expected in ("not read: empty: empty file", "not read: binary: binary file",
                     "not read: fifo: a FIFO, not a regular file", "not read: dir: a directory, not a regular file"):
        assert expected in text


@pytest.mark.parametrize("args", [["--signatures"], ["--signatures", "--json"]])
def test_the_catalogue_lists_every_signature(args):
    from mpistack.doctor.signatures import shipped_bank

    result = CliRunner().invoke(app, ["doctor", *args], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    for signature in shipped_bank():
        assert signature.id in result.output


def test_the_docs_show_the_catalogue_and_an_example_of_a_file():
    from pathlib import Path

    from mpistack.doctor.signatures import shipped_bank

    text = (Path(__file__).resolve().parents[2] / "docs" / "doctor.md").read_text()
    for signature in shipped_bank():
        assert f"| `{signature.id}` | {signature.verdict} | {signature.source} |" in text, signature.id
    assert "COLUMNS=80 mpistack doctor slurm-4224.out" in text and "problem  ucx-posix-proc-link-denied" in text
    assert "mpistack doctor bw.out --like" in text


def test_an_ingested_outputs_unrecognised_lines_are_listed_by_run(tmp_path):
    db, path = tmp_path / "s.db", write(tmp_path, "slurm-77.out", SLURM_OUT)
    ingest = subprocess.run([*MPISTACK, "--db", db, "ingest", path, "-t", "system=x"], capture_output=True,
                            text=True, env=plain_environment(), timeout=120)
    assert "(run 1..2)" in ingest.stderr, ingest.stderr
    result = doctor("--run", "2", "--db", db)
    assert "warning  pmix-version-skew" in result.stdout
    assert "unrecognised in run 2: 1 line(s)" in result.stdout
    assert "frobnicator: error: the flux capacitor is not charged" in result.stdout
