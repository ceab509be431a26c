"""The messages kept from among an output's noise (parsers.launcher_messages.MessageLines, parsers.parse_output):
warnings and errors and Open MPI's framed help texts, each rank's copy once, escaped, bounded however long the
output; table rows never."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mpistack.parsers import MessageLines, parse_output
from mpistack.parsers.launcher_messages import FRAME_CHARS, LINE_CHARS, MESSAGE_CHARS, escaped


def collected(text: str) -> MessageLines:
    messages = MessageLines()
    for line in text.splitlines(keepends=True):
        messages.feed(line)
    return messages.close()


def test_each_ranks_copy_is_kept_once_and_counted():
    text = "".join(f"[nid{n:04d}:{1000 + n}] UNPACK-PMIX-VALUE: UNSUPPORTED TYPE 104\n" for n in range(64))
    messages = collected(text)
    assert messages.messages == ["[nid0000:1000] UNPACK-PMIX-VALUE: UNSUPPORTED TYPE 104"]
    assert (messages.found, messages.repeats) == (64, 63)


def test_a_help_frame_is_one_message_and_rank_labels_are_dropped():
    frame = ["-" * 74, 'The application appears to have been direct launched using "srun",',
             "but OMPI was not built with SLURM's PMI support and therefore cannot", "execute.", "-" * 74]
    messages = collected("".join(f"0: {line}\n" for line in frame))
    assert messages.messages == [" ".join(frame[1:4])]


def test_a_help_text_pasted_without_its_dashes_is_read_whole_to_the_next_message():
    # its parts (the sentences, the 'Host:' lines, the indented details) are separated by blank lines; the first
    # line after a blank one that is none of them starts something else
    text = ("A requested component was not found, or was unable to be opened.  This\n"
            "means that this component is either not installed or is unable to be\n\n"
            "Host:      n1\nFramework: psec\nComponent: munge\n\n"
            "It looks like pmix_init failed for some reason; your parallel process is\n"
            "likely to abort.\n\n  pmix_psec_base_open failed\n  --> Returned value -46 instead of PMIX_SUCCESS\n\n"
            "[n1:12255] PMIX ERROR: NOT-FOUND in file server/pmix_server.c at line 229\n"
            "0: It looks like MPI_INIT failed for some reason; your parallel process is\n"
            "0:   ompi_mpi_init: ompi_rte_init failed\n")
    assert collected(text).messages == [
        "A requested component was not found, or was unable to be opened.  This means that this component is either "
        "not installed or is unable to be Host:      n1 Framework: psec Component: munge",
        "It looks like pmix_init failed for some reason; your parallel process is likely to abort. "
        "pmix_psec_base_open failed --> Returned value -46 instead of PMIX_SUCCESS",
        "[n1:12255] PMIX ERROR: NOT-FOUND in file server/pmix_server.c at line 229",
        "It looks like MPI_INIT failed for some reason; your parallel process is ompi_mpi_init: ompi_rte_init failed"]


def test_what_a_library_logs_below_its_warning_level_is_not_a_message():
    # libfabric's FI_LOG_LEVEL=debug search for optional providers (ofiwg/libfabric issue 10001), UCX's info
    text = ("libfabric:60833:1713994966::core:core:ofi_reg_dl_prov():610<debug> dlopen(librxd-fi.so): librxd-fi.so: "
            "cannot open shared object file: No such file or directory\n"
            "[1716920651.160162] [gpu2:2554579:a]  tcp_ep.c:259  UCX  DEBUG tcp_ep 0x55b1aeee77f0: connect failed\n"
            "libfabric:2211:1788291020::efa:ep_data:efa_device_construct_gid():47<warn> ibv_open_device failed! "
            "errno: 2\n")
    assert collected(text).messages == [text.splitlines()[2]]


def test_table_rows_and_headers_are_not_messages_though_fail_is_a_word_of_one():
    messages = collected("# OSU MPI Bandwidth Test v7.5\n# Size  Bandwidth (MB/s)  Validation\n"
                         "1   0.14   Fail\n2   0.28   Pass\nDATA VALIDATION ERROR: rank 1, message size 1\n")
    assert messages.messages == ["DATA VALIDATION ERROR: rank 1, message size 1"]


def test_a_coloured_message_is_kept():
    assert collected("\x1b[1;31mERROR\x1b[0m: cannot attach\n").messages == ["ERROR: cannot attach"]


def test_control_characters_and_colours_are_escaped_and_long_lines_cut():
    assert escaped("\x1b[31mERROR\x1b[0m bad\x07 byte\n") == "ERROR bad\\x07 byte"
    assert len(escaped("error " + "x" * 10_000)) == LINE_CHARS


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=200), min_size=1, max_size=400))
def test_whatever_is_fed_the_kept_text_stays_bounded(lines):
    messages = collected("".join(f"error {index}: {line}\n".replace("\r", " ") for index, line in enumerate(lines)))
    assert len(messages.text()) <= MESSAGE_CHARS + FRAME_CHARS + 60
    assert "\x00" not in messages.text()


def test_a_long_log_keeps_its_first_and_last_messages():
    text = "".join(f"error {word}\n" for word in (f"w{chr(97 + i % 26)}{'z' * (i // 26)}" for i in range(5000)))
    messages = collected(text)
    assert messages.messages[0] == "error wa" and messages.messages[-1].startswith("error w")
    assert messages.dropped > 0 and "message(s) left out" in messages.text()


def test_an_output_of_messages_and_no_table_is_one_failed_run_carrying_them(tmp_path):
    path = tmp_path / "out"
    path.write_text("$ srun -n 2 ./osu_bibw\n./osu_bibw: error while loading shared libraries: libmpi.so.40: "
                    "cannot open shared object file: No such file or directory\n")
    (run,) = parse_output(path)
    assert (run.benchmark, run.status.value) == ("bibw", "failed")
    assert run.messages == ["./osu_bibw: error while loading shared libraries: libmpi.so.40: cannot open shared "
                            "object file: No such file or directory"]
