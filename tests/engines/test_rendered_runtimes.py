"""The runtimes mpistack renders for a cluster's srun, one container per rank (engines/cscs_ce.py, pyxis.py,
apptainer.py): golden command lines, hostile values kept as single unexpanded argv items, the inputs each
runtime refuses, and what each says of itself through the runtime interface."""

from __future__ import annotations

import csv
import dataclasses
import io
import shlex

import pytest
from hypothesis import given, strategies as st

from mpistack.engines import ContainerRun, EngineError, get_engine
from mpistack.registry import ENGINES

RENDERED = [name for name in ENGINES.names() if get_engine(name).renders_only]


def rank_container(image: str, env=None, mounts=(), workdir=None, edf=None, joined=False) -> ContainerRun:
    """One rank's container as the tests name it (`edf`: the CSCS Container Engine's name for it)."""
    return ContainerRun(image=image, env=dict(env or {}), mounts=list(mounts), workdir=workdir, per_rank=True,
                        join_ranks=2 if joined else 0, label=edf)


def wrap(name: str, srun: list[str], container: ContainerRun, argv: list[str]) -> list[str]:
    """The full srun line of `name`: the CE names its container by the EDF (kept in the label here)."""
    if name == "cscs-ce":
        container = dataclasses.replace(container, image=container.label)
    return get_engine(name).launch_argv(srun, dataclasses.replace(container, argv=list(argv)))


def cscs_ce(srun, container, argv):
    return wrap("cscs-ce", srun, container, argv)


def pyxis(srun, container, argv):
    return wrap("pyxis", srun, container, argv)


def apptainer(srun, container, argv):
    return wrap("apptainer", srun, container, argv)


