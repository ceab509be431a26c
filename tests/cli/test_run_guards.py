"""What `mpistack run` tells a user before and after a campaign, through the real command line: the password of
a store URL never printed, an edited campaign file refused on --resume, the size guard, typed tags, why a
case failed, the work directory removed after a good run, the images a run would build."""

from __future__ import annotations

import json
import shutil
import sqlite3
import textwrap
from pathlib import Path

import pytest

from tests.helpers import HOST_MPICH_ONE_RANK, campaign_file, mpistack, osu_program

needs_mpich = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")


def campaign(tmp_path: Path, extra: str = "", benchmarks: str | None = None, name: str = "g") -> Path:
    if benchmarks is None:
        benchmarks = f'[[benchmark]]\nname = "fake"\nprogram = "{osu_program(tmp_path, "bench")}"\n'
    return campaign_file(tmp_path, textwrap.dedent(extra) + HOST_MPICH_ONE_RANK + benchmarks, name=name)


def stored(db: Path, what: str = "SELECT status, message FROM runs ORDER BY id") -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return connection.execute(what).fetchall()


@pytest.mark.postgres
@needs_mpich
def test_the_password_of_a_store_url_is_never_printed(tmp_path, postgres_server):
    url = postgres_server.new_database().replace("postgres@", "postgres:s3cr%40t-pw@")  # trust: any password
    path = campaign(tmp_path)
    result = mpistack("run", path, "--db", url, home=tmp_path)
    assert "results in postgresql://postgres:***@127.0.0.1:" in result.stdout
    unreachable = url.replace(f":{postgres_server.port}/", f":{postgres_server.port + 1}/")
    failed = mpistack("run", path, "--db", unreachable, home=tmp_path, check=2)
    assert "cannot open results store 'postgresql://postgres:***@127.0.0.1:" in " ".join(failed.stderr.split())
    # the driver's own reason, not SQLAlchemy's wrapping of it and its link
    assert "Connection refused" in failed.stderr and "sqlalche.me" not in failed.stderr
    listed = mpistack("runs", "--db", unreachable, home=tmp_path, check=2)
    for output in (result, failed, listed):
        assert "s3cr" not in output.stdout + output.stderr


@needs_mpich
def test_resume_with_an_edited_campaign_file_names_the_change_and_force_records_it(tmp_path):
    db = tmp_path / "r.db"
    path = campaign(tmp_path, "timeout = 60\nrepeats = 2\n")
    mpistack("run", path, "--db", db, home=tmp_path)
    path.write_text(path.read_text().replace("timeout = 60", "timeout = 30"))
    refused = mpistack("run", path, "--db", db, "--resume", home=tmp_path, check=2)
    assert "changed since campaign #1 started: timeout: 60.0 -> 30.0" in " ".join(refused.stderr.split())
    assert "--force" in refused.stderr
    mpistack("run", path, "--db", db, "--resume", "--force", home=tmp_path)
    with sqlite3.connect(db) as connection:
        (spec,) = connection.execute("SELECT spec FROM campaigns").fetchone()
    assert '"timeout": 30.0' in spec
    again = mpistack("run", path, "--db", db, "--resume", home=tmp_path)  # the new file is the recorded one now
    assert "0 case(s) to run, 2 already done" in again.stdout
    assert len(stored(db)) == 2  # no case ran twice


@needs_mpich
def test_a_huge_campaign_is_stated_and_needs_yes(tmp_path):
    db = tmp_path / "r.db"
    path = campaign(tmp_path, "repeats = 100\nbuffers = [" + ", ".join(
        f'"{a}-{b}"' for a in "HDM" for b in "HDM") + "]\n")  # 900 cases; the 400 on host memory launch
    dry = " ".join(mpistack("run", path, "--dry-run", home=tmp_path).stdout.split())
    assert "900 case(s) (400 to launch); at most 2 d 18 h" in dry and "the run asks for --yes" in dry
    refused = mpistack("run", path, "--db", db, home=tmp_path, check=2)
    assert "an estimated 2 d 18 h is more than 24 h; add --yes" in " ".join(refused.stderr.split())
    assert not db.exists() or stored(db) == []


