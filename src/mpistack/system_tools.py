"""System programs found where Debian installs them, not by the caller's PATH alone: an ordinary user's PATH
on Debian has no /usr/sbin, where ldconfig and debootstrap live, so a search of PATH alone said "not
installed" of programs that are (and skipped what needs them for a false reason)."""

from __future__ import annotations

import os
import shutil

#: the system's program directories (Debian's default PATH for root), searched after the caller's PATH
SYSTEM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def system_tool(name: str) -> str | None:
    """The path of program ``name``: the first on the caller's PATH, else in the system's directories; None
    when neither has it."""
    path = os.pathsep.join([*filter(None, os.environ.get("PATH", "").split(os.pathsep)), *SYSTEM_DIRS])
    return shutil.which(name, path=path)


def system_tool_argv0(name: str) -> str:
    """``name`` as the first word of a command line: its path where it is found, else the bare name (running
    it then fails with the usual 'not found', which the caller reports)."""
    return system_tool(name) or name
