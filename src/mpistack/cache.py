"""Where mpistack keeps files between runs (build contexts, build logs, podman's configuration), and how it
writes and reads files in directories that someone else may also write to (a report directory another user
made, a case directory a container writes): never through a symbolic link, never under a name another
process could have guessed and planted first."""

from __future__ import annotations

import errno
import functools
import grp
import os
import pwd
import stat
import tempfile
from pathlib import Path

#: open flags for a file a case or another user may have replaced by a link: the link is refused (ELOOP)
NO_FOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class UnsafePath(OSError):
    """A path mpistack will not write through or read from: a link, another user's directory, not a file.
    `reason` says which, without the path."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.reason = reason


def write_file_atomically(path: Path, text: str, *, durable: bool = False) -> Path:
    """Write ``text`` to ``path`` whole: a temporary file beside it, created under a random name that did not
    exist before (O_EXCL, as mkstemp does; a name after the process id could be planted as a link by someone
    else in a shared directory), renamed into place, so that a reader never sees half a file. The rename
    replaces a link at ``path`` itself, never what it points to. ``durable`` syncs the file to disk first,
    for records that must outlive a crash of the machine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(temporary, 0o666 & ~_UMASK)  # mkstemp makes 0600; a report is for others to read too
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once, at import: setting it to read it is not safe beside other threads


def private_directory(path: Path, fix: str = "") -> Path:
    """``path`` as a directory only this user can enter (0700), made with its missing parents (also 0700).
    One that is there already must be a real directory (not a link) owned by this user, under directories
    no other user can change (`check_own`); otherwise UnsafePath, naming it and the fix."""
    missing = []
    for ancestor in (path, *path.parents):
        if os.path.lexists(ancestor):
            break
        missing.append(ancestor)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:  # made meanwhile by another process: checked below
            pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(path, "expected a directory of mpistack's, found "
                         f"{'a symbolic link' if stat.S_ISLNK(info.st_mode) else 'something else'}")
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return check_own(path, fix or OWN_CACHE_FIX)


#: the fix for a cache or work directory that is not this user's own
OWN_CACHE_FIX = "give mpistack a directory of your own: unset XDG_CACHE_HOME (~/.cache) or point it at one"


def check_own(path: Path, fix: str) -> Path:
    """``path`` itself when this user may trust what is there, to run it or read settings from it: it (where it
    exists) is owned by this user and no one else may write to it, and no directory above it, followed
    through links or not, lets another user swap it (each owned by root or this user, and writable by
    no one else unless sticky, as /tmp is). Otherwise UnsafePath: one line naming the path, what is wrong
    and ``fix`` (for a mode of this user's own, the chmod that fixes it)."""
    lexical = Path(os.path.abspath(path))
    for chain in dict.fromkeys((lexical, Path(os.path.realpath(lexical)))):
        for part in (*reversed(chain.parents), chain):
            try:
                info = os.lstat(part)
            except FileNotFoundError:
                break  # what is missing, the caller makes, under a parent checked here
            problem = _untrusted(info, final=part == chain)
            if problem:
                # a mode of one's own is one chmod away; a directory shared on purpose (sticky, as /tmp) is not
                own_mode = info.st_uid == os.geteuid() and not info.st_mode & stat.S_ISVTX
                raise UnsafePath(part, f"{problem}; fix: {f'chmod go-w {part}' if own_mode else fix}")
    return path


def _untrusted(info: os.stat_result, *, final: bool) -> str | None:
    """What lets another user change this file or directory, or what is in it; None when nothing does."""
    owners = (os.geteuid(),) if final else (0, os.geteuid())
    if info.st_uid not in owners:
        return f"owned by {_user_name(info.st_uid)} (uid {info.st_uid}), not by you ({_user_name(os.geteuid())})"
    if stat.S_ISLNK(info.st_mode):
        return None  # a link of root's or ours: where it leads is checked as its own chain
    others_write = bool(info.st_mode & stat.S_IWOTH) or (
        bool(info.st_mode & stat.S_IWGRP) and not _private_group(info.st_gid))
    sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX and not final
    if others_write and not sticky:
        return f"writable by others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"user {uid}"


@functools.cache
def _private_group(gid: int) -> bool:
    """Whether group ``gid`` is this user's private group (Debian's USERGROUPS: named after the user, no other
    member), whose write permission gives no one else anything."""
    try:
        group, user = grp.getgrgid(gid), pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return False
    return gid == os.getegid() and group.gr_name == user and set(group.gr_mem) <= {user}


def create_new_file(path: Path, mode: int = 0o644) -> int:
    """A descriptor of ``path``, created now for writing: never a file that was there (O_EXCL), never
    through a link (a link planted at ``path`` makes it fail)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, mode)


def open_regular_file(path: Path) -> int:
    """A read descriptor of ``path`` when it is a regular file reached without a link at its last component;
    FileNotFoundError when it is not there, UnsafePath when it is a link, a FIFO, a device or a directory
    (a FIFO would block the reader for ever)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | NO_FOLLOW)
    except OSError as error:
        if error.errno == errno.ELOOP:  # the last component is a symbolic link
            raise UnsafePath(path, "a symbolic link, not a regular file") from None
        raise
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        raise UnsafePath(path, f"{_kind(info.st_mode)}, not a regular file")
    os.set_blocking(descriptor, True)
    return descriptor


def read_regular_bytes(path: Path) -> bytes:
    """The whole of a regular file (see `open_regular_file`)."""
    with os.fdopen(open_regular_file(path), "rb") as handle:
        return handle.read()


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def cache_dir() -> Path:
    """mpistack's cache root (not made here: a dry run makes nothing). Programs it built (mpistack-bench,
    native virtual environments), build trees and podman's settings are run or read from here, so a root
    another user made, or could swap, is refused (UnsafePath) rather than used; each of those is checked
    again where it is used, as the root may be made between."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return check_own(Path(base) / "mpistack", OWN_CACHE_FIX)
