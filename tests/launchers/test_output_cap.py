"""What a launcher keeps in memory of a case's output: all of a small one, a bounded head and tail of a large
one, with the whole output in the case's `stdout` and `stderr` files, which the parse stage then reads."""

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mpistack.campaign.stages import parse
from mpistack.launchers.base import LaunchPlan, read_capped
from mpistack.launchers.local import LocalLauncher
from mpistack.launchers.batch import read_case

OSU_HEAD = "# OSU MPI Latency Test v7.5\n# Size          Latency (us)\n"
ROW = "1024                    2.50\n"


def test_a_small_output_is_kept_whole(tmp_path):
    path = tmp_path / "stdout"
    path.write_bytes(b"line one\nline two \xff\n")
    assert read_capped(path, cap=100) == ("line one\nline two \ufffd\n", False)
    assert read_capped(tmp_path / "missing") == ("", False)


def test_a_large_output_keeps_whole_lines_of_its_head_and_tail_and_says_where_it_was_cut(tmp_path):
    path = tmp_path / "stderr"
    lines = [f"line {number:05d}\n" for number in range(10_000)]  # 11 bytes each
    path.write_text("".join(lines))
    text, cut = read_capped(path, cap=1000)
    assert cut
    head, marker, tail = text.partition("[…")
    assert head == "".join(lines[:45])  # 495 bytes: the whole lines within the first 500
    assert tail.split("\n", 1)[1] == "".join(lines[-45:])
    left_out = 110_000 - 2 * 495
    assert f"{left_out:,} bytes of stderr cut here; the whole output is in {path}" in tail.split("\n", 1)[0]


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=3000), cap=st.integers(min_value=2, max_value=600))
def test_what_is_kept_is_bounded_and_its_ends_are_the_files_ends(tmp_path_factory, data, cap):
    path = tmp_path_factory.mktemp("cap") / "stdout"
    path.write_bytes(data)
    text, cut = read_capped(path, cap)
    assert cut == (len(data) > cap)
    if not cut:
        assert text == data.decode(errors="replace")
    else:
        kept = text.encode()
        marker_line = len(f"[… {len(data):,} bytes of stdout cut here; the whole output is in {path} …]\n".encode())
        assert len(kept) <= cap * 3 + marker_line  # at most cap bytes of output (replacement chars: 3 bytes each)
        head, _, rest = text.partition("[… ")
        assert data.decode(errors="replace").startswith(head)


def test_the_local_launcher_writes_the_outputs_to_the_case_directory_and_keeps_a_bounded_part(tmp_path):
    script = ("import sys\n"
              f"sys.stdout.write({OSU_HEAD!r} + {ROW!r} * 100_000)\n"
              "sys.stderr.write('first words\\n' + 'noise\\n' * 400_000 + 'last words\\n')\n")
    plan = LaunchPlan(argv=[sys.executable, "-c", script], env={}, output=None, label="mpistack-cap")
    execution = LocalLauncher(cgroups=False, output_dir=tmp_path).execute(plan, timeout=60)
    assert execution.exit_code == 0
    assert execution.stdout_file == tmp_path / "mpistack-cap" / "stdout"
    assert execution.stdout_file.stat().st_size == len(OSU_HEAD) + 100_000 * len(ROW)  # nothing lost
    assert execution.stdout_cut and execution.stderr_cut
    assert len(execution.stdout) < 1.1 * (1 << 20) and len(execution.stderr) < 1.1 * (1 << 20)
    assert execution.stderr.startswith("first words\n") and execution.stderr.endswith("noise\nlast words\n")
    parsed = parse(plan, execution)  # from the file: every row, though the text in memory is cut
    assert parsed.problem is None and len(parsed.runs[0].rows) == 100_000


def test_a_small_output_keeps_todays_path_and_a_cut_one_is_read_from_its_file(tmp_path):
    plan = LaunchPlan(argv=[sys.executable, "-c", f"print({OSU_HEAD + ROW * 3!r})"], env={}, output=None)
    small = LocalLauncher(cgroups=False, output_dir=tmp_path).execute(plan, timeout=60)
    assert not small.stdout_cut and small.stdout == OSU_HEAD + ROW * 3 + "\n"
    assert len(parse(plan, small).runs[0].rows) == 3


def test_a_slurm_case_is_read_with_the_same_cap(tmp_path):
    directory = Path(tmp_path)
    (directory / "started").write_text("7 0 1700000000.0 debug node1\n")
    (directory / "stdout").write_text(OSU_HEAD + ROW * 60_000)  # 1.7 MB
    (directory / "stderr").write_text("oops\n")
    (directory / "exit").write_text("0 1700000010.0\n")
    execution = read_case(directory, {}, 60).execution
    assert execution.stdout_cut and not execution.stderr_cut and execution.stderr == "oops\n"
    assert execution.stdout_file == directory / "stdout" and len(execution.stdout) <= (1 << 20) + 300  # + the marker
    assert len(parse(LaunchPlan(argv=["x"], env={}, output=None), execution).runs[0].rows) == 60_000
