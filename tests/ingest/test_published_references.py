"""Every OSU block in the source documents ingests to exactly the published numbers.

The expected numbers are read from the seeds here with a deliberately simple, independent reader (rows
of a code block under a title; cells of a Markdown table), not with mpistack's parsers.
"""

import re

import pytest

from mpistack.ingest import published as references
from mpistack.parsers import parse_file
from mpistack.store import open_database
from mpistack.store.query import Where, query_results
from mpistack.ingest.published import replace_reference

ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)(?:\s+(Pass|Fail))?\s*$")


def osu_blocks(text):
    """[(title, [(size, value)])] for every '# OSU' title followed by rows, in order."""
    blocks = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# OSU"):
            blocks.append((stripped, []))
        elif stripped.startswith("```"):
            continue
        elif blocks and (match := ROW.match(line)):
            blocks[-1][1].append((int(match.group(1)), float(match.group(2))))
    return blocks


def markdown_columns(text):
    """[(title, column, [(size, value)])] for every OSU Markdown table, one entry per figure column."""
    tables = []
    rows = []
    for line in text.splitlines() + [""]:
        if line.strip().startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            continue
        if rows and "OSU" in rows[0][0]:
            names = next(row for row in rows if "Host to Host" in row)
            data = [row for row in rows if row[0].isdigit()]
            for index, name in enumerate(names[1:], start=1):
                tables.append((rows[0][0], name, [(int(row[0]), float(row[index])) for row in data]))
        rows = []
    return tables


SEEDS_WITH_OSU_TEXT = {"000_c9bb2189e12c7a7a.txt": 14, "001_e96b3787c086f081.txt": 4, "004_e5439d3c6caa6c51.txt": 10}


@pytest.mark.parametrize("seed, count", sorted(SEEDS_WITH_OSU_TEXT.items()))
def test_osu_text_blocks_parse_to_the_published_numbers(seeds, seed, count):
    expected = osu_blocks((seeds / seed).read_text())
    assert len(expected) == count
    runs = parse_file(seeds / seed)
    assert len(runs) == count
    for (title, rows), run in zip(expected, runs):
        assert title.startswith(f"# {run.title}")
        assert [(row.size, next(iter(row.values.values()))) for row in run.rows] == rows


def test_markdown_tables_parse_to_the_published_numbers(seeds):
    seed = seeds / "002_b77bdc9bb1d28229.txt"
    expected = markdown_columns(seed.read_text())
    assert len(expected) == 50  # 10 tables x (4 buffer placements + RCCL)
    runs = parse_file(seed)
    assert [(run.tags["column"], [(row.size, next(iter(row.values.values()))) for row in run.rows]) for run in runs] \
        == [(column, rows) for _title, column, rows in expected]


def test_shipped_references_are_the_seeds(seeds):
    """The shipped references hold verbatim slices: together they carry every block of every seed."""
    shipped = [run for loaded in references.available().values() for path, _tags in loaded.files()
               for run in parse_file(path)]
    from_seeds = [run for seed in sorted(SEEDS_WITH_OSU_TEXT) + ["002_b77bdc9bb1d28229.txt"]
                  for run in parse_file(seeds / seed)]

    def key(run):
        return (run.title, run.tags.get("column", ""), tuple((row.size, tuple(row.values.items())) for row in run.rows))

    assert sorted(map(key, shipped)) == sorted(map(key, from_seeds))


def test_reference_ingest_stores_exact_numbers_and_is_idempotent(tmp_path, seeds):
    engine = open_database(str(tmp_path / "refs.db"))
    for loaded in references.select(["all"]):
        assert not replace_reference(engine, loaded).errors
    first = query_results(engine)
    replace_reference(engine, references.select(["alps-gh200-mpich-ce"])[0])
    assert len(query_results(engine)) == len(first)
    # The CSCS MPICH image, CXI hook on, inter-node host bandwidth at 4 MiB (CSCS docs "MPICH image").
    rows = query_results(engine, [Where.parse(text) for text in (
        "reference=alps-gh200-mpich-ce", "cxi_hook=on", "benchmark=bw", "size=4194304", "buffers=H-H", "nodes=2")])
    assert [row["value"] for row in rows] == [24007.69]
    # LUMI native latency at 1 byte, host to host (the LUMI container-approaches pipeline document).
    rows = query_results(engine, [Where.parse(text) for text in (
        "system=lumi-g", "approach=native", "benchmark=latency", "size=1", "buffers=H-H")])
    assert [row["value"] for row in rows] == [2.30]
