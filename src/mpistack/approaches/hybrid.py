"""hybrid: the host's launcher starts one container per rank and the process-management interface crosses
the boundary (the model of the CSCS Container Engine under srun, and of Apptainer's hybrid mode).

MPICH ranks speak PMI-1/2: on this machine to MPICH's Hydra in its PMI_PORT mode (the wire protocol goes over
TCP, which crosses into a container with --network host), under Slurm to srun's PMI-2 plug-in, whose socket
each container keeps as a file descriptor.

Open MPI ranks are PMIx clients: on this machine of the host's `mpirun.openmpi` (its daemon is their PMIx
server), under Slurm of srun's PMIx plug-in (`srun --mpi=pmix`, with PMIX_MCA_psec=native as the CSCS
guide sets). A PMIx v4 or later server publishes its rendezvous as a TCP address in PMIX_SERVER_URI*, which
reaches a container on the host network; the PMIX_* and OMPI_* variables the launcher sets for each rank are
passed in, and the ranks use PMIx's hash datastore (PMIX_MCA_gds=hash), which every PMIx release has, not the
shared-memory one kept in the server's own directory. Where the image's PMIx and the host's cannot talk
(compat.pmix_mismatch, after PMIx's published cross-version statement) the case is refused before it
launches.

Without root, rootless podman makes every rank uid 0 in its container while mpirun runs as the user, and a
PMIx server compares the uid each client reports with its job's (psec native; over TCP the uid is the
client's own word): the ranks were refused and waited. mpirun is therefore started in the user namespace the
user's containers share (`podman unshare`), where it is uid 0 as well. srun's PMIx server is slurmstepd's, out
of reach: such a case is refused before it launches.
"""

from __future__ import annotations

from ..compat import pmix_mismatch, stack_pmix_version
from ..launchers import LaunchPlan
from ..registry import APPROACHES, LAUNCHERS
from ..runtime import SRUN_MPI
from .base import Approach, Refused, benchmark_argv, container, container_plan, image_env, rank_starter

# Rank-private variables the host launcher sets for each rank: passed into its container.
PMI_ENV_PATTERNS = ["PMI_*", "MPIR_CVAR_*", "HYDI_*", "HYDRA_*"]
PMIX_ENV_PATTERNS = ["PMIX_*", "OMPI_*"]
#: what an Open MPI rank in a container sets for its PMIx client (see the module's text)
PMIX_CLIENT_ENV = {"PMIX_MCA_gds": "hash"}
OPEN_MPI_AS_ROOT = ["OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"]
ROOTLESS_PMIX_REFUSAL = (
    "Open MPI ranks in {runtime} containers without root are uid 0 inside, while the {launcher} launcher's "
    "PMIx server runs as the user on the node and checks the uid its clients report against its job's (PMIx "
    "psec native): they would wait until killed. Run it as root, in one container (approach container), "
    "or with Charliecloud (its ranks are the user)")


def pmi_mismatch(stack_name: str, mpi_impl: str, image_pmix: str | None = None,
                 host_pmix: str | None = None) -> str | None:
    """Why the host launcher cannot start the image's MPI in a container per rank (the doctor gives the same):
    an Open MPI whose PMIx cannot talk to the host's PMIx server."""
    if mpi_impl == "mpich":
        return None
    mismatch = pmix_mismatch(image_pmix, host_pmix)
    return f"{stack_name} is {mpi_impl}: {mismatch}" if mismatch else None


def per_rank_launch(case, resources, label: str, env: dict[str, str], argv: list[str], mounts: list[str] = (),
                    pmix_client: str | None = None):
    """The launcher's per-rank start (mpiexec.mpich -pmi-port, mpirun.openmpi, or srun --mpi=...) of
    podman run ... --env 'PMI_*' IMAGE ARGV, and its container. `pmix_client`: the PMIx the ranks are
    clients of, when not the image's own (bind mounts the host's)."""
    mpi = case.stack.mpi_impl
    host_pmix = resources.host.pmix_version
    client = pmix_client or (stack_pmix_version(case.stack.spec) if case.stack.spec is not None else None)
    mismatch = pmi_mismatch(case.stack.name, mpi, client, host_pmix)
    if mismatch:
        raise Refused(mismatch)
    can, wire = LAUNCHERS.get(resources.launcher).can, SRUN_MPI[mpi]
    if not can.per_rank_containers or wire not in can.pmi:
        raise Refused(f"the {resources.launcher} launcher cannot start a container per rank that wires up "
                      f"through {wire} (it offers {', '.join(can.pmi) or 'none'})")
    if mpi == "openmpi":
        env = {**env, **PMIX_CLIENT_ENV}
        passthrough = [*PMI_ENV_PATTERNS, *PMIX_ENV_PATTERNS]
    else:
        passthrough = PMI_ENV_PATTERNS
    runtime = resources.runtime_for(case)
    start = rank_starter(resources).ranks_in_containers(mpi, case.placement)
    # a PMIx server checks the uid each client reports (psec); MPICH's PMI-2 wire-up does not
    another_uid = wire == "pmix" and runtime.ranks_are_another_uid()
    if another_uid and not start.serves_pmix:
        raise Refused(ROOTLESS_PMIX_REFUSAL.format(runtime=runtime.name, launcher=resources.launcher))
    run = container(case, resources, label, env, argv, per_rank=True, mounts=list(mounts),
                    passthrough=passthrough, preserve_fds=start.preserve_fds)
    launch = runtime.launch_argv(start.argv, run)
    if another_uid:
        # mpirun (the PMIx server) started where the ranks' uid 0 is its own uid too, and told it may be root
        launch = runtime.in_ranks_user_namespace(["env", *OPEN_MPI_AS_ROOT, *launch])
    return launch, run


@APPROACHES.register("hybrid", image=True)
class Hybrid(Approach):
    def plan(self, case, resources, output, options, label) -> LaunchPlan:
        argv, run = per_rank_launch(case, resources, label, image_env(case, resources.host),
                                    benchmark_argv(case, "mpistack-bench", output, options))
        return container_plan(case, resources, argv, output, label, run, host_env=resources.host.root_env())
