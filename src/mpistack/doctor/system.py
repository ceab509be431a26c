"""What the host and image rules look at: one shell script, run on the host or inside an image with the
engine, prints what matters for MPI (cores, /dev/shm, capabilities, Yama, seccomp, libfabric providers, UCX
transports, what the benchmark links, devices, the MPI environment, srun's PMI plug-ins) and launches
mpistack-bench once, whose JSON says which MPI library ran and how many ranks joined.

The parsing is pure (``parse_report``), so the rules are tested with real output of both places.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field

from ..engines.base import SHM_SIZE, ContainerRun

MARK = "@@mpistack-doctor "
PROBE_TIMEOUT = 60  # seconds the probe launch may take (MPICH's Finalize over UCX tcp can hang)
#: the MPI environment worth showing and checking
ENV_PATTERN = r"^(FI_|UCX_|OMPI_|PMIX_|PMI_|MPIR_|MPICH_|SLURM_MPI_TYPE|LD_LIBRARY_PATH)"
#: libraries the MPI may link that decide what it can do (name pattern -> what it gives)
CAPABILITY_LIBRARIES = {
    "libfabric": "libfabric (OFI providers: cxi, shm, tcp)",
    "libucp": "UCX",
    "libcxi": "Slingshot CXI",
    "libxpmem": "xpmem single-copy",
    "libcudart": "CUDA runtime",
    "libcuda.so": "CUDA driver",
    "libmpi_gtl": "Cray GPU transport layer (GTL)",
    "libmpi_abi": "MPI-5 standard ABI",
    "libmpich.so": "MPICH ABI (libmpich.so.12)",
    "libmpi.so.12": "MPICH ABI (libmpi.so.12)",
    "libmpi.so.40": "Open MPI ABI (libmpi.so.40)",
}


@dataclass
class SystemFacts:
    where: str  # "host" or "image NAME"
    in_container: bool = False
    mpi: str | None = None  # the MPI family expected (mpich, openmpi), when known
    launcher: str = ""
    ranks: int = 2
    cores: int | None = None
    shm_bytes: int | None = None
    cap_eff: int | None = None
    seccomp: int | None = None  # 0 off, 1 strict, 2 filter
    ptrace_scope: int | None = None  # Yama; None when the kernel has no Yama
    fi_providers: list[str] | None = None  # None: fi_info is not installed there
    ucx_transports: list[str] | None = None  # None: ucx_info is not installed there
    linked: dict[str, str] = field(default_factory=dict)  # soname -> path, or "not found"
    devices: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    srun_mpi_types: list[str] | None = None  # None: no srun
    probe_exit: int | None = None
    probe_output: str = ""
    library_version: str | None = None
    comm_size: int | None = None  # ranks the benchmark saw (from its JSON)
    singletons: int = 0  # launches that each saw one rank only


def probe_script(launch: list[str] | None, bench: str) -> str:
    """The script, given the probe's launch command (None: no MPI launch) and the benchmark program."""
    quote = shlex.quote
    parts = [
        f"echo {quote(MARK + 'cores')}; nproc 2>/dev/null",
        f"echo {quote(MARK + 'shm')}; df -B1 --output=size /dev/shm 2>/dev/null | tail -n 1",
        f"echo {quote(MARK + 'status')}; grep -E '^(CapEff|Seccomp):' /proc/self/status",
        f"echo {quote(MARK + 'yama')}; cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null",
        f"echo {quote(MARK + 'fi_info')}; command -v fi_info >/dev/null && fi_info -l 2>&1 || echo '(absent)'",
        f"echo {quote(MARK + 'ucx_info')}; command -v ucx_info >/dev/null && ucx_info -d 2>&1 | grep -E 'Transport:' "
        "|| echo '(absent)'",
        f"echo {quote(MARK + 'ldd')}; P=$(command -v {quote(bench)} || echo {quote(bench)}); ldd \"$P\" 2>&1",
        f"echo {quote(MARK + 'devices')}; ls -d /dev/xpmem /dev/cxi* /dev/nvidia[0-9]* /dev/kfd 2>/dev/null",
        f"echo {quote(MARK + 'env')}; env | grep -E {quote(ENV_PATTERN)}",
        f"echo {quote(MARK + 'srun')}; command -v srun >/dev/null && srun --mpi=list 2>&1 || echo '(absent)'",
    ]
    if launch:
        argv = ["timeout", str(PROBE_TIMEOUT), *launch, bench, "barrier", "-i", "10", "-x", "1", "--format", "json"]
        parts.append(f"echo {quote(MARK + 'probe')}; {shlex.join(argv)} 2>&1; echo {quote(MARK + 'exit')} $?")
    return "\n".join(parts) + "\n"


def sections(text: str) -> dict[str, str]:
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(MARK):
            name, _, rest = line[len(MARK):].partition(" ")
            current = name
            found[current] = [rest] if rest else []
        elif current is not None:
            found[current].append(line)
    return {name: "\n".join(lines) for name, lines in found.items()}


def _int(text: str | None) -> int | None:
    match = re.search(r"-?\d+", text or "")
    return int(match.group(0)) if match else None


def _json_documents(text: str) -> list[dict]:
    """The JSON documents mpistack-bench printed (one per rank 0: several when ranks ran as singletons)."""
    documents, decoder = [], json.JSONDecoder()
    position = text.find("{")
    while position != -1:
        try:
            document, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(document, dict) and str(document.get("schema", "")).startswith("mpistack-bench"):
            documents.append(document)
        position = text.find("{", end)
    return documents


