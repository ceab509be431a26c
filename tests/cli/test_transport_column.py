"""`mpistack results` and `runs` show what each run's MPI library said it used, as one line."""

from mpistack.cli.common import OutputFormat
from mpistack.cli.results import transport_lines
from mpistack.cli.runs import RUN_COLUMNS, run_lines

TRANSPORT = {"probe": "UCX_LOG_LEVEL=info", "mpi": "mpich", "layer": "ucx", "transports": "tcp/lo,tcp/eth0",
             "network": "tcp"}
ROW = {"run": 1, "ranks": 2, "nodes": 1, "message": None, "tags": {}, "transport": TRANSPORT}


def test_runs_show_the_transport_line():
    assert "transport" in RUN_COLUMNS
    assert run_lines([ROW])[0]["transport"] == "ucx tcp/lo,tcp/eth0 (tcp)"


def test_results_show_it_where_asked_and_json_keeps_the_record():
    asked = transport_lines([ROW], OutputFormat.table, "run,transport", wide=False)
    assert asked[0]["transport"] == "ucx tcp/lo,tcp/eth0 (tcp)"
    assert transport_lines([ROW], OutputFormat.csv, None, wide=False)[0]["transport"].startswith("ucx")
    assert transport_lines([ROW], OutputFormat.json, None, wide=True)[0]["transport"] == TRANSPORT
    assert transport_lines([ROW], OutputFormat.table, None, wide=False)[0] is ROW  # not shown, not copied
