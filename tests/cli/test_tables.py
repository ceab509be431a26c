"""The listing verbs' tables (results, runs, campaigns) on 80- and 120-column terminals, piped, as CSV, with
--columns, --wide and --limit: over a real store filled by the real writer."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mpistack.cli import app
from mpistack.cli.campaigns import CAMPAIGN_COLUMNS, CAMPAIGNS_LAYOUT, campaign_lines
from mpistack.cli.common import OutputFormat
from mpistack.cli.listing import SHORT_HEADERS, print_listing
from mpistack.cli.results import RESULTS_LAYOUT
from mpistack.cli.runs import RUN_COLUMNS, RUNS_LAYOUT, run_lines
from mpistack.parsers.model import ParsedRun
from mpistack.report.tables import print_csv
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.campaigns import start_campaign
from mpistack.store.query import campaign_summaries
from mpistack.store.query import OUTPUT_FIELDS, query_results, query_runs
from mpistack.store.writer import write_runs
from tests.analysis.synthetic import record_campaign

# no run of these stores recorded a transport: a column empty in every row is left out
RECORDED_COLUMNS = [column for column in RUN_COLUMNS if column != "transport"]

MESSAGE = "exit status 139: Segmentation fault in MPI_Init after the PMI handshake timed out on nid001 [/x]"
LONG_STACK = "lumi-cxi-ofi1220-mpich423"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Two campaigns of two launches each (latency natively with a long stack name, bw in a container) and one
    failed run with a long message and a tag a spreadsheet would read as a formula."""
    path = tmp_path_factory.mktemp("tables") / "tables.db"
    engine = open_database(str(path))
    record_campaign(engine, "baseline", stack=LONG_STACK, approach="native", launches=2)
    record_campaign(engine, "nightly-container", stack="cscs-openmpi5-lnx", approach="container", benchmark="bw",
                    launches=2)
    campaign_id = start_campaign(engine, "nightly", {})
    provenance = Provenance(stack="ompi-5", approach="apptainer", launcher="mpirun", ranks=2, nodes=2, command="x")
    with engine.begin() as connection:
        write_runs(connection, [ParsedRun.empty("latency")], campaign_id=campaign_id, provenance=provenance,
                   status=RunStatus.FAILED, message=MESSAGE, tags={"variant": "=HYPERLINK(1)", "case": "@c1"})
    engine.dispose()
    return path


class Terminal(io.StringIO):
    def isatty(self):
        return True


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def cell(value) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def listings(path):
    """(layout, records, display rows, every column) of each listing verb over the store."""
    engine = open_database(str(path), migrate=False)
    try:
        results = query_results(engine, limit=60)
        tags = sorted({key for row in results for key in row["tags"] if key not in OUTPUT_FIELDS})
        runs = query_runs(engine)
        summaries = campaign_summaries(engine)
    finally:
        engine.dispose()
    return {"results": (RESULTS_LAYOUT, results, results, [*OUTPUT_FIELDS, *tags]),
            "runs": (RUNS_LAYOUT, runs, run_lines(runs), RUN_COLUMNS),
            "campaigns": (CAMPAIGNS_LAYOUT, summaries, campaign_lines(summaries), CAMPAIGN_COLUMNS)}


