"""Launchers' abort blocks inside OSU output: the complete rows before them are kept, a failed size is marked,
the run is validation-failed (after a DATA VALIDATION ERROR) or failed; never a rejected file."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpistack.parsers import parse_text

from . import osu_samples as s
from .launcher_samples import ABORT_BLOCKS, LATENCY_VALIDATION_FAILED

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def only(text):
    (run,) = parse_text(text, "job.out")
    return run


@pytest.mark.parametrize("launcher", sorted(ABORT_BLOCKS))
def test_abort_after_a_validation_error_keeps_the_rows_and_fails_validation(launcher):
    run = only(LATENCY_VALIDATION_FAILED + ABORT_BLOCKS[launcher])
    assert [(row.size, row.validation) for row in run.rows] == [(1, "pass"), (2, "pass"), (4, "pass"), (8, "fail")]
    assert run.status == "validation-failed" and not run.incomplete and run.aborted
    assert any("DATA VALIDATION ERROR" in message for message in run.messages)


def test_the_size_named_by_the_validation_error_is_marked_failed():
    """OSU without a Validation column (or a row lost with the job): the error line names the size."""
    text = s.LATENCY_5 + "DATA VALIDATION ERROR: osu_latency exited with status 1 on message size 2.\n"
    run = only(text + ABORT_BLOCKS["openmpi"])
    assert [row.validation for row in run.rows] == [None, None, "fail", None]
    assert run.status == "validation-failed"
    missing = only(s.LATENCY_5 + "DATA VALIDATION ERROR: osu_latency exited with status 1 on message size 8.\n")
    assert "message size 8 failed validation before its row was printed" in missing.messages


@pytest.mark.parametrize("launcher, said", [
    ("openmpi", ["Primary job  terminated normally, but 1 process returned", "Process name: [[41345,1],0]",
                 "Exit code:    1"]),
    ("mpich", ["=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "=   PID 92248 RUNNING AT fzh-desktop",
               "=   EXIT CODE: 9"]),
    ("srun", ["srun: error: r10i0n8: task 3: Exited with exit code 255", "srun: error: r10i0n8: tasks 0-2: Terminated"]),
])
def test_an_abort_without_validation_error_fails_the_run_with_the_launchers_words(launcher, said):
    cut = s.BW_5.rstrip("\n").rsplit("\n", 1)[0] + "\n"  # the job died before its last size
    run = only(cut + ABORT_BLOCKS[launcher])
    assert [row.size for row in run.rows] == [1, 2]
    assert run.status == "failed" and run.aborted
    for words in said:
        assert words in run.messages


def test_an_abort_belongs_to_the_test_it_interrupts():
    runs = parse_text(s.LATENCY_5 + s.BW_5 + ABORT_BLOCKS["mpich"], "two.out")
    assert [(run.benchmark, run.status) for run in runs] == [("latency", "ok"), ("bw", "failed")]


def test_shell_trace_lines_are_not_rows():
    run = only("+ srun -n 2 -N 2 ./osu_bw\n" + s.BW_5 + "+ echo done\n--- job.err ---\n")
    assert (run.provenance.ranks, run.provenance.nodes, run.provenance.launcher) == (2, 2, "srun")
    assert len(run.rows) == 3 and run.status == "ok"


@PROPERTY_SETTINGS
@given(st.sampled_from(s.ALL_SAMPLES), st.sampled_from(sorted(ABORT_BLOCKS)), st.data())
def test_abort_lines_interleaved_anywhere_after_the_header_leave_the_rows(sample, launcher, data):
    """stdout and stderr reach a log in any order: the launcher's lines may fall between any two rows."""
    lines = sample.splitlines(keepends=True)
    header = next(index for index, line in enumerate(lines) if line.startswith("# Size") or
                  (line.startswith("# ") and "Latency" in line and "Test" not in line))
    noise = ABORT_BLOCKS[launcher].splitlines(keepends=True)
    positions = sorted(data.draw(st.lists(st.integers(header + 1, len(lines)), min_size=len(noise),
                                          max_size=len(noise))), reverse=True)
    mixed = list(lines)
    for position, line in zip(positions, reversed(noise)):
        mixed.insert(position, line)
    clean = only(sample)
    run = only("".join(mixed))
    figures = [(row.size, row.values, row.stats, row.validation) for row in run.rows]
    assert figures == [(row.size, row.values, row.stats, row.validation) for row in clean.rows]
    assert run.aborted and run.status in ("failed", "validation-failed")