MPICH_SRUN = ["srun", "--mpi=pmi2", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1"]
OPENMPI_SRUN = ["srun", "--mpi=pmix", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1"]
BENCH = ["mpistack-bench", "--suite", "latency,bw", "--json", "/out/run.json"]

MPICH = rank_container(image="quay.io/ethcscs/mpich:4.3.1-ofi1.22-cuda12.8",
                      env={"MPIR_CVAR_CH4_OFI_ENABLE_HMEM": "1"},
                      mounts=["/capstor/scratch/cscs/u:/scratch", "/out:/out:ro"],
                      workdir="/scratch", edf="/users/u/.edf/mpich.toml")
OPENMPI = rank_container(image="debian-openmpi.sif",
                        env={"PMIX_MCA_psec": "native", "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader,tcp"},
                        mounts=["/out:/out"], edf="openmpi")

HOSTILE = {"SPACES": "a b  c", "QUOTES": "it's \"quoted\" 'twice'", "SUBST": "$(rm -rf /)",
           "TICKS": "`reboot`; echo $HOME", "NEWLINES": "line one\nline two\n", "GLOB": "* ?[a] ~ ; | & > <"}
HOSTILE_ARGV = ["sh", "-c", "echo $(rm -rf /); `id`", "a b", "it's", '"x"', "line\nbreak", "*"]


def roundtrips(argv: list[str]) -> bool:
    return shlex.split(shlex.join(argv)) == argv


# --- golden command lines -------------------------------------------------------------------------------

def test_cscs_ce_mpich():
    assert cscs_ce(MPICH_SRUN, MPICH, BENCH) == [
        *MPICH_SRUN, "--environment=/users/u/.edf/mpich.toml", *BENCH]


def test_cscs_ce_openmpi_by_name():
    assert cscs_ce(OPENMPI_SRUN, OPENMPI, BENCH) == [*OPENMPI_SRUN, "--environment=openmpi", *BENCH]


def test_pyxis_mpich():
    assert pyxis(MPICH_SRUN, MPICH, BENCH) == [
        *MPICH_SRUN,
        "--container-image=quay.io#ethcscs/mpich:4.3.1-ofi1.22-cuda12.8",
        "--container-mounts=/capstor/scratch/cscs/u:/scratch,/out:/out:ro",
        "--container-workdir=/scratch",
        "--container-env=MPIR_CVAR_CH4_OFI_ENABLE_HMEM",
        *BENCH]


def test_pyxis_openmpi_squashfs_by_path():
    container = rank_container(image="/scratch/images/debian-openmpi.sqsh", env=OPENMPI.env, mounts=OPENMPI.mounts)
    assert pyxis(OPENMPI_SRUN, container, BENCH) == [
        *OPENMPI_SRUN,
        "--container-image=/scratch/images/debian-openmpi.sqsh",
        "--container-mounts=/out:/out",
        "--container-env=PMIX_MCA_psec,OMPI_MCA_pml,OMPI_MCA_btl",
        *BENCH]


@pytest.mark.parametrize("image,spelled", [
    ("ubuntu:24.04", "ubuntu:24.04"),                              # Docker Hub: no registry part
    ("nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io#nvidia/pytorch:24.01-py3"),
    ("docker://nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io#nvidia/pytorch:24.01-py3"),
    ("localhost:5000/mpich:4", "localhost:5000#mpich:4"),
    ("nvcr.io#nvidia/pytorch:24.01-py3", "nvcr.io#nvidia/pytorch:24.01-py3"),
    ("./images/mpich.sqsh", "./images/mpich.sqsh"),                 # a squashfs file by relative path
])
def test_pyxis_image_spelling(image, spelled):
    argv = pyxis(MPICH_SRUN, rank_container(image=image), ["true"])
    assert argv == [*MPICH_SRUN, f"--container-image={spelled}", "true"]


def test_pyxis_minimal_has_no_empty_options():
    assert pyxis(["srun"], rank_container(image="ubuntu:24.04"), ["hostname"]) == [
        "srun", "--container-image=ubuntu:24.04", "hostname"]


def test_apptainer_mpich():
    assert apptainer(MPICH_SRUN, MPICH, BENCH) == [
        *MPICH_SRUN, "apptainer", "exec", "--no-eval",
        "--bind", "/capstor/scratch/cscs/u:/scratch", "--bind", "/out:/out:ro",
        "--pwd", "/scratch",
        "--env", "MPIR_CVAR_CH4_OFI_ENABLE_HMEM=1",
        "quay.io/ethcscs/mpich:4.3.1-ofi1.22-cuda12.8", *BENCH]


def test_apptainer_joins_the_ranks_of_a_node_with_sharens():
    joined = rank_container(image="/images/mpich.sif", joined=True)
    assert apptainer(MPICH_SRUN, joined, BENCH) == [*MPICH_SRUN, "apptainer", "exec", "--no-eval", "--sharens",
                                                        "/images/mpich.sif", *BENCH]


def test_apptainer_openmpi():
    assert apptainer(OPENMPI_SRUN, OPENMPI, BENCH) == [
        *OPENMPI_SRUN, "apptainer", "exec", "--no-eval",
        "--bind", "/out:/out",
        "--env", "PMIX_MCA_psec=native", "--env", "OMPI_MCA_pml=ob1", "--env", "OMPI_MCA_btl=self,vader,tcp",
        "debian-openmpi.sif", *BENCH]


def test_inputs_are_not_changed():
    srun, argv = list(MPICH_SRUN), list(BENCH)
    for name in RENDERED:
        wrap(name, srun, MPICH, argv)
    assert srun == MPICH_SRUN and argv == BENCH


# --- registry and interface ----------------------------------------------------------------------------

def test_every_rendered_runtime_is_a_registered_engine():
    assert RENDERED == ["cscs-ce", "pyxis", "apptainer"]
    for name in RENDERED:
        argv = wrap(name, MPICH_SRUN, MPICH, BENCH)
        assert argv[:len(MPICH_SRUN)] == MPICH_SRUN and argv[-len(BENCH):] == BENCH


def test_unknown_runtime():
    with pytest.raises(EngineError, match="unknown container engine 'singularity'"):
        get_engine("singularity")


@pytest.mark.parametrize("name", RENDERED)
def test_a_rendered_runtime_refuses_to_run_here_before_any_launch(name):
    with pytest.raises(EngineError, match=f"engine {name} runs on a cluster's Slurm.*--srun {name}"):
        get_engine(name).check()


def test_what_the_launcher_environment_holds():
    """pyxis reads --container-env's values from srun's environment; the others carry them themselves."""
    assert get_engine("pyxis").launcher_env(OPENMPI) == OPENMPI.env
    assert get_engine("apptainer").launcher_env(OPENMPI) == {}
    assert get_engine("cscs-ce").launcher_env(OPENMPI) == {}


@pytest.mark.parametrize("name,joined,separate", [
    ("apptainer", False, ["user", "mnt"]), ("apptainer", True, []),  # --sharens joins them
    ("pyxis", False, []), ("cscs-ce", False, []),  # one container per node, by design
])
def test_the_ranks_confinement(name, joined, separate):
    confinement = get_engine(name).confinement(rank_container(image="x", joined=joined))
    assert confinement.separate() == separate and {"ipc", "pid", "net"} <= confinement.host


# --- hostile values -------------------------------------------------------------------------------------

def pflag_env(item: str) -> tuple[str, str]:
    """How Apptainer's --env (a pflag string-to-string flag) reads one item back (pflag's
    stringToStringValue.Set): one '=' -> the item with '"' trimmed from both ends; more -> one CSV record."""
    if item.count("=") == 1:
        pairs = [item.strip('"')]
    else:
        pairs = next(csv.reader(io.StringIO(item, newline="")))
    assert len(pairs) == 1, pairs
    name, _, value = pairs[0].partition("=")
    return name, value


@pytest.mark.parametrize("name", RENDERED)
def test_hostile_values_stay_single_unexpanded_items(name):
    container = rank_container(image="registry.example.org/team/mpich:4", env=HOSTILE,
                              mounts=["/data/my dir:/data/my dir"] if name != "pyxis" else ["/data:/data"],
                              workdir="/work/a b", edf="./my env.toml")
    argv = wrap(name, MPICH_SRUN, container, HOSTILE_ARGV)
    assert argv[-len(HOSTILE_ARGV):] == HOSTILE_ARGV
    assert roundtrips(argv)
    if name == "apptainer":
        items = [argv[i + 1] for i, item in enumerate(argv) if item == "--env"]
        assert dict(map(pflag_env, items)) == HOSTILE
        assert "--bind" in argv and "/data/my dir:/data/my dir" in argv and "/work/a b" in argv
    if name == "pyxis":
        assert f"--container-env={','.join(HOSTILE)}" in argv
        assert "--container-workdir=/work/a b" in argv
        assert get_engine(name).launcher_env(container) == HOSTILE   # values go through srun's environment
    if name == "cscs-ce":
        assert "--environment=./my env.toml" in argv


@pytest.mark.parametrize("value", ["a=b", "x=1,y=2", 'q="1"', "k=v\nnext=line", '"=', "=", "a,b", "", "1 2"])
def test_apptainer_env_values_read_back_exactly(value):
    argv = apptainer(["srun"], rank_container(image="i.sif", env={"V": value}), ["true"])
    assert pflag_env(argv[argv.index("--env") + 1]) == ("V", value)


@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
                       st.text(st.characters(blacklist_characters="\0\r"), max_size=30), max_size=4),
       st.lists(st.text(st.characters(blacklist_characters="\0"), min_size=1, max_size=20).filter(
           lambda s: not s.startswith("-")), min_size=1, max_size=4))
