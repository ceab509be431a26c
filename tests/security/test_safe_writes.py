"""Files written into a directory someone else may have made first (a report directory of another user, a
shared cache): a link planted under the temporary name mpistack would use redirects nothing. The temporary
name was the target's name and the writer's process id, so a local user could plant `report.md.<pid>.part`
pointing at a root-owned file and a root `mpistack report` overwrote it."""

from __future__ import annotations

import os
import stat

import pytest

from mpistack.cache import UnsafePath, private_directory, write_file_atomically
from mpistack.report.write import write_report


def test_a_link_planted_under_the_predictable_temporary_name_redirects_nothing(tmp_path):
    precious = tmp_path / "precious"
    precious.write_text("root-owned content\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("report.md", "report.json"):  # every name this process could have used
        (reports / f"{name}.{os.getpid()}.part").symlink_to(precious)
    write_file_atomically(reports / "report.md", "# the report\n")
    assert precious.read_text() == "root-owned content\n"
    assert (reports / "report.md").read_text() == "# the report\n"
    assert not stat.S_ISLNK(os.lstat(reports / "report.md").st_mode)
    assert [path.name for path in reports.iterdir() if path.name.endswith(".part") and not path.is_symlink()] == []


def test_a_link_at_the_reports_own_name_is_replaced_not_followed(tmp_path, monkeypatch):
    precious = tmp_path / "precious"
    precious.write_text("root-owned content\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "report.md").symlink_to(precious)
    monkeypatch.setattr("mpistack.report.markdown.render_markdown", lambda report: "# the report\n")
    write_report(object(), reports, ["md"])
    assert precious.read_text() == "root-owned content\n"
    assert (reports / "report.md").read_text() == "# the report\n" and not (reports / "report.md").is_symlink()


def test_a_work_directory_is_private_and_never_a_link_or_another_users(tmp_path):
    made = private_directory(tmp_path / "cache" / "work" / "abc-1")
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(made.parent).st_mode) == 0o700
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cache" / "work" / "abc-2").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match="symbolic link"):
        private_directory(tmp_path / "cache" / "work" / "abc-2")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # world-writable without the sticky bit: anyone could swap what is in it
    with pytest.raises(UnsafePath, match=r"writable by others \(mode 0777\); fix: chmod go-w"):
        private_directory(shared / "abc-3")