def parse_report(text: str, facts: SystemFacts) -> SystemFacts:
    """Fill ``facts`` from the script's output."""
    part = sections(text)
    facts.cores = _int(part.get("cores"))
    facts.shm_bytes = _int(part.get("shm"))
    status = part.get("status", "")
    if match := re.search(r"CapEff:\s*([0-9a-fA-F]+)", status):
        facts.cap_eff = int(match.group(1), 16)
    if match := re.search(r"Seccomp:\s*(\d+)", status):
        facts.seccomp = int(match.group(1))
    facts.ptrace_scope = _int(part.get("yama"))
    fi = part.get("fi_info", "")
    if "(absent)" not in fi:
        # `fi_info -l` prints "name:" then its version; hooks (ofi_hook_*) are not providers
        facts.fi_providers = [name for name in re.findall(r"^(\S+):\s*$", fi, re.MULTILINE)
                              if not name.startswith("ofi_hook")]
    ucx = part.get("ucx_info", "")
    if "(absent)" not in ucx:
        facts.ucx_transports = sorted(set(re.findall(r"Transport:\s*(\S+)", ucx)))
    for line in part.get("ldd", "").splitlines():
        if match := re.match(r"\s*(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$", line):
            facts.linked[match.group(1)] = match.group(2).strip()
    facts.devices = [line.strip() for line in part.get("devices", "").splitlines() if line.strip()]
    for line in part.get("env", "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts.env[key] = value
    srun = part.get("srun")
    if srun is not None and "(absent)" not in srun:
        from ..launchers.slurm import parse_mpi_plugins

        # None when srun cannot answer (no slurm.conf reachable)
        facts.srun_mpi_types = sorted(parse_mpi_plugins(srun)) or None
    if "probe" in part:
        facts.probe_output = part["probe"]
        facts.probe_exit = _int(part.get("exit"))
        documents = _json_documents(facts.probe_output)
        if documents:
            mpi = documents[0].get("mpi", {})
            facts.library_version = mpi.get("library_version")
            facts.comm_size = min(int(doc.get("mpi", {}).get("ranks") or 0) for doc in documents) or None
            facts.singletons = len(documents) if facts.comm_size == 1 and facts.ranks > 1 else 0
        got_one = re.findall(r"processes \(got 1\)", facts.probe_output)
        if got_one and facts.ranks > 1:
            facts.comm_size, facts.singletons = 1, len(got_one)
    return facts


# -- running the script ---------------------------------------------------------------------------
# The host's script runs as a case of the local launcher, the image's in a container of the engine, so that
# at the limit every process the script started ends (Hydra's proxies and ranks, in sessions of their own),
# and its container with them.


def launch_argv(launcher: str, ranks: int) -> list[str]:
    """``LAUNCHER -n RANKS`` with the options of the launcher's own family (Open MPI's --oversubscribe): the
    launcher may be another family's than the MPI's, which is what the singleton check is for."""
    from ..runtime import mpiexec_argv

    family = "openmpi" if re.search(r"openmpi|mpirun$|orterun|prterun", launcher) else "mpich"
    return mpiexec_argv(launcher, family, ranks)


def root_env() -> dict[str, str]:
    from ..approaches.base import HostFacts

    return HostFacts(is_root=os.geteuid() == 0).root_env()


def probe_host(mpi: str, *, ranks: int = 2, launcher: str | None = None, bench: str | None = None,
               env: dict[str, str] | None = None) -> SystemFacts:
    """Run the script on this machine for the host's ``mpi`` (its cached mpistack-bench, built when missing)."""
    from ..images.host_bench import build_host_bench, host_bench_path
    from ..launchers import LaunchPlan, LocalLauncher
    from ..launchers.local import HOST_LAUNCHERS

    if bench is None:
        path = host_bench_path(mpi)
        bench = str(path if path.is_file() else build_host_bench(mpi))
    launcher = launcher or HOST_LAUNCHERS[mpi]
    facts = SystemFacts(where=f"host ({mpi})", mpi=mpi, launcher=launcher, ranks=ranks)
    script = probe_script(launch_argv(launcher, ranks), bench)
    execution = LocalLauncher().execute(LaunchPlan(["sh", "-c", script], {**root_env(), **(env or {})}, None),
                                        timeout=PROBE_TIMEOUT + 30)
    return parse_report(execution.stdout + execution.stderr, facts)


def probe_image(image: str, *, engine=None, ranks: int = 2, launcher: str | None = None,
                env: dict[str, str] | None = None, shm_size: str = SHM_SIZE) -> SystemFacts:
    """Run the script inside ``image`` with the engine, confined as a campaign's container case (podman's
    default confinement, mpistack's /dev/shm size unless ``shm_size`` says otherwise)."""
    from ..approaches.base import HostFacts
    from ..engines.podman import PodmanEngine

    engine = engine or PodmanEngine()
    labels = engine.labels(image)
    mpi = (labels.get("org.mpistack.mpi") or "").split("-")[0] or None
    launcher = launcher or labels.get("org.mpistack.launcher") or "mpiexec"
    facts = SystemFacts(where=f"image {image}", in_container=True, mpi=mpi, launcher=launcher, ranks=ranks)
    script = probe_script(launch_argv(launcher, ranks), "mpistack-bench")
    root = HostFacts(is_root=True).root_env()  # root in the container, also under rootless podman
    run = engine.run(ContainerRun(image=image, argv=["sh", "-c", script], env={**root, **(env or {})},
                                  shm_size=shm_size), timeout=PROBE_TIMEOUT + 60)
    return parse_report(run.stdout + run.stderr, facts)