def rendered(layout, records, rows, columns, width, **options) -> str:
    stream = Terminal()
    print_listing(layout, OutputFormat.table, records, rows, columns, stream=stream, width=width, **options)
    return plain(stream.getvalue())


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("verb", ["results", "runs", "campaigns"])
def test_a_terminal_table_fits_and_every_value_it_shows_is_whole(store, verb, width):
    layout, records, rows, columns = listings(store)[verb]
    text = rendered(layout, records, rows, columns, width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    header = next(line for line in lines if line.lstrip().startswith("run") or line.lstrip().startswith("camp"))
    shown = header.split()
    assert len(shown) >= 4, header  # the columns that matter, not one squeezed to a character
    for row in rows:
        for column in columns:
            value = row.get(column)
            if value in (None, "") or column in layout.fold:
                continue
            # shown whole in the table, said once below it (every row the same), or named as not shown
            assert (cell(value) in text) or re.search(rf"not shown:.*\b{column}\b", text), (column, value)
    if verb == "runs":
        assert MESSAGE.split()[-3] in text or "message" in text.split("not shown:")[-1]
        if "message" in shown:
            for word in MESSAGE.split():  # folded onto more lines, not cut
                assert word in text, word
    if verb == "campaigns":
        assert all(name in text for name in ("baseline", "nightly-container", "nightly"))


def test_at_80_columns_the_results_table_keeps_what_matters_and_says_what_it_leaves_out(store):
    layout, records, rows, columns = listings(store)["results"]
    text = rendered(layout, records, rows, columns, 80)
    header = next(line for line in text.splitlines() if "value" in line).split()
    assert header[:5] == ["run", "benchmark", "size", "value", "unit"] and "stack" in header
    assert LONG_STACK in text
    assert "every row: status ok" in text  # one value for every row: said once
    assert re.search(r"not shown: .*\bmpi\b.*\(--wide or --columns\)", text)


def test_wide_shows_every_column_unfolded_even_past_the_terminal(store):
    layout, records, rows, columns = listings(store)["runs"]
    text = rendered(layout, records, rows, columns, 80, wide=True)
    header = next(line for line in text.splitlines() if "status" in line).split()
    assert header == RECORDED_COLUMNS
    assert MESSAGE in text  # on one line
    assert "not shown" not in text


def test_columns_are_exactly_the_ones_named_in_their_order(store):
    layout, records, rows, columns = listings(store)["runs"]
    text = rendered(layout, records, rows, columns, 80, columns_option="message,run")
    header = next(line for line in text.splitlines() if "message" in line).split()
    assert header == ["message", "run"] and MESSAGE in text
    runner = CliRunner()
    result = runner.invoke(app, ["--db", str(store), "runs", "-f", "csv", "--columns", "status,run"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[:2] == ["status,run", "ok,1"]
    bad = runner.invoke(app, ["--db", str(store), "results", "--columns", "run,vlaue"])
    assert bad.exit_code == 2
    assert "no such column 'vlaue'" in bad.output and "known columns: run, benchmark, size" in bad.output


def test_piped_output_has_every_column_and_every_value_whole(store):
    result = CliRunner().invoke(app, ["--db", str(store), "runs"], env={"COLUMNS": None})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "# 5 run(s)" and lines[1].split() == [*RECORDED_COLUMNS, "case", "mpi", "origin"]  # tags last
    assert MESSAGE in result.stdout and LONG_STACK in result.stdout


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("verb", ["results", "runs", "campaigns"])
def test_piped_output_fits_the_width_columns_names(store, verb, width):
    """`COLUMNS=80 mpistack runs | cat`: the columns that fit, each value whole, plain text as piped output is."""
    layout, _records, rows, columns = listings(store)[verb]
    result = CliRunner().invoke(app, ["--db", str(store), verb], env={"COLUMNS": str(width)})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert lines[0].startswith("# ") and "\x1b" not in result.stdout
    header = lines[1].split()
    notes = " ".join(result.stdout.split("\n", len(rows) + 2)[-1].split())  # below the rows, unwrapped
    for row, line in zip(rows, lines[2:]):
        cells = line.split()
        for column in columns:
            value = row.get(column)
            if value in (None, ""):
                continue
            if column in header or SHORT_HEADERS.get(column) in header:
                assert cell(value) in cells or cell(value) in line, (column, value, line)  # no number cut
            else:  # said once below the table, or named as not shown
                assert f"{column} {cell(value)}" in notes or re.search(rf"not shown:.*\b{column}\b", notes), column
    if verb == "runs" and width == 80:
        assert "message" not in header and re.search(r"not shown:.*\bmessage\b", notes)


@pytest.mark.parametrize("verb", ["results", "runs"])
def test_a_listing_that_matches_nothing_says_so_in_one_line(store, verb):
    result = CliRunner().invoke(app, ["--db", str(store), verb, "-w", "stack=nothing"], env={"COLUMNS": "80"})
    assert result.exit_code == 0 and result.stdout == f"# 0 {verb[:-1]}(s)\n"  # no header row of nothing
    csv = CliRunner().invoke(app, ["--db", str(store), verb, "-w", "stack=nothing", "-f", "csv"])
    assert csv.stdout.startswith(("run,",)) and len(csv.stdout.splitlines()) == 1  # CSV keeps its header


def test_a_limited_listing_says_how_many_matched_in_all(store):
    runner = CliRunner()
    everything = json.loads(runner.invoke(app, ["--db", str(store), "results", "-f", "json"]).stdout)
    limited = runner.invoke(app, ["--db", str(store), "results", "--limit", "3", "-w", "size>=1024"])
    matching = sum(1 for row in everything if row["size"] is not None and row["size"] >= 1024)
    assert limited.exit_code == 0 and matching > 3
    assert limited.stdout.splitlines()[0] == f"# showing 3 of {matching:,} results"
    runs = runner.invoke(app, ["--db", str(store), "runs", "--limit", "2"])
    assert runs.stdout.splitlines()[0] == "# showing 2 of 5 runs"
    exact = runner.invoke(app, ["--db", str(store), "runs", "--limit", "5"])
    assert exact.stdout.splitlines()[0] == "# 5 run(s)"


@pytest.mark.parametrize("verb", ["results", "runs"])
def test_where_help_shows_how_to_quote_comparisons(verb):
    result = CliRunner().invoke(app, [verb, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "-w 'size>=1024'" in " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.stdout).split())


def test_results_on_a_missing_store_do_not_create_it(tmp_path):
    missing = tmp_path / "absent.db"
    result = CliRunner().invoke(app, ["--db", str(missing), "results"])
    assert result.exit_code == 2 and "no results store at" in result.output and not missing.exists()


def test_csv_cells_a_spreadsheet_would_run_get_a_quote_and_numbers_do_not(store):
    stream = io.StringIO()
    rows = [{"text": text, "number": number} for text, number in
            [("=1+2", -1.5), ("+cmd", 3), ("-x", -2), ("@SUM(A1)", 0.5), ("\tx", 1e-3), ("\rx", -7),
             ("-1.5", "-1.5"), ("plain", "+4e3"), ("-", 1)]]
    print_csv(rows, ["text", "number"], stream)
    parsed = list(csv.DictReader(io.StringIO(stream.getvalue(), newline="")))
    assert [row["text"] for row in parsed] == ["'=1+2", "'+cmd", "'-x", "'@SUM(A1)", "'\tx", "'\rx", "-1.5", "plain", "-"]
    assert [row["number"] for row in parsed] == ["-1.5", "3", "-2", "0.5", "0.001", "-7", "-1.5", "+4e3", "1"]
    result = CliRunner().invoke(app, ["--db", str(store), "runs", "-f", "csv", "-w", "status=failed"])
    (failed,) = list(csv.DictReader(io.StringIO(result.stdout)))
    assert failed["variant"] == "'=HYPERLINK(1)" and failed["message"] == MESSAGE
    results = CliRunner().invoke(app, ["--db", str(store), "results", "-f", "csv", "-w", "size=1"])
    assert "'@c1" not in results.stdout  # (the failed run has no results)
    json_rows = json.loads(CliRunner().invoke(app, ["--db", str(store), "runs", "-f", "json"]).stdout)
    assert json_rows[-1]["variant"] == "=HYPERLINK(1)"  # JSON is data, not a spreadsheet: unchanged


@pytest.mark.skipif(not shutil.which("script"), reason="needs script(1) for a pseudo-terminal")
def test_the_real_command_on_an_80_column_terminal(store):
    command = f"{sys.executable} -m mpistack --db {store} runs"
    result = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=120,
                            env={"COLUMNS": "80", "LINES": "50", "PATH": "/usr/bin:/bin", "TERM": "xterm"})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = plain(result.stdout).replace("\r", "").splitlines()
    assert lines and all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert "failed" in result.stdout and LONG_STACK in result.stdout and "Segmentation" in result.stdout
    # the count is one line above the table, however narrow the table
    narrow = subprocess.run(["script", "-qec", f"{command} --limit 2 -c run", "/dev/null"], capture_output=True,
                            text=True, timeout=120, env={"COLUMNS": "80", "LINES": "50", "PATH": "/usr/bin:/bin",
                                                          "TERM": "xterm"})
    assert plain(narrow.stdout).replace("\r", "").splitlines()[0] == "showing 2 of 5 runs"


def test_the_notes_under_a_terminal_table_fit_its_width_and_never_part_a_column_from_its_value():
    same = {"stack": "mpich4.3.1-ofi1.22-cuda12.8", "approach": "fabric-swap", "suite": "osu 7.5",
            "launcher": "srun", "buffers": "H-H", "status": "ok", "unit": "MB/s", "metric": "bandwidth"}
    rows = [{"run": 1, "benchmark": "bw", "size": size, "value": 1.5 * size, **same} for size in (1, 2, 4)]
    columns = ["run", "benchmark", "size", "value", "unit", "stack", "approach", "metric", "status", "launcher",
               "buffers", "suite"]
    text = rendered(RESULTS_LAYOUT, rows, rows, columns, 60)
    lines = text.splitlines()
    assert all(len(line) <= 60 for line in lines), max(lines, key=len)
    notes = " ".join(lines[lines.index(next(line for line in lines if line.startswith("every row:"))):])
    for column, value in same.items():  # whole, and beside its column
        assert f"{column} {value}" in notes or re.search(rf"not shown:.*\b{column}\b", notes), column


def test_a_tag_the_limited_rows_lack_is_still_a_column(store):
    every = CliRunner().invoke(app, ["--db", str(store), "results", "-f", "csv"]).stdout
    tags = [key for key in next(csv.reader(io.StringIO(every))) if key not in RESULTS_LAYOUT.priority]
    for tag in tags:
        result = CliRunner().invoke(app, ["--db", str(store), "results", "--limit", "1", "-c", f"run,{tag}"])
        assert result.exit_code == 0, (tag, result.output)
