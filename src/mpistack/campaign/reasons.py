"""Why a case failed, in one line a person reads: the first meaningful line of what it printed on stderr
(and, for the doctor, the error lines a library printed on stdout).

Launchers wrap the program's own complaint in noise: Hydra prefixes its proxies' lines with
`[proxy:0:0@host]` and the function that reported (`HYDU_create_process (utils/launch/launch.c:73): `),
interleaving them when two proxies write at once; MPICH and Open MPI frame their reports in banners of `=`
or `-`; a library asked to be verbose (a transport probe, a variant's UCX_LOG_LEVEL) adds its chatter. What
is left of the first line that is not noise is the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: how much of a reason is kept in a summary line
REASON_LIMIT = 300

# `[proxy:0:0@vm]`, `[vm:12345]`, `[1700000000.123] ` and the like, anywhere in a line (not the inner bracket of
# an Open MPI process name, `[[52336,1],9]`, which names a peer)
_TAG = re.compile(r"(?<!\[)\[(?:proxy|mpiexec|mpirun|[\w.-]+:\d+|[\d.:]+)[^\]\n]*\]\s*")
# Open MPI's prefix of a rank's report: `[host][[jobid,job],rank][file.c:line:function] `
_RANK_PREFIX = re.compile(r"^\[[\w.-]+\]\[\[\d+,\d+\],\d+\]")
# the reporting function and its source location: `HYDU_create_process (utils/launch/launch.c:73): `
_LOCATION = re.compile(r"^\w+ \([\w./-]+:\d+\):\s*")
# a line made only of frame characters, or a line inside MPICH's `=   BAD TERMINATION ...` banner
_FRAME = re.compile(r"^[=\-*#_~+ ]*$")
_BANNER = re.compile(r"^=\s")
# what UCX, Open MPI and MPICH (its `==== ... ====` summary) print when asked to be verbose: what they use,
# never why they failed
_CHATTER = ("UCX  INFO", "UCX  DIAG", "mca: base:", "select:", "==== ")
# a container engine's log line (podman's logrus: `time="..." level=error msg="Removing container ..."`): what the
# engine did about a failure, written before its own `Error: ...` line, which says the failure
_ENGINE_LOG = re.compile(r'^time="[^"]*" level=\w+ msg=')
# srun's notes on the step (a warning about its binding, then what it did once a rank failed: aborting the step,
# signalling it, each task killed): printed before and around the rank's own complaint, never its cause
_SRUN_AFTERMATH = re.compile(r"^srun: (cluster configuration lacks support for cpu binding|Job step aborted|"
                             r"launch/slurm: _step_signal|error: \S+: tasks? [\d,-]+: (Killed|Exited with exit code))")


def meaningful_lines(text: str) -> Iterator[str]:
    """The lines of `text` that are not noise, without launcher tags and source locations."""
    for line in text.splitlines():
        if any(chatter in line for chatter in _CHATTER):
            continue
        kept = _TAG.sub("", _RANK_PREFIX.sub("", line.strip())).strip()
        while (stripped := _LOCATION.sub("", kept)) != kept:
            kept = _TAG.sub("", stripped).strip()
        if not kept or _FRAME.match(kept) or _BANNER.match(kept):
            continue
        yield kept


def first_reason(stderr: str, stdout_said: str = "") -> str | None:
    """The first meaningful line of `stderr` that is not a container engine's log line nor srun's note on the
    step; where there is none, the first error line the ranks wrote to standard output (`stdout_said`: UCX logs
    its errors there), else the first line of `stderr`; None when there is none."""
    lines = list(meaningful_lines(stderr))
    text = next((line for line in lines if not _ENGINE_LOG.match(line) and not _SRUN_AFTERMATH.match(line)),
                next(meaningful_lines(stdout_said), lines[0] if lines else None))
    if text is None or len(text) <= REASON_LIMIT:
        return text
    return text[:REASON_LIMIT - 1] + "…"


#: lines of a failed case's standard output that carry a library's complaint (UCX logs its errors there)
_STDOUT_ERROR = re.compile(r"\b(ERROR|FATAL|Error|error:)")


def stdout_errors(stdout: str, limit: int = 5) -> str:
    """The first `limit` lines of a failed case's standard output that say an error: UCX writes "UCX ERROR The
    TLs list is empty" to stdout, while MPICH's abort on stderr says only "No such element"."""
    lines = [line.strip()[:300] for line in stdout.splitlines() if _STDOUT_ERROR.search(line)]
    return "\n".join(lines[:limit])


#: failures whose words do not say their likely cause, with what does: (a pattern in the whole stderr, the hint)
_HINTS = (
    (re.compile(r"HYD_pmcd_pmiserv_\w*_cb|cannot find proxy with ID"),
     "this may be interference: Hydra's control port (TCP, seen in ps and ss) accepts anyone on this machine, "
     "and bytes another user or program writes to it end the job so; if it repeats, `ss -tnp` during a run "
     "shows who connects"),
    (re.compile(r"statfs\W+/dev/mqueue"),
     "the host has no /dev/mqueue for a container sharing its IPC namespace (rootless podman cannot make one): "
     "an administrator runs `mkdir -p /dev/mqueue && mount -t mqueue mqueue /dev/mqueue`"),
)


def hinted(reason: str | None, stderr: str) -> str | None:
    """`reason` followed by the hint for a failure whose own words do not say its likely cause."""
    hints = [hint for pattern, hint in _HINTS if pattern.search(stderr)]
    if not hints:
        return reason
    return "; ".join([reason, *hints] if reason else hints)
