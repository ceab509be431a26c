"""A case whose output is far larger than what the runner keeps in memory: every row is stored, the stored
message stays bounded, and the runner's memory stays a small multiple of the output."""

import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from mpistack.campaign.prepare import workdir_for
from mpistack.campaign.stages import MESSAGE_LIMIT
from mpistack.launchers.base import OUTPUT_CAP_BYTES
from mpistack.spec.campaign import load_campaign
from mpistack.store.address import store_identity
from tests.helpers import MPISTACK

MB = 1_000_000
needs_mpich = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")

# Rank 0 prints one OSU latency table whose rows come in sweeps of 23 sizes, each sweep followed by
# launcher-style noise (as MPI libraries print it into stdout), so the output is large but quick to parse;
# every rank prints stderr noise, and one line of rank 0's stdout holds a byte that is not UTF-8 (a library's
# message in another encoding). Arguments: sweeps, noise bytes per sweep, stderr bytes, exit status.
NOISE_LINE = "libfabric:4242:1700000000::ofi_rxm:av:warning that the benchmark table does not care about\n"
ROW_BYTES = 10 + 18 + 1  # f"{size:<10d}{latency:>18.2f}\n"
PROGRAM = textwrap.dedent('''
    import os, sys
    sweeps, noise, errors, status = map(int, sys.argv[1:])
    sizes = [2**power for power in range(23)]
    noise_line = %r
    if os.environ.get("PMI_RANK", "0") == "0":
        sys.stdout.write("# OSU MPI Latency Test v7.5\\n# Size          Latency (us)\\n")
        sys.stdout.flush()
        sys.stdout.buffer.write(b"hwloc: topologie \\xe9tendue\\n")  # Latin-1, not UTF-8
        sweep = "".join(f"{size:<10d}{1 + index * 0.25:>18.2f}\\n" for index, size in enumerate(sizes))
        between = noise_line * (noise // len(noise_line))
        for _ in range(sweeps):
            sys.stdout.write(sweep + between)
    if status:
        sys.stderr.write("first complaint: the benchmark was told to fail\\n")
    sys.stderr.write(noise_line * (errors // len(noise_line)))
    sys.stderr.write("last words of the benchmark\\n")
    sys.exit(status)
''') % NOISE_LINE
SWEEPS, NOISE_PER_SWEEP = 4000, 12_000  # about 50 MB of stdout, 92,000 rows


def _run_measured(argv: list[str], log) -> tuple[int, int]:
    """Run a command; its exit status and the peak resident set size of that process alone, in bytes.

    The kernel's figure for a waited-for child includes its own children's, and the runner starts MPI
    programs (the machine's bounds are measured by bandwidth tests with 64-message windows, hundreds of MB),
    so the runner's own high-water mark (VmHWM, which only grows) is read while it runs; the last reading
    is taken moments before it exits."""
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    peak = 0
    while process.poll() is None:
        try:
            with open(f"/proc/{process.pid}/status") as status:
                peak = max([peak] + [int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:")])
        except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):
            pass  # it exited between the poll and the read
        time.sleep(0.05)
    return process.returncode, peak


@needs_mpich
def test_a_huge_output_is_parsed_from_its_file_with_every_row_stored_in_bounded_memory(tmp_path):
    program = tmp_path / "loud_benchmark.py"
    program.write_text(PROGRAM)
    campaign = tmp_path / "loud.toml"
    campaign.write_text(f"""
name = "loud-{tmp_path.name}"
approaches = ["native"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[benchmark]]
name = "loud"
program = {json.dumps(sys.executable)}
options = [{json.dumps(str(program))}, "{SWEEPS}", "{NOISE_PER_SWEEP}", "{3 * MB}", "0"]
[[benchmark]]
name = "loud-failure"
program = {json.dumps(sys.executable)}
options = [{json.dumps(str(program))}, "10", "0", "{3 * MB}", "3"]
""")
    db = tmp_path / "r.db"
    try:
        with open(tmp_path / "run.log", "w+") as log:
            status, peak = _run_measured([*MPISTACK, "run", str(campaign), "--db", str(db)], log)
            log.seek(0)
            assert status == 0, log.read()
    finally:  # a campaign with a failed case keeps its work files (here: 50 MB of output) for inspection
        shutil.rmtree(workdir_for(load_campaign(campaign), store_identity(str(db)), 1), ignore_errors=True)
    output_size = SWEEPS * (23 * ROW_BYTES + NOISE_PER_SWEEP // len(NOISE_LINE) * len(NOISE_LINE))
    assert output_size > 40 * OUTPUT_CAP_BYTES  # far beyond what is kept in memory
    with sqlite3.connect(db) as connection:
        runs = connection.execute("SELECT id, status, message FROM runs ORDER BY id").fetchall()
        counts = dict(connection.execute("SELECT run_id, COUNT(*) FROM results GROUP BY run_id"))
    by_status = {run_status: (run_id, message) for run_id, run_status, message in runs}
    assert sorted(by_status) == ["failed", "ok"]
    ok_run, _ = by_status["ok"]
    assert counts[ok_run] == SWEEPS * 23  # every row of the 50 MB output, none lost to the cap
    failed_run, message = by_status["failed"]
    assert counts.get(failed_run) == 10 * 23  # a failed case's rows are kept too
    # the reason is the head of 3 MB of stderr, the tail its end; what is stored is bounded
    assert message.startswith("exit status 3: first complaint: the benchmark was told to fail")
    assert message.rstrip().endswith("last words of the benchmark")
    assert len(message) <= MESSAGE_LIMIT
    # the runner never holds the output whole: its own peak was 140 MB on a 2-core Debian 12 guest, where
    # holding the bytes and their text would add twice the output's 50 MB
    assert peak < output_size + 150 * MB, f"peak RSS {peak / MB:.0f} MB for {output_size / MB:.0f} MB of output"
