"""fabric-swap: the host's libfabric (and the libraries it needs) mounted over the image's, the MPI staying
the image's own; ranks start as in hybrid, one container each under the host's launcher.

This is what the CSCS Container Engine's CXI hook does (CSCS docs 'MPICH image',
https://docs.cscs.ch/software/container-engine/guidelines-images/image-mpich/) and the third of the LUMI
pipeline's approaches, "replace only libfabric and the lower-level libraries" ('Docker build pipeline for 4
different container approaches on LUMI' (2025-03-07)).

How the swap is made honest: the host's file is mounted over the very path the image's loader resolves
libfabric.so.1 to (an image fact, probed once per image), so it is the one loaded whether the MPI library
finds it through DT_RUNPATH (the PyPI wheels: $ORIGIN/mpich), DT_RPATH (which LD_LIBRARY_PATH cannot
override) or the system directories. The libraries the host's libfabric needs go into a directory of their
own on LD_LIBRARY_PATH, and FI_PROVIDER_PATH points at the host's provider plug-ins (or at an empty place),
so that the host's libfabric never opens the image's plug-ins, which belong to another release.
Compatibility is checked first (compat rule libfabric-swap-symbol-versions): a host library missing a
symbol version the image's MPI needs is refused with the reason, since the loader would refuse it anyway.
"""

from __future__ import annotations

from .. import compat
from ..launchers import LaunchPlan
from ..registry import APPROACHES
from ..spec.mpi_family import FAMILIES
from ..spec.stack import Stack
from .base import Approach, Refused, Undecided, benchmark_argv, container_plan, image_env
from .hybrid import per_rank_launch

MOUNT_DIR = "/opt/mpistack/host-fabric"
SWAP_RULES = ("libfabric-swap-symbol-versions",)
# why a host without a readable libfabric cannot swap (the doctor's plan rules say it in the same words)
NO_HOST_LIBFABRIC = ("the host has no libfabric.so.1 to swap in (ldconfig finds none; Debian: libfabric1), or "
                     "readelf (binutils) is missing to read it")


def ucx_mismatch(name: str, spec: Stack) -> str | None:
    """Why fabric-swap cannot serve the stack by its stack file alone, before any image is read, or None: an
    MPI whose one network layer is UCX (MPICH ch4:ucx) never loads libfabric. An Open MPI build whose preferred
    device is UCX may still load libfabric (its ofi components): whether the image's does is read from the
    image. The doctor's plan rules ask this too."""
    family = FAMILIES.get(spec.mpi.impl)
    if spec.mpi.netmod != "ucx" or family is None or not family.netmod_fixed:
        return None
    return (f"{name}'s MPI ({spec.mpi.impl} {spec.mpi.device}) carries its messages over UCX, not libfabric, so "
            "swapping libfabric changes nothing; bind runs the image with the host's MPI and its UCX instead, "
            "and a stack built over libfabric (MPICH ch4:ofi: pip-mpich, source-mpich-ofi) can swap")


def swap_facts(case, resources) -> compat.LibfabricSwap:
    """The host's and the image's libfabric facts as the compatibility rule reads them; Refused when either
    side is unknown (Undecided while the image's are not read yet)."""
    spec = case.stack.spec
    if spec is not None and (mismatch := ucx_mismatch(case.stack.name, spec)):
        raise Refused(f"fabric-swap refused: {mismatch}")
    host = resources.host.libfabric
    if host is None:
        raise Refused(NO_HOST_LIBFABRIC)
    image = resources.image_fabric.get(case.stack.name)
    if image is None:
        raise Undecided("fabric-swap: compatibility checked after the image is built: the libfabric facts of "
                        f"{case.stack.name}'s image are not known yet (read from the image when the campaign is "
                        "prepared; a dry run starts no container)")
    if image.problem:
        raise Refused(image.problem)
    return compat.LibfabricSwap(host_path=host.path, host_soname=host.soname, host_version=host.version,
                                host_defines=host.defines, image_library=image.mpi_library or "",
                                image_needs=image.needs)


# `refuses`: why the approach cannot serve a stack by its stack file alone (runtime files and the doctor ask it)
@APPROACHES.register("fabric-swap", image=True, mounts_host_libraries=True,
                     refuses=lambda spec: ucx_mismatch(spec.name, spec))
class FabricSwap(Approach):
    def mount_points(self, case, resources) -> list[str]:
        swap = swap_facts(case, resources)
        errors = [finding for finding in compat.check(case.stack.spec, approach="fabric-swap", swap=swap)
                  if finding.rule in SWAP_RULES and finding.severity == "error"]
        if errors:
            raise Refused(f"fabric-swap refused: {errors[0].message} [{errors[0].rule}: {errors[0].source}]")
        host, image = resources.host.libfabric, resources.image_fabric[case.stack.name]
        mounts = [f"{host.path}:{image.libfabric}:ro"]
        mounts += [f"{source}:{MOUNT_DIR}/lib/{name}:ro" for source, name in host.dependencies]
        if host.providers_dir:
            mounts.append(f"{host.providers_dir}:{MOUNT_DIR}/providers:ro")
        return mounts

    def plan(self, case, resources, output, options, label) -> LaunchPlan:
        mounts = self.mount_points(case, resources)
        host = resources.host.libfabric
        env = image_env(case, resources.host)
        env["LD_LIBRARY_PATH"] = f"{MOUNT_DIR}/lib"
        env["FI_PROVIDER_PATH"] = f"{MOUNT_DIR}/providers"  # absent without host plug-ins: built-in ones only
        argv, run = per_rank_launch(case, resources, label, env,
                                    benchmark_argv(case, "mpistack-bench", output, options), mounts)
        return container_plan(case, resources, argv, output, label, run, host_env=resources.host.root_env(),
                              swapped_libfabric=f"{host.path} {host.version or ''}".strip())
