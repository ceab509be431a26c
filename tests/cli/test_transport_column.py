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


def test_piped_results_show_the_transport_as_its_line_not_the_record(tmp_path):
    """Piped, a table has every column: the transport is the line a person reads there too."""
    from typer.testing import CliRunner

    from mpistack.cli import app
    from mpistack.parsers.model import ParsedRow, ParsedRun
    from mpistack.spec.provenance import Provenance
    from mpistack.store import open_database
    from mpistack.store.campaigns import start_campaign
    from mpistack.store.writer import write_runs

    path = tmp_path / "transport.db"
    engine = open_database(str(path))
    campaign_id = start_campaign(engine, "probed", {})
    run = ParsedRun(benchmark="latency", title="latency", units={"latency": "us"},
                    rows=[ParsedRow(8, {"latency": 1.5})])
    with engine.begin() as connection:
        write_runs(connection, [run], source="test", campaign_id=campaign_id, tags={"variant": "default"},
                   provenance=Provenance(stack="mpich", approach="native", ranks=2, nodes=1, transport=TRANSPORT))
    engine.dispose()
    result = CliRunner().invoke(app, ["--db", str(path), "results"])
    assert result.exit_code == 0, result.output
    assert "ucx tcp/lo,tcp/eth0 (tcp)" in result.stdout and "{" not in result.stdout
