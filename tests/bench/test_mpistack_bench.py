"""mpistack-bench: real runs under Debian's MPICH and Open MPI (2 and 4 ranks).

Each test launches the real binary (built with WERROR=1 by the session fixture) with small
sizes and counts so the whole file stays quick on 2 shared cores."""
from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from conftest import load_benchlib  # noqa: E402  (tests/bench/conftest.py)

lib = load_benchlib()
QUICK, QUICK_SIZES, TITLES, IDENTITY = lib.QUICK, lib.QUICK_SIZES, lib.TITLES, lib.IDENTITY
PT2PT, COLLECTIVES, TWO_RANKS_ONLY, BANDWIDTH = (lib.PT2PT, lib.COLLECTIVES, lib.TWO_RANKS_ONLY,
                                                 lib.BANDWIDTH)
parse_osu = lib.parse_osu

ALL_TESTS = PT2PT + COLLECTIVES
MPI_NAMES = ["mpich", "openmpi"]

# OSU 7.5 column headers, character for character (OSU's "%-10s" + "%18s" layout)
OSU_HEADERS = {
    "latency": "# Size       Avg Latency(us)",
    "bw": "# Size      Bandwidth (MB/s)",
    "bibw": "# Size      Bandwidth (MB/s)",
    "mbw_mr": "# Size                  MB/s        Messages/s",
    "multi_lat": "# Size       Avg Latency(us)",
    "barrier": "# Avg Latency(us)",
}
for _c in COLLECTIVES:
    OSU_HEADERS.setdefault(_c, "# Size       Avg Latency(us)")


def expected_ok(test: str, nranks: int) -> bool:
    return not (test in TWO_RANKS_ONLY and nranks != 2)


# ---------------------------------------------------------------------------
# every test, both MPIs, 2 and 4 ranks, -f: title, sizes, figures, Iterations
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("nranks", [2, 4])
@pytest.mark.parametrize("mpi", MPI_NAMES)
@pytest.mark.parametrize("test", ALL_TESTS)
def test_every_benchmark_runs(run_bench, mpi, nranks, test):
    res = run_bench(mpi, nranks, [test, "-f"] + QUICK)
    if not expected_ok(test, nranks):
        assert res.rc != 0
        assert "requires exactly two processes" in res.stderr
        assert res.stdout.strip() == ""
        return
    assert res.rc == 0, res.stderr
    blocks = parse_osu(res.stdout)
    assert len(blocks) == 1
    b = blocks[0]
    assert b.title == TITLES[test]
    assert b.identity == IDENTITY  # our identity where OSU prints its version
    if test == "barrier":
        assert b.columns == ["Avg Latency(us)", "Min Latency(us)", "Max Latency(us)",
                             "Iterations"]
        assert len(b.rows) == 1
        avg, mn, mx, iters = b.rows[0]
        assert float(avg) > 0 and float(mn) <= float(avg) <= float(mx)
        assert int(iters) == 20
        return
    assert "# Datatype: MPI_CHAR." in b.preamble
    sizes = [int(r[0]) for r in b.rows]
    assert sizes == QUICK_SIZES
    assert b.columns[-1] == "Iterations"
    for row in b.rows:
        assert int(row[-1]) == 20, row
        nfig = 2 if test == "mbw_mr" else 1
        # The OSU figures: positive, though a 1-byte bandwidth of 4 oversubscribed ranks may print 0.00
        assert all(float(x) >= 0 for x in row[1:1 + nfig]) and float(row[nfig]) > 0, row
        assert all(float(x) >= 0 for x in row[1 + nfig:-1]), row  # min/max (2 decimals)
    if test in BANDWIDTH:
        bw = {int(r[0]): float(r[1]) for r in b.rows}
        assert bw[4096] > bw[1], bw
    if test == "mbw_mr":
        assert b.columns[1:3] == ["MB/s", "Messages/s"]
        assert f"# [ pairs: {nranks // 2} ] [ window size: 64 ]" in b.preamble
        for r in b.rows:  # Messages/s = MB/s * 1e6 / size (two-decimal rounding)
            assert float(r[2]) == pytest.approx(float(r[1]) * 1e6 / int(r[0]), rel=0.02, abs=1e4)
    else:
        low, high = ("Min Latency(us)", "Max Latency(us)") if test not in BANDWIDTH else (
            "Min BW (MB/s)", "Max BW (MB/s)")
        assert b.columns[2:4] == [low, high]
        if test not in PT2PT:  # collectives: OSU's min/max over ranks of per-rank means
            for r in b.rows:
                assert float(r[2]) <= float(r[1]) + 0.01 and float(r[1]) <= float(r[3]) + 0.01