@needs_mpich
def test_the_estimate_uses_the_durations_of_earlier_runs(tmp_path):
    db = tmp_path / "r.db"
    path = campaign(tmp_path, benchmarks='[[benchmark]]\nname = "allreduce"\n', extra='benchmark_options = '
                    '["-m", "1:8", "-i", "10", "-x", "1"]\n')
    path.write_text(path.read_text().replace("ranks = 1", "ranks = 2"))
    first = mpistack("run", path, "--dry-run", "--db", db, home=tmp_path)
    assert "1 case(s); estimated " in " ".join(first.stdout.split())  # a model of the launch, not its timeout
    assert "1 of 1 from a model of a launch's cost" in " ".join(first.stdout.split())
    mpistack("run", path, "--db", db, home=tmp_path)
    second = " ".join(mpistack("run", path, "--dry-run", "--db", db, home=tmp_path).stdout.split())
    assert "1 case(s); estimated " in second and "1 of 1 from the median time of earlier runs" in second


def test_a_typed_tag_of_the_wrong_type_is_refused_before_any_case(tmp_path):
    path = campaign(tmp_path, 'tags = { ranks = "two" }\n')
    dry = mpistack("run", path, "--dry-run", home=tmp_path, check=2)
    assert f"{path.name}: tags: tag ranks='two': expected a whole number" in dry.stderr
    mpistack("run", path, "--db", tmp_path / "r.db", home=tmp_path, check=2)
    assert not (tmp_path / "r.db").exists() or stored(tmp_path / "r.db") == []


@needs_mpich
def test_a_failed_case_says_why_in_its_line_and_its_stored_message(tmp_path):
    db = tmp_path / "r.db"
    path = campaign(tmp_path, benchmarks='[[benchmark]]\nname = "nope"\nprogram = "./nope"\n')
    result = mpistack("run", path, "--db", db, home=tmp_path, check=4)  # its only case failed: 4
    reason = "execvp error on file ./nope (No such file or directory)"
    assert f"exit status 255: {reason}" in result.stdout
    ((status, message),) = stored(db)
    assert status == "failed" and message.splitlines()[0] == f"exit status 255: {reason}"
    (work,) = (tmp_path / "cache" / "mpistack" / "work").glob("*-1")  # keyed by the store and campaign #1
    assert work.is_dir() and f"work files kept in {work}" in " ".join(result.stdout.split())


@needs_mpich
def test_the_work_directory_of_a_campaign_that_ended_well_is_removed(tmp_path):
    path = campaign(tmp_path)
    result = mpistack("run", path, "--db", tmp_path / "r.db", home=tmp_path)
    assert "kept" not in result.stdout
    assert list((tmp_path / "cache" / "mpistack" / "work").glob("*-1")) == []


def inline_table(value) -> str:
    """A TOML inline table (or value) of plain data."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(key)} = {inline_table(item)}" for key, item in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(inline_table(item) for item in value) + "]"
    return json.dumps(value)


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman not installed")
def test_a_dry_run_names_the_images_it_would_build_with_their_last_build_time(tmp_path, monkeypatch):
    import tomllib

    from mpistack.campaign.build_times import record_build_time
    from mpistack.spec import catalogue

    stack = tomllib.loads((catalogue.CATALOGUE / "pip-mpich.toml").read_text())
    stack["name"] = "never-built-mpich"  # an image of its own, which no test builds
    path = tmp_path / "g.toml"
    path.write_text('name = "g"\napproaches = ["container"]\nbenchmarks = ["latency"]\n'
                    f'[[stack]]\nname = "never-built-mpich"\ninline = {inline_table(stack)}\n')
    dry = " ".join(mpistack("run", path, "--dry-run", home=tmp_path).stdout.split())
    assert "1 image(s) missing, built by the run: localhost/mpistack/never-built-mpich:" in dry
    reference = dry.split("built by the run: ")[1].split(" ")[0]
    assert f"{reference} (stack never-built-mpich): build time unknown" in dry
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the cache the command line is given
    record_build_time(reference, 754.2)  # what the prepare stage records after a build
    dry = " ".join(mpistack("run", path, "--dry-run", home=tmp_path).stdout.split())
    assert f"{reference} (stack never-built-mpich): last build took 754 s" in dry


def test_a_campaign_file_error_prints_markup_literally(tmp_path):
    """Rich markup in a campaign file's values reaches the error message as text, never as markup."""
    path = campaign(tmp_path, extra='description = "[/x] [bold]"\ntimeout = "[/red]"\n')
    result = mpistack("run", path, "--dry-run", home=tmp_path, check=2)
    assert "timeout" in result.stderr and "[/red]" in result.stderr
    assert "MarkupError" not in result.stdout + result.stderr and "Traceback" not in result.stderr
