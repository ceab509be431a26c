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


def abort_line(line: str) -> bool:
    """True for a line that says the job was aborted or a process ended abnormally."""
    return any(pattern.match(line) for pattern in _ABORT_PATTERNS)


def detail_line(line: str) -> bool:
    """True for a line that details an abort (process name, PID, exit code)."""
    return any(pattern.match(line) for pattern in _DETAIL_PATTERNS)