# ---------------------------------------------------------------------------
# default text: the layout of OSU 7.5 (no extra columns)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("test", ALL_TESTS)
def test_default_text_matches_osu_layout(run_bench, test):
    n = 2
    res = run_bench("mpich", n, [test] + QUICK)
    assert res.rc == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == ""
    assert lines[1] == f"# {TITLES[test]}{IDENTITY}"
    header = next(line for line in lines if line.startswith("# Size") or
                  line.startswith("# Avg Latency"))
    assert header == OSU_HEADERS[test]
    if test != "barrier":
        assert "# Datatype: MPI_CHAR." in lines
        rows = [line for line in lines if line and not line.startswith("#")]
        for row in rows:
            assert lib.ROW_RE.match(row), row
            assert len(row) == 10 + 18 * (2 if test == "mbw_mr" else 1)
        assert [int(r.split()[0]) for r in rows] == QUICK_SIZES
    else:
        assert "# Datatype: MPI_CHAR." not in lines  # OSU's barrier has no datatype line


def test_plain_max_message_size_like_osu(run_bench):
    res = run_bench("mpich", 2, ["latency", "-m", "64", "-i", "10", "-x", "1"])
    assert res.rc == 0, res.stderr
    assert [int(r[0]) for r in parse_osu(res.stdout)[0].rows] == [1, 2, 4, 8, 16, 32, 64]
    res = run_bench("mpich", 2, ["bw", "-m", "16:64", "-i", "5", "-x", "1"])
    assert [int(r[0]) for r in parse_osu(res.stdout)[0].rows] == [16, 32, 64]


# ---------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("mpi", MPI_NAMES)
@pytest.mark.parametrize("test", ["latency", "bw", "mbw_mr", "allreduce", "barrier",
                                  "reduce_scatter"])
def test_json_document_conforms_and_matches_text(run_bench, schema, tmp_path, mpi, test):
    out = tmp_path / "out.json"
    res = run_bench(mpi, 2, [test, "-c", "--json", out] + QUICK, use_cache=False)
    assert res.rc == 0, res.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema)
    assert doc["benchmark"] == test and doc["title"] == TITLES[test]
    assert doc["status"] == "ok"
    assert doc["mpi"]["ranks"] == 2 and len(doc["mpi"]["hosts"]) == 2
    assert ("MPICH" in doc["mpi"]["library_version"]) == (mpi == "mpich")
    assert doc["mpi"]["wtick"] > 0
    assert doc["options"]["iterations"] == 20 and doc["options"]["warmup"] == 2
    block = parse_osu(res.stdout)[0]
    assert len(doc["results"]) == len(block.rows)
    metric_names = [m["name"] for m in doc["metrics"]]
    for r, row in zip(doc["results"], block.rows):
        if test == "barrier":
            assert r["size"] is None
        else:
            assert r["size"] == int(row[0])
        assert r["iterations"] == 20 and r["warmup"] == 2
        # the figures are exactly those printed
        first = 0 if test == "barrier" else 1  # barrier rows have no size column
        for i, name in enumerate(metric_names):
            assert f"{r['values'][name]:.2f}" == row[first + i]
        st = r["stats"]
        assert st["samples"] == 20
        assert st["min"] <= st["ci95_low"] <= st["median"] <= st["ci95_high"] <= st["max"]
        assert st["min"] <= st["p90"] <= st["p99"] <= st["max"]
        assert r["validation"] == (None if test == "barrier" else "pass")
        if test in ("latency", "allreduce", "barrier", "reduce_scatter"):
            # the OSU figure (total time / iterations) is the mean of the per-iteration samples
            assert st["mean"] == pytest.approx(r["values"]["latency"], abs=0.006, rel=1e-6)


def test_format_json_on_stdout(run_bench, schema):
    res = run_bench("mpich", 2, ["--suite", "latency,barrier", "--format", "json", "-m", "1:8",
                                 "-i", "5", "-x", "1"])
    assert res.rc == 0, res.stderr
    docs = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    assert [d["benchmark"] for d in docs] == ["latency", "barrier"]
    for d in docs:
        jsonschema.validate(d, schema)
    assert "# OSU" not in res.stdout


def test_each_rank_says_its_kernels_boot_id(run_bench, schema, tmp_path):
    """Ranks with one boot id share one kernel whatever their host names (the nodes of a one-machine cluster):
    said on stderr before MPI_Init and kept in the JSON's confinement, as the transport parser reads it."""
    from mpistack.parsers.transport import confinement

    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    env = {**lib.bench_env(), "MPISTACK_CONFINEMENT": "1"}
    out = tmp_path / "boot.json"
    res = run_bench("mpich", 2, ["latency", "-m", "1:2", "-i", "3", "-x", "1", "--json", out], env=env)
    assert res.rc == 0, res.stderr
    assert res.stderr.count(f" boot={boot}") == 2
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema)
    assert [rank["boot_id"] for rank in doc["mpi"]["confinement"]] == [boot, boot]
    one_host = confinement(res.stderr)  # one host name: nothing to say of nodes sharing a kernel
    assert one_host["ns_separate"] == "none" and one_host["one_kernel"] == "none"


