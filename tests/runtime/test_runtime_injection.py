"""The runtime generators cannot be injected: hostile values in every stack field that reaches an env script,
an EDF or an Apptainer settings file are read back exactly (sourced by a real shell, parsed as TOML) and run
nothing; what no escaping can make safe (a bind path with a ',' or a newline, a variable name with shell
syntax) is refused with the field named. The stack spec's own validation is bypassed on purpose
(model_copy does not validate): the generators must be safe whatever reaches them."""

from __future__ import annotations

import os
import subprocess
import tomllib

import pytest

from mpistack import runtime
from mpistack.approaches import apptainer
from mpistack.runtime import systems
from mpistack.spec import catalogue

HOSTILE = [
    "$(touch {marker})",
    "`touch {marker}`",
    "x'; touch {marker}; echo '",
    'x"; touch {marker}; echo "',
    "line\ntouch {marker}\n",
    "tab\tand \\ backslash ${{HOME}}",
]


def hostile_stack(base: str, value: str):
    """A catalogue stack with `value` in its name, MPI version and device (whence MPICH_CH4_NETMOD)."""
    stack = catalogue.load(base)
    mpi = stack.mpi.model_copy(update={"version": value, "device": "ch4:" + value})
    return stack.model_copy(update={"name": value, "mpi": mpi})


def source(path, tmp_path, names) -> dict[str, str]:
    """The values of `names` after a clean bash sources the file (NUL-separated, newlines survive)."""
    script = f". {path}; " + "; ".join(f'printf "%s\\0" "${name}"' for name in names)
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, cwd=tmp_path,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)}, check=True)
    return dict(zip(names, done.stdout.decode().split("\0")))


@pytest.mark.parametrize("template", HOSTILE)
def test_env_script_reads_back_every_value_and_runs_nothing(tmp_path, template):
    marker = tmp_path / "pwned"
    value = template.format(marker=marker)
    stack = hostile_stack("pip-mpich", value)
    path = tmp_path / "env.sh"
    path.write_text(runtime.env_script(stack))
    values = source(path, tmp_path, ["MPICH_CH4_NETMOD", "FI_PROVIDER"])
    assert values["MPICH_CH4_NETMOD"] == value.split(":")[-1]
    assert not marker.exists()


@pytest.mark.parametrize("template", HOSTILE)
def test_edf_reads_back_every_value(tmp_path, template):
    value = template.format(marker=tmp_path / "pwned")
    stack = hostile_stack("pip-mpich", value)
    text = runtime.edf(stack, image=f"quay.io/x/{value}", mounts=[f"/scratch/{value}:/s"], workdir=f"/w/{value}")
    data = tomllib.loads(text)
    assert data["image"] == f"quay.io#x/{value}"
    assert data["mounts"] == [f"/scratch/{value}:/s"] and data["workdir"] == f"/w/{value}"
    assert data["env"] == {"MPICH_CH4_NETMOD": value.split(":")[-1]}
    assert set(data) == {"image", "mounts", "workdir", "env", "annotations"}  # no key smuggled in


@pytest.mark.parametrize("template", HOSTILE)
def test_apptainer_settings_read_back_and_run_nothing(tmp_path, template):
    marker = tmp_path / "pwned"
    stack = hostile_stack("lumi-ofi1152-mpich423", template.format(marker=marker))
    files = apptainer.write_runtime(stack, tmp_path / "out", system="lumi")
    assert all(path.parent == tmp_path / "out" for path in files)  # the name cannot leave the directory
    for path in files:
        if path.name.startswith("apptainer-"):
            values = source(path, tmp_path, ["APPTAINER_BIND"])
            assert values["APPTAINER_BIND"].split(",")[0].startswith("/")
    assert not marker.exists()


# "/opt/rocm\n": a trailing new line, which a `$` anchor would let through
@pytest.mark.parametrize("prefix", ["/opt/rocm,/etc:/etc", "/opt/rocm\ntouch /tmp/x", "/opt/$(id):/x:/y",
                                    "/opt/rocm\n"])
def test_a_bind_path_no_bind_list_can_carry_is_refused_with_the_field(prefix):
    stack = catalogue.load("lumi-ofi1152-mpich423")
    stack = stack.model_copy(update={"gpu": stack.gpu.model_copy(update={"prefix": prefix})})
    with pytest.raises(ValueError, match="system lumi, approach bind: .* is not a bind"):
        apptainer.apptainer_binds(stack, "bind", system="lumi")


@pytest.mark.parametrize("name", ["A B", "X=1; touch /tmp/x #", "1ABC", "A\nB", "A$(id)", "AB\n"])
def test_variable_names_are_checked_against_a_strict_pattern(name):
    with pytest.raises(ValueError, match="is not an environment variable name"):
        systems.ApproachPaths(env={name: "1"})
    with pytest.raises(ValueError, match="is not an environment variable name"):
        systems.check_env_name(name, "env")
