"""Ingest keeps what an output's libraries and launcher said (bounded, escaped) with its runs, in the run's
message as a launched case keeps its output, so that `doctor --run N` reads an ingested run as it reads a launched
one; an output of messages and no table is stored as one failed run; the same file is stored once."""

from __future__ import annotations

from mpistack.doctor import diagnose_runs
from mpistack.ingest.files import ingest_files
from mpistack.parsers.launcher_messages import FRAME_CHARS, MESSAGE_CHARS
from mpistack.store import open_database
from mpistack.store.query import Where, run_diagnostics

BANNER_BW = """\
--------------------------------------------------------------------------
WARNING: The default btl_vader_single_copy_mechanism CMA is
not available due to different user namespaces.

Local host: node17
--------------------------------------------------------------------------
# OSU MPI Bandwidth Test v7.3
# Size      Bandwidth (MB/s)
1                       2.51
1048576              7410.50
"""

NO_TABLE = """\
$ srun -N2 ./osu_latency
[node3:1234] PMIX ERROR: OUT-OF-RESOURCE in file base/bfrop_base_unpack.c at line 750
./osu_latency: symbol lookup error: /host/lib/libmpi.so.12: undefined symbol: MPIR_Err_create_code
srun: error: node3: task 0: Exited with exit code 127
"""


def test_a_banner_above_a_table_is_stored_with_the_run_and_the_doctor_reads_it(store_url, tmp_path):
    engine = open_database(store_url)
    path = tmp_path / "bw.txt"
    path.write_text(BANNER_BW)
    report = ingest_files(engine, [path], {"system": "x", "approach": "container"})
    assert report.errors == [] and report.results == 2
    (run,) = run_diagnostics(engine, [Where("run", "=", report.run_ids[0])])
    assert run["status"] == "ok" and "different user namespaces" in run["message"]
    titles = {finding.title for finding in diagnose_runs(engine, [Where("run", "=", report.run_ids[0])])}
    assert "vader-cma-user-namespaces" in titles
    # the same content again: skipped, not stored twice
    again = ingest_files(engine, [path], {"system": "x", "approach": "container"})
    assert again.runs == 0 and len(again.skipped) == 1


def test_an_output_without_a_table_is_one_failed_run_with_its_messages(store_url, tmp_path):
    engine = open_database(store_url)
    path = tmp_path / "slurm-9.out"
    path.write_text(NO_TABLE)
    report = ingest_files(engine, [path], {"system": "x"})
    assert report.errors == [] and report.runs == 1 and report.results == 0
    (run,) = run_diagnostics(engine, [Where("run", "=", report.run_ids[0])])
    assert (run["benchmark"], run["status"]) == ("latency", "failed")
    found = {finding.title: finding for finding in diagnose_runs(engine, [Where("run", "=", run["run"])])}
    assert {"abi-undefined-symbol", "pmix-version-skew"} <= set(found)
    assert found["abi-undefined-symbol"].verdict == "problem"


def test_the_stored_messages_are_bounded_and_escaped(store_url, tmp_path):
    engine = open_database(store_url)
    path = tmp_path / "noisy.txt"
    noise = "".join(f"warning: \x1b[33mmodule {chr(97 + i % 26) * (1 + i // 26)} is odd\x1b[0m\x07\n"
                    for i in range(3000))
    path.write_text(noise + BANNER_BW)
    report = ingest_files(engine, [path], {"system": "x"})
    (run,) = run_diagnostics(engine, [Where("run", "=", report.run_ids[0])])
    assert len(run["message"]) <= MESSAGE_CHARS + FRAME_CHARS + 60
    assert "\x1b" not in run["message"] and "\\x07" in run["message"]