def test_json_survives_odd_environment(run_bench, schema, tmp_path):
    env = lib.bench_env()
    env["UCX_MPISTACK_ODD"] = 'quote" back\\slash\nnew\tline \x01 é ✓'
    env["FI_MPISTACK_BYTES"] = os.fsdecode(b"\xff\xfe latin \xe9")
    out = tmp_path / "odd.json"
    res = run_bench("mpich", 2, ["latency", "-m", "1:2", "-i", "3", "-x", "1", "--json", out],
                    env=env)
    assert res.rc == 0, res.stderr
    doc = json.loads(out.read_bytes().decode("utf-8"))
    jsonschema.validate(doc, schema)
    assert doc["environment"]["UCX_MPISTACK_ODD"] == env["UCX_MPISTACK_ODD"]
    assert "latin" in doc["environment"]["FI_MPISTACK_BYTES"]


# ---------------------------------------------------------------------------
# suite mode: one launch, the same blocks as separate launches
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("mpi", MPI_NAMES)
def test_suite_equals_separate_runs(run_bench, schema, tmp_path, mpi):
    tests = ["latency", "bw", "bibw", "allreduce", "alltoall"]
    args = ["-m", "1:1024", "-i", "10", "-x", "1"]
    out = tmp_path / "suite.json"
    suite = run_bench(mpi, 2, ["--suite", ",".join(tests), "--json", out] + args,
                      use_cache=False)
    assert suite.rc == 0, suite.stderr
    sblocks = parse_osu(suite.stdout)
    assert [b.title for b in sblocks] == [TITLES[t] for t in tests]
    separate = []
    for t in tests:
        res = run_bench(mpi, 2, [t] + args)
        assert res.rc == 0, res.stderr
        separate += parse_osu(res.stdout)
    for s, p in zip(sblocks, separate):
        assert (s.title, s.identity, s.preamble, s.columns) == (p.title, p.identity, p.preamble,
                                                                p.columns)
        assert [r[0] for r in s.rows] == [r[0] for r in p.rows]
    # the text is the concatenation of the blocks, line for line apart from the figures
    assert len(suite.stdout.splitlines()) == sum(
        len(run_bench(mpi, 2, [t] + args).stdout.splitlines()) for t in tests)
    # FILE holds every test of the suite: an array of documents, one per line
    docs = json.loads(out.read_text())
    assert [doc["benchmark"] for doc in docs] == tests
    assert len(out.read_text().splitlines()) == len(tests)
    for doc in docs:
        jsonschema.validate(doc, schema)
        assert doc["options"]["suite"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite.json"]


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("mpi", MPI_NAMES)
@pytest.mark.parametrize("nranks", [2, 4])
def test_validation_passes(run_bench, mpi, nranks):
    tests = [t for t in ALL_TESTS if t != "barrier" and expected_ok(t, nranks)]
    top = 4096 if nranks == 2 else 512  # 4 ranks on 2 cores: oversubscribed, slow
    res = run_bench(mpi, nranks, ["--suite", ",".join(tests), "-c", "-m", f"1:{top}", "-i", "5",
                                  "-x", "1"])
    assert res.rc == 0, res.stderr
    blocks = parse_osu(res.stdout)
    assert [b.title for b in blocks] == [TITLES[t] for t in tests]
    for b in blocks:
        assert b.columns[-1] == "Validation"
        assert [int(r[0]) for r in b.rows] == [x for x in QUICK_SIZES if x <= top]
        assert {r[-1] for r in b.rows} == {"Pass"}, b.title


@pytest.mark.parametrize("mpi", MPI_NAMES)
@pytest.mark.parametrize("test", ["latency", "bw", "bibw", "mbw_mr", "multi_lat", "bcast",
                                  "reduce", "allreduce", "gather", "scatter", "allgather",
                                  "alltoall", "reduce_scatter"])
def test_corrupt_build_reports_fail(run_bench, schema, tmp_path, mpi, test):
    out = tmp_path / "c.json"
    res = run_bench(mpi, 2, [test, "-c", "-m", "1:64", "-i", "3", "-x", "1", "--json", out],
                    corrupt=True, use_cache=False)
    assert res.rc != 0
    rows = parse_osu(res.stdout)[0].rows
    assert [r[-1] for r in rows] == ["Fail"] * 7
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema)
    assert doc["status"] == "validation-failed"
    assert {r["validation"] for r in doc["results"]} == {"fail"}
    assert doc["tool"]["build"]["corrupt"] is True


