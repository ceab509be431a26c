"""What launchers print when a job ends abnormally, recognised line by line inside benchmark output.

Open MPI's mpirun ('Primary job  terminated normally, but 1 process returned a non-zero exit code. Per
user-direction, the job has been aborted.' then 'mpirun detected that one or more processes exited with
non-zero status ...', 'Process name: [[41345,1],0]', 'Exit code:    1', between lines of dashes), MPICH's
Hydra ('=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES', '=   PID 1234 RUNNING AT host',
'=   EXIT CODE: 9', between lines of '='), and Slurm's srun ('srun: error: node1: task 0: Exited with exit
code 1'). Such a block is noise to the table around it: the rows before it are kept and the run is marked
as ended abnormally, with the launcher's own words as its message.
"""

from __future__ import annotations

import re

# The lines that say the job ended abnormally: each is kept (stripped) as a message of the run.
_ABORT_PATTERNS = [
    re.compile(r"^Primary job\s+terminated normally, but \d+ process(?:es)? returned", re.IGNORECASE),
    re.compile(r"^(?:mpirun|mpiexec|prterun) (?:detected that one or more processes exited with non-zero status"
               r"|noticed that process rank \d+ .* exited on signal)", re.IGNORECASE),
    re.compile(r"^=\s+BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", re.IGNORECASE),
    # mpirun's count of the ranks it ended after one died
    re.compile(r"^\d+ total process(?:es)? killed \(some possibly by mpirun during cleanup\)", re.IGNORECASE),
    re.compile(r"^srun: error: .*(?:Exited with exit code \d+|Killed|Terminated|Segmentation fault|Aborted"
               r"|Bus error|Floating point exception)", re.IGNORECASE),
]
# Lines inside those blocks that add detail (which process, which exit code).
_DETAIL_PATTERNS = [
    re.compile(r"^Process name:\s*\S+", re.IGNORECASE),
    re.compile(r"^Exit code:\s*-?\d+", re.IGNORECASE),
    re.compile(r"^=\s+(?:PID \d+ RUNNING AT \S+|EXIT CODE: -?\d+)", re.IGNORECASE),
]
MAX_MESSAGES = 12  # srun prints one line per failed task: keep the first few


# What an MPI library prints whenever MPI_Init (or a call) fails, whatever the cause: Open MPI's `*** An error
# occurred in MPI_Init ...` block and its 'It looks like MPI_INIT failed' frame, MPI_ABORT's frame, MPICH's
# `Fatal error in PMPI_Init: Other MPI error, error stack:`, the stack's first line restating the call and its last
# relaying UCX's status, PyTorch's report of an NCCL error; a crashed rank's signal and backtrace. They say that the
# job failed, and where, not why.
_GENERIC_FAILURE = re.compile(
    r"^(?:\[[^\]]*\]\s*)*(?:\*\*\* (?:An error occurred in \w+|on a NULL communicator|reported by process|"
    r"on communicator|MPI_ERRORS_ARE_FATAL|\s*and potentially your MPI job|Unknown error|MPI_ERR_\w+)|"
    r"Local abort (?:before|after) MPI_INIT completed|(?:Abort\(-?\d+\)[^:]*: )?Fatal error in \w+: [^:]*error stack|"
    r"\w+\(\d+\)\.*: MPI_\w+\(.*\) failed$|MPI_ABORT was invoked on rank|"
    r"It looks like (?:MPI_INIT|MPI_Init_thread|orte_init|opal_init|ompi_mpi_init) failed for some reason|"
    r"\w+\(\d+\)\.*:\s+ucx function returned with failed status|"  # MPICH relaying UCX's status code
    r"\S*DistBackendError: NCCL error in: |ncclSystemError: |Last error:$|"  # PyTorch relaying NCCL's
    r"srun: error: MPI: Unable to load any plugin|"  # srun after its MPI plug-in failed
    r"Caught signal \d+|Signal: |Signal code: |Failing at address|\[\s*\d+\] \S+\(|\*\*\* End of error message)")


def generic_failure(line: str) -> bool:
    """True for an MPI library's words that a call failed which say nothing of why (its abort banners)."""
    return bool(_GENERIC_FAILURE.match(line))


def abort_line(line: str) -> bool:
    """True for a line that says the job was aborted or a process ended abnormally."""
    return any(pattern.match(line) for pattern in _ABORT_PATTERNS)


def detail_line(line: str) -> bool:
    """True for a line that details an abort (process name, PID, exit code)."""
    return any(pattern.match(line) for pattern in _DETAIL_PATTERNS)


