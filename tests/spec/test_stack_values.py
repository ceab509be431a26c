"""Stack values that reach generated files and file names: patterns, lengths, one line of text."""

from __future__ import annotations

import pytest

from mpistack.spec import StackError, catalogue
from mpistack.spec.pins import pinned, table

OK = '''name = "t"
[base]
image = "docker.io/ubuntu:24.04"
[mpi]
impl = "mpich"
version = "4.3.1"
'''


def test_a_name_has_at_most_100_characters(stack_from):
    assert stack_from(OK.replace('"t"', '"' + "a" * 100 + '"')).name == "a" * 100
    with pytest.raises(StackError, match=r"^bad.toml: name: expected at most 100 characters, a stack name"):
        stack_from(OK.replace('"t"', '"' + "a" * 101 + '"'), "bad.toml")


@pytest.mark.parametrize("name", ["../etc", ".hidden", "A", "a b", "a/b", "a\nb"])
def test_a_name_is_a_safe_file_name(stack_from, name):
    with pytest.raises(StackError, match="name: expected a stack name"):
        stack_from(OK.replace('name = "t"', f'name = {name!r}'.replace("'", '"').replace("\n", "\\n")))


def test_a_version_with_a_trailing_newline_is_refused(stack_from):
    # `$` in a regular expression also matches before a final new line
    with pytest.raises(StackError, match=r"mpi.version: expected a release version"):
        stack_from(OK.replace('"4.3.1"', '"4.3.1\\n"'))


@pytest.mark.parametrize("table_line, field", [
    ('description = "a\\u0000b"', "description"),
    ('origin = "a\\rRUN x"', "origin"),
    ('tag = "latest\\nRUN x"', "tag"),
])
def test_top_level_text_fields(stack_from, table_line, field):
    with pytest.raises(StackError, match=rf"^t.toml: {field}: expected"):
        stack_from(table_line + "\n" + OK, "t.toml")


@pytest.mark.parametrize("line, field, expected", [
    ('runtime_image = "debian:12 AS x"', "base.runtime_image", "an image reference"),
    ('make = "debian:bookworm\\nRUN x"', "base.make", "an image reference"),
    ('packages = ["gcc; touch /x"]', "base.packages.0", "a Debian package name"),
])
def test_base_fields(stack_from, line, field, expected):
    with pytest.raises(StackError, match=rf"{field}: expected {expected}"):
        stack_from(OK.replace('image = "docker.io/ubuntu:24.04"', f'image = "docker.io/ubuntu:24.04"\n{line}'))


def test_paths_and_configure_arguments(stack_from):
    with pytest.raises(StackError, match=r"mpi.prefix: expected an absolute path"):
        stack_from(OK + 'prefix = "/opt/my mpi"\n')
    with pytest.raises(StackError, match=r"mpi.libfabric: expected true, false or an absolute path"):
        stack_from(OK + 'libfabric = "/usr\\nRUN x"\n')
    with pytest.raises(StackError, match=r"mpi.configure.1: expected one line"):
        stack_from(OK + 'configure = ["--ok", "--x\\n%post"]\n')
    with pytest.raises(StackError, match=r"mpi.configure.0: '<<' is not allowed"):
        stack_from(OK + 'configure = ["<<EOF"]\n')
    with pytest.raises(StackError, match=r"mpi.launcher: expected a command name or path"):
        stack_from(OK + 'launcher = "mpiexec -n 2"\n')
    assert stack_from(OK + 'configure = ["CFLAGS=-O2 -g $(X)"]\n').mpi.configure == ["CFLAGS=-O2 -g $(X)"]


def test_env_keys_and_values(stack_from):
    with pytest.raises(StackError, match=r"^t.toml: env: key 'A B': expected an environment variable name"):
        stack_from(OK + '[env]\n"A B" = "1"\n', "t.toml")
    with pytest.raises(StackError, match=r"^t.toml: env: A: expected one line of printable text"):
        stack_from(OK + '[env]\nA = "1\\nRUN x"\n', "t.toml")
    assert stack_from(OK + '[env]\nA = "$(x) `y`"\n').env == {"A": "$(x) `y`"}


def test_a_catalogue_name_that_is_no_file_name_is_a_stack_error():
    with pytest.raises(StackError, match="not a usable file name"):
        catalogue.load("a" * 300)
    with pytest.raises(StackError, match=r"^stack 'nul\\x00byte': not a"):
        catalogue.load("nul\x00byte")


def _versions(tmp_path, url: str, version: str = "1.0", name: str = "versions.toml") -> object:
    path = tmp_path / name  # one name per content: spec.pins caches what it read by path
    path.write_text(f'[fake]\nurl = {url!r}\nsource = "test"\n[fake.versions]\n"{version}" = "{"0" * 64}"\n'
                    .replace("'", '"'))
    return path


@pytest.mark.parametrize("url", ["https://example.org/x-{version}.tar.gz; touch /x",
                                 "https://example.org/$(id)/x.tar.gz", "ftp://example.org/x.tar.gz",
                                 "https://example.org/x-{version}.tar.gz\\nRUN x"])
def test_pinned_urls_are_checked(tmp_path, url):
    with pytest.raises(ValueError, match="fake.url: expected an http"):
        table(_versions(tmp_path, url))


def test_a_pinned_url_ends_in_a_file_name(tmp_path):
    path = _versions(tmp_path, "https://example.org/{version}/")
    with pytest.raises(ValueError, match="expected a URL ending in a file name"):
        pinned("fake", "1.0", path=path)
    assert pinned("fake", "1.0", path=_versions(tmp_path, "https://e.org/f-{version}.tgz", name="good.toml")).filename == "f-1.0.tgz"


def test_pinned_versions_are_versions(tmp_path):
    with pytest.raises(ValueError, match="fake.versions.'1.0; x': expected a release version"):
        table(_versions(tmp_path, "https://example.org/x.tgz", "1.0; x"))