def test_any_env_and_argv_roundtrip(env, argv):
    for name in RENDERED:
        container = rank_container(image="img.sif", env={k: v for k, v in env.items()
                                                        if name != "apptainer" or not v.endswith('"')},
                                  edf="/e.toml")
        rendered = wrap(name, MPICH_SRUN, container, argv)
        assert roundtrips(rendered) and rendered[-len(argv):] == argv
        if name == "apptainer":
            items = [rendered[i + 1] for i, item in enumerate(rendered) if item == "--env"]
            assert dict(map(pflag_env, items)) == container.env


# --- what each runtime refuses --------------------------------------------------------------------------

@pytest.mark.parametrize("mount,message", [
    ("/scratch", "expected SRC:DST"),
    ("/a:/b:ro:x", "a ':' inside a path"),
    (":/b", "empty source or destination"),
    ("/a:", "empty source or destination"),
    ("/a:b", "must be an absolute path"),
    ("/a:/b:", "empty flags"),
])
def test_bad_mounts(mount, message):
    with pytest.raises(ValueError, match=message):
        apptainer(MPICH_SRUN, rank_container(image="x", mounts=[mount]), BENCH)


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "", "A\n", "Ä", "A=B"])
def test_bad_env_names(name):
    with pytest.raises(ValueError, match="environment variable name"):
        pyxis(MPICH_SRUN, rank_container(image="x", env={name: "1"}), BENCH)