# What a library or launcher prints when something is wrong, kept from among the noise of an output so that the
# doctor can read it (stored with an ingested run as a launched case's output is). A line that looks like a
# message: one of these words in it.
_MESSAGE_WORDS = re.compile(
    r"\b(?:errors?|errno|warn(?:ing)?|fatal|abort(?:ed|ing)?|fail(?:ed|s|ure)?|denied|cannot|can not|can't|unable|"
    r"not available|not found|no such|not permitted|segmentation|bus error|signal \d+|killed|unexpected|"
    r"undefined symbol|out of memory|out-of-resource|mismatch|unsupported|refused|timed out|(?:un)?reachable|invalid|"
    # words of known messages printed on a line of their own, outside a help frame: libfabric's `fi_getinfo: -61
    # (No data available)`, Open MPI's aggregated `N more processes have sent help message ...`, srun's `Job step
    # creation temporarily disabled, retrying`, a crash's `Failing at address`, an application's own signal handler (`Caught SIGBUS`)
    r"no data available|help message|retrying|failing at address|sig(?:bus|segv|abrt)|"
    # and the words of launchers' and PMIs' complaints with none of those: Open MPI's `not enough slots`, a path
    # that `could not be found`, `received different version`, Cray PMI's `_pmi_alps_init returned -1` and `alps
    # response not OKAY`, and a program's own `comm size: 1` (every rank alone)
    r"not enough slots|could not be found|different version|returned -\d+|not okay|"
    r"comm size:? 1)\b",
    re.IGNORECASE)
# Open MPI's help texts (show_help) are framed by lines of dashes; a frame is kept whole, as one message on one line,
# since its sentences run over several lines
_FRAME = re.compile(r"^-{20,}\s*$")
# the same texts pasted without their dashes (a mail, an issue thread): one that opens with a first sentence of
# theirs runs on to the first blank line after which neither its indented details nor its 'Host: name' lines follow
_HELP_OPENER = re.compile(r"^(?:A requested component was not found, or was unable to be opened|"
                          r"It looks like \w+ failed for some reason|No components were able to be opened in the \w+ framework)")
_HELP_DETAIL = re.compile(r"^(?:\s+\S|[A-Z][\w ]{0,30}:\s+\S)")
# what launchers put before each line of a rank's output: srun --label ('0: '), mpirun --tag-output
# ('[1,0]<stderr>:'); a labelled empty line of a help frame is the label alone ('0:')
_RANK_LABEL = re.compile(r"^(?:\d{1,7}:(?:\s|$)|\[\d+,\d+\]<(?:stdout|stderr)>:\s?)")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# a row of a benchmark's table (a size, figures, Pass or Fail): never a message, though 'Fail' is a message's word
# a frame of the backtrace Open MPI prints for a crashed rank (`[host:1234] [ 1] /lib/libmpi.so.40(symbol+0x7e)[0x7f..]`):
# it names the function that crashed
_BACKTRACE = re.compile(r"\[\s*\d+\] \S+\(\w+\+0x[0-9a-f]+\)")
# a line libfabric or UCX logged at a level below a warning (FI_LOG_LEVEL=debug, UCX_LOG_LEVEL=info): its words
# (dlopen of an optional provider 'cannot open shared object file') describe a search, not a failure
_BELOW_WARNING = re.compile(r"^libfabric:\S*<(?:debug|trace|info)>|\bUCX\s+(?:DEBUG|TRACE|INFO|DIAG)\b")
_TABLE_ROW = re.compile(r"^\d+(?:\s+(?:[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?|pass|fail))+$", re.IGNORECASE)
_NUMBERS = re.compile(r"\d+")
_OSU_TEST = re.compile(r"\bosu_([a-z_]+)\b")
MESSAGE_CHARS = 4000  # characters of an output's messages kept (as many as a launched case keeps of its output)
LINE_CHARS = 400  # one message line at most (a line beyond it is cut)
FRAME_LINES = 40  # lines of one help frame at most
FRAME_CHARS = 1200  # characters of one help frame at most, its lines joined


def escaped(line: str) -> str:
    """A line of output as it is kept: without its line end, colour codes and rank label, other control
    characters written as \\xNN (nothing a terminal or a database would act on), at most LINE_CHARS long."""
    line = _ANSI.sub("", line.rstrip("\r\n"))
    line = _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", line)
    line = _RANK_LABEL.sub("", line.strip()).strip()
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"


def looks_like_message(line: str) -> bool:
    """True for a line that reads like a warning or an error (a word such as error, warning, failed, denied), and
    not one a library logged below its warning level."""
    return bool(_MESSAGE_WORDS.search(line) or _BACKTRACE.search(line)) and not _TABLE_ROW.match(line) \
        and not _BELOW_WARNING.search(line)


def _continues(before: str, line: str) -> bool:
    """True when ``line`` goes on with the sentence ``before`` left open (no full stop, a word in lower case)."""
    return not before.rstrip().endswith((".", "!", "?", ":")) and line[:1].islower()