def test_corrupt_build_without_validation_is_fine(run_bench):
    res = run_bench("mpich", 2, ["latency", "-m", "1:8", "-i", "3", "-x", "1"], corrupt=True)
    assert res.rc == 0, res.stderr


# ---------------------------------------------------------------------------
# options and robustness
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("args,message", [
    (["nosuchtest"], "unknown test"),
    (["latency", "-m", "garbage"], "invalid message size"),
    (["latency", "-m", "8:2"], "invalid message size range"),
    (["latency", "-m", "1:x"], "invalid message size"),
    (["latency", "-i", "0"], "invalid number of iterations"),
    (["latency", "-x", "-3"], "invalid number of warm-up"),
    (["bw", "-W", "zero"], "invalid window size"),
    (["latency", "--bogus"], "unknown option"),
    (["latency", "-m"], "needs an argument"),
    (["latency", "--format", "xml"], "invalid format"),
    (["latency", "--stop", "ci:2"], "invalid stop rule"),
    (["--suite", "latency,nope"], "unknown test"),
    (["latency", "H"], "buffer placement"),
    (["latency", "H", "X"], "invalid buffer placement"),
    ([], "no test given"),
])
@pytest.mark.parametrize("mpi", MPI_NAMES)
def test_bad_options_give_usage_and_nonzero_exit(run_bench, mpi, args, message):
    res = run_bench(mpi, 2, args)
    assert res.rc != 0
    assert message in res.stderr
    assert "Usage: mpistack-bench" in res.stderr
    assert res.stderr.count("Usage: mpistack-bench TEST") == 1  # only rank 0 prints
    assert res.stdout.strip() == ""


@pytest.mark.parametrize("args", [["latency", "D", "D"], ["bw", "H", "M"], ["latency", "-d", "cuda"],
                                  ["allreduce", "-d", "cuda"]])
def test_device_buffers_without_cuda(run_bench, builds, args):
    binary = builds("mpich")
    if "MPISTACK_BENCH_CUDA" in (binary.parent / ".flags").read_text():
        pytest.skip("this build has CUDA support")
    res = run_bench("mpich", 2, args)
    assert res.rc != 0
    assert "built without CUDA support" in res.stderr
    assert res.stderr.count("built without CUDA support") == 1


@pytest.mark.parametrize("mpi", MPI_NAMES)
def test_wrong_rank_counts(run_bench, mpi):
    res = run_bench(mpi, 3, ["mbw_mr", "-m", "1:4", "-i", "2", "-x", "0"])
    assert res.rc != 0 and "even number of processes" in res.stderr
    res = run_bench(mpi, 3, ["multi_lat", "-m", "1:4", "-i", "2", "-x", "0"])
    assert res.rc != 0 and "even number of processes" in res.stderr
    res = run_bench(mpi, 4, ["bibw", "-m", "1:4", "-i", "2", "-x", "0"])
    assert res.rc != 0 and "requires exactly two processes" in res.stderr


def test_help_and_version(run_bench):
    res = run_bench("mpich", 2, ["--help"])
    assert res.rc == 0 and res.stdout.count("Usage: mpistack-bench") == 1
    res = run_bench("mpich", 2, ["-v"])
    assert res.rc == 0 and res.stdout.strip() == "mpistack-bench 0.1"


def test_openmpi_as_root_from_harness(run_bench):
    """The harness sets OMPI_ALLOW_RUN_AS_ROOT*, so Open MPI runs even as root."""
    res = run_bench("openmpi", 2, ["latency", "-m", "1:1", "-i", "5", "-x", "1"])
    assert res.rc == 0, res.stderr
    assert parse_osu(res.stdout)[0].rows[0][0] == "1"


# ---------------------------------------------------------------------------
# adaptive mode
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("mpi", MPI_NAMES)
@pytest.mark.parametrize("test", ["latency", "bw", "allreduce"])
def test_adaptive_mode_reports_iterations_run(run_bench, schema, tmp_path, mpi, test):
    out = tmp_path / "a.json"
    res = run_bench(mpi, 2, [test, "--stop", "ci:0.05", "--stop-min", "12", "--stop-max", "400",
                             "-m", "1:1024", "-x", "2", "-f", "--json", out], use_cache=False)
    assert res.rc == 0, res.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema)
    assert doc["options"]["stop"] == "ci:0.05"
    rows = parse_osu(res.stdout)[0].rows
    for r, row in zip(doc["results"], rows):
        assert 12 <= r["iterations"] <= 400
        assert r["stats"]["samples"] == r["iterations"] == int(row[-1])
        st = r["stats"]
        if r["iterations"] < 400:  # stopped early: the stop rule held
            assert st["ci95_low"] >= st["median"] * 0.95 - 1e-9
            assert st["ci95_high"] <= st["median"] * 1.05 + 1e-9