def test_nul_bytes_and_non_strings():
    with pytest.raises(ValueError, match="NUL"):
        apptainer(MPICH_SRUN, rank_container(image="x", env={"A": "a\0b"}), BENCH)
    with pytest.raises(ValueError, match="expected a string"):
        apptainer(MPICH_SRUN, rank_container(image="x", env={"A": 1}), BENCH)
    with pytest.raises(ValueError, match="NUL"):
        pyxis(["srun"], rank_container(image="x"), ["echo", "a\0b"])


def test_relative_workdir():
    with pytest.raises(ValueError, match="workdir 'scratch'"):
        pyxis(MPICH_SRUN, rank_container(image="x", workdir="scratch"), BENCH)


def test_pyxis_mount_with_comma_or_space():
    with pytest.raises(ValueError, match="contains ','"):
        pyxis(MPICH_SRUN, rank_container(image="x", mounts=["/a,b:/c"]), BENCH)
    with pytest.raises(ValueError, match="whitespace"):
        pyxis(MPICH_SRUN, rank_container(image="x", mounts=["/my dir:/data"]), BENCH)


def test_pyxis_env_not_exported_by_srun():
    container = rank_container(image="x", env={"FI_PROVIDER": "cxi", "A": "1"})
    with pytest.raises(ValueError, match="keeps FI_PROVIDER, A from the tasks"):
        pyxis([*MPICH_SRUN, "--export=NONE"], container, BENCH)
    with pytest.raises(ValueError, match="keeps A from the tasks"):
        pyxis([*MPICH_SRUN, "--export", "FI_PROVIDER,HOME"], container, BENCH)
    assert pyxis([*MPICH_SRUN, "--export=ALL,X=1"], container, BENCH)
    assert pyxis([*MPICH_SRUN, "--export=NONE"], rank_container(image="x"), BENCH)


def test_apptainer_mount_with_comma():
    with pytest.raises(ValueError, match="second bind"):
        apptainer(MPICH_SRUN, rank_container(image="x.sif", mounts=["/a,b:/c"]), BENCH)


def test_apptainer_value_it_cannot_carry():
    with pytest.raises(ValueError, match="ends with"):
        apptainer(MPICH_SRUN, rank_container(image="x.sif", env={"A": 'say "hi"'}), BENCH)
    with pytest.raises(ValueError, match="CRLF"):
        apptainer(MPICH_SRUN, rank_container(image="x.sif", env={"A": "k=v\r\n"}), BENCH)


@pytest.mark.parametrize("edf,message", [
    ("", "empty EDF path"), ("  ", "empty EDF path"),
    (" /e.toml", "whitespace"), ("edf/mpich.toml", "must start with ./"), ("mpich.toml", "without .toml"),
])
def test_cscs_ce_bad_edf(edf, message):
    with pytest.raises(ValueError, match=message):
        cscs_ce(MPICH_SRUN, rank_container(image="x", edf=edf), BENCH)


@pytest.mark.parametrize("name", ["pyxis", "apptainer"])
def test_empty_image(name):
    with pytest.raises(ValueError, match="empty image"):
        wrap(name, MPICH_SRUN, rank_container(image=""), BENCH)


def test_apptainer_image_like_an_option():
    with pytest.raises(ValueError, match="read as an option"):
        apptainer(MPICH_SRUN, rank_container(image="--help"), BENCH)


@pytest.mark.parametrize("name", RENDERED)
def test_bad_calls(name):
    with pytest.raises(ValueError, match="srun: empty command"):
        wrap(name, [], MPICH, BENCH)
    with pytest.raises(ValueError, match="argv: empty command"):
        wrap(name, MPICH_SRUN, MPICH, [])
    with pytest.raises(ValueError, match="read as an option"):
        wrap(name, MPICH_SRUN, MPICH, ["--version"])