class MessageLines:
    """The messages in an output read line by line (``feed``): lines that look like warnings or errors, and Open
    MPI's framed help texts whole. Bounded: the same line printed by every rank (numbers aside: pids, ranks,
    hosts' numbers) is kept once and counted, and about MESSAGE_CHARS are kept (one frame more at most), the
    first three quarters and the last quarter of what was seen (the cause is usually said first, the abort
    last)."""

    def __init__(self, limit: int = MESSAGE_CHARS):
        self.limit = limit
        self.head: list[str] = []
        self.tail: list[str] = []
        self.head_chars = 0
        self.tail_chars = 0
        self.found = 0  # messages seen, repeats included
        self.repeats = 0  # messages seen again (same text but for numbers)
        self.dropped = 0  # messages not kept for the bound
        self._keys: set[str] = set()
        self._frame: list[str] | None = None
        self._loose: list[str] | None = None  # a help text without its dashes, and whether a blank line ended a part
        self._loose_blank = False
        self._loose_double = False  # the text pasted with a blank line under each of its lines
        self.test: str | None = None  # the first OSU test a line names ('$ srun ./osu_bw'), without osu_

    def feed(self, raw: str) -> None:
        if self._loose is not None and self._loose_line(raw):
            return
        # most lines of an output are a table's rows: outside a frame, a line without a message's word, a frame's
        # dashes or a test's name is passed over before it is cleaned
        if self._frame is None and not _MESSAGE_WORDS.search(raw) and "--" not in raw and "osu_" not in raw \
                and "\x1b" not in raw and "+0x" not in raw:  # (a colour code may hide a word's start)
            return
        line = escaped(raw)
        if self.test is None and "osu_" in line and (named := _OSU_TEST.search(line)):
            self.test = named.group(1)
        if _FRAME.match(line):
            if self._frame is None:
                self._frame = []
            else:
                frame, self._frame = self._frame, None
                self._keep_frame(frame)
            return
        if self._frame is None and _HELP_OPENER.match(line):
            self._loose, self._loose_blank, self._loose_double = [line], False, False
            return
        if self._frame is not None:
            if line and len(self._frame) < FRAME_LINES:
                self._frame.append(line)
            elif len(self._frame) >= FRAME_LINES:  # a frame never closed: what it held is kept, line by line
                frame, self._frame = self._frame, None
                for held in frame:
                    self._line(held)
                self._line(line)
            return
        self._line(line)

    def _loose_line(self, raw: str) -> bool:
        """Adds a line to the help text without dashes being read; False when the text ended before it."""
        line = _ANSI.sub("", raw.rstrip("\r\n"))
        label = _RANK_LABEL.match(line.lstrip())
        unlabelled = line.lstrip()[label.end():] if label else line  # its indent kept: a detail's mark
        if not unlabelled.strip():
            self._loose_blank = True
            return True
        if self._loose_blank and not self._loose_double and _continues(self._loose[-1], unlabelled):
            self._loose_double = True  # a sentence goes on after the blank: a paste with a blank under every line
        if self._loose_double:
            # its blank lines say nothing: the text ends at another help text, a line of a log ('[host:pid] ...')
            # or a new sentence after one that ended
            ended = _FRAME.match(unlabelled.strip()) or len(self._loose) >= FRAME_LINES \
                or _HELP_OPENER.match(unlabelled) or unlabelled.startswith("[") \
                or (self._loose[-1].endswith((".", "!", "?")) and not _HELP_DETAIL.match(unlabelled)
                    and not unlabelled[:1].islower())
        else:
            ended = _FRAME.match(unlabelled.strip()) or len(self._loose) >= FRAME_LINES \
                or (self._loose_blank and not _HELP_DETAIL.match(unlabelled))
        if ended:
            text, self._loose = self._loose, None
            self._keep_frame(text)
            return False
        self._loose.append(escaped(raw))
        self._loose_blank = False
        return True

    def _keep_frame(self, frame: list[str]) -> None:
        if frame:  # one line, as its sentences run on (stored and matched so)
            joined = " ".join(frame)
            self._keep(joined if len(joined) <= FRAME_CHARS else joined[:FRAME_CHARS - 1] + "…")

    def _line(self, line: str) -> None:
        if line and looks_like_message(line):
            self._keep(line)

    def _keep(self, message: str) -> None:
        self.found += 1
        key = _NUMBERS.sub("#", message)
        if key in self._keys:
            self.repeats += 1
            return
        self._keys.add(key)
        if len(self._keys) > 100_000:  # a log of endless distinct lines: stop remembering them, keep bounding
            self._keys.clear()
        size = len(message) + 1
        if self.head_chars + size <= self.limit * 3 // 4:
            self.head.append(message)
            self.head_chars += size
            return
        self.tail.append(message)
        self.tail_chars += size
        while len(self.tail) > 1 and self.tail_chars > self.limit // 4:  # the last message always stays
            self.tail_chars -= len(self.tail.pop(0)) + 1
            self.dropped += 1

    def close(self) -> "MessageLines":
        """The end of the output: a frame left open is kept as its lines."""
        if self._loose is not None:
            text, self._loose = self._loose, None
            self._keep_frame(text)
        if self._frame:
            frame, self._frame = self._frame, None
            for held in frame:
                self._line(held)
        return self

    @property
    def messages(self) -> list[str]:
        """What was kept, in the order it was printed (a frame as one message, its lines joined)."""
        return self.head + self.tail

    def text(self) -> str:
        """The kept messages as one text (a run's stored message), with a line saying how many were left out."""
        lines = list(self.head)
        if self.dropped:
            lines.append(f"… {self.dropped} message(s) left out …")
        return "\n".join(lines + self.tail)
