"""Why a case failed, in one line a person reads: the first meaningful line of what it printed on stderr.

Launchers wrap the program's own complaint in noise: Hydra prefixes its proxies' lines with
`[proxy:0:0@host]` and the function that reported (`HYDU_create_process (utils/launch/launch.c:73): `),
interleaving them when two proxies write at once; MPICH and Open MPI frame their reports in banners of `=`
or `-`. What is left of the first line that is not noise is the reason.
"""

from __future__ import annotations

import re

#: how much of a reason is kept in a summary line
REASON_LIMIT = 300

# `[proxy:0:0@vm]`, `[vm:12345]`, `[1700000000.123] ` and the like, anywhere in a line
_TAG = re.compile(r"\[(?:proxy|mpiexec|mpirun|[\w.-]+:\d+|[\d.:]+)[^\]\n]*\]\s*")
# the reporting function and its source location: `HYDU_create_process (utils/launch/launch.c:73): `
_LOCATION = re.compile(r"^\w+ \([\w./-]+:\d+\):\s*")
# a line made only of frame characters, or a line inside MPICH's `=   BAD TERMINATION ...` banner
_FRAME = re.compile(r"^[=\-*#_~+ ]*$")
_BANNER = re.compile(r"^=\s")


def first_reason(stderr: str) -> str | None:
    """The first meaningful line of `stderr`, without launcher tags and source locations; None when there
    is none."""
    for line in stderr.splitlines():
        text = _TAG.sub("", line).strip()
        while (stripped := _LOCATION.sub("", text)) != text:
            text = _TAG.sub("", stripped).strip()
        if not text or _FRAME.match(text) or _BANNER.match(text):
            continue
        return text if len(text) <= REASON_LIMIT else text[:REASON_LIMIT - 1] + "…"
    return None
