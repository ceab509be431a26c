"""Rules on a host or an image (``doctor.system.SystemFacts``): the MPI that really runs, how many ranks
joined, the transports and libraries present, confinement, /dev/shm, oversubscription and the environment."""

from __future__ import annotations

from ...analysis.evidence import library_line
from ...runtime import SRUN_MPI
from ...spec.mpi_family import FAMILIES
from ..model import rule
from ..signatures import match
from ..system import CAPABILITY_LIBRARIES, SystemFacts

GROUPS = ("host", "image")
CAP_SYS_PTRACE = 19  # capability(7): the bit CMA single-copy needs in CapEff
OMPI_SHM_PER_RANK = 16 * 1024 * 1024  # Open MPI 5's shared-memory segment per local rank (its own request)
MIB = 1024 * 1024


def mpi_family(version: str | None) -> str | None:
    """mpich or openmpi, from an MPI_Get_library_version string; None when it names neither."""
    version = version or ""
    return "openmpi" if "Open MPI" in version else "mpich" if "MPICH" in version else None


@rule("mpi-library", GROUPS, "MPI: A Message-Passing Interface Standard 4.0, MPI_Get_library_version "
      "(https://www.mpi-forum.org/docs/mpi-4.0/mpi40-report.pdf)",
      "which MPI library the benchmark really loaded, from one launch of mpistack-bench")
def mpi_library(rule, facts: SystemFacts):
    if facts.probe_exit is None or facts.singletons:
        return  # no launch, or singletons (their own rule explains the missing JSON)
    line = library_line(facts.library_version)
    ran = mpi_family(facts.library_version)
    if line is None:
        hits = ", ".join(hit.signature.id for hit in match(facts.probe_output)) or "none"
        yield rule.finding("problem", "the probe launch did not report an MPI library",
                           f"{facts.launcher} -n {facts.ranks} mpistack-bench barrier exited with {facts.probe_exit} "
                           "without its JSON: MPI_Init failed or the ranks never started.",
                           "Read the output below; run the same command by hand with the MPI's debug output on.",
                           subject=facts.where, exit=facts.probe_exit, signatures=hits,
                           output=facts.probe_output.strip()[-600:])
    elif facts.mpi and ran and ran != facts.mpi:
        yield rule.finding("problem", f"expected {facts.mpi}, but {line} ran",
                           "The library that ran is not the stack's: LD_LIBRARY_PATH or a bound library replaced it.",
                           "Check LD_LIBRARY_PATH and the libraries bound into the container.", subject=facts.where,
                           library=line)
    else:
        yield rule.finding("ok", f"MPI library: {line}", "MPI_Get_library_version of the launched benchmark.",
                           subject=facts.where, library=line, launcher=facts.launcher)


@rule("singletons", GROUPS, "Apptainer user guide 'MPI', troubleshooting (https://apptainer.org/docs/user/latest/mpi.html); "
      "https://github.com/open-mpi/ompi/issues/13523",
      "MPI_Comm_size against the ranks started: a launcher the MPI cannot talk to starts N singletons")
def singletons(rule, facts: SystemFacts):
    if facts.comm_size is None or facts.ranks < 2:
        return
    if facts.comm_size != facts.ranks:
        yield rule.finding(
            "problem", f"{facts.ranks} ranks started, each saw a job of {facts.comm_size}",
            f"{facts.launcher} started the processes, but the MPI library could not reach its process manager, so "
            "every rank ran alone (rank 0 of 1): an MPI binary launched by the other implementation's launcher.",
            "Start each MPI with its own launcher ("
            + ", ".join(f"{family.launcher} for {family.name}" for family in FAMILIES.values()) + "); under "
            f"Slurm use srun --mpi={'/'.join(sorted(set(SRUN_MPI.values())))} as the MPI needs.",
            subject=facts.where, requested=facts.ranks, comm_size=facts.comm_size, singletons=facts.singletons,
            launcher=facts.launcher)
    else:
        yield rule.finding("ok", f"all {facts.ranks} ranks joined one job", "MPI_Comm_size equals the ranks started.",
                           subject=facts.where, comm_size=facts.comm_size)


@rule("oversubscription", GROUPS, "Open MPI FAQ 'Running MPI jobs', oversubscribing "
      "(https://www.open-mpi.org/faq/?category=running#oversubscribing); measured on a 2-core Debian 12 KVM guest: "
      "MPICH 4.0.2 (ch4:ucx), 4 ranks on 2 cores, allreduce 4-10 ms; Open MPI 4.1.4 with --oversubscribe stays at "
      "microseconds",
      "more ranks than cores: MPICH's busy-polling turns microseconds into milliseconds")
def oversubscription(rule, facts: SystemFacts):
    if not facts.cores or facts.ranks <= facts.cores:
        return
    family = mpi_family(facts.library_version) or facts.mpi
    verdict = "warning"
    meaning = (f"{facts.ranks} ranks share {facts.cores} cores. MPICH's ch4 device busy-polls while it waits, so "
               "ranks without a core steal time from the one they wait for: latencies become milliseconds "
               "(measured on a 2-core Debian 12 KVM guest: 4-10 ms per 4-rank allreduce).")
    if family == "openmpi":
        meaning = (f"{facts.ranks} ranks share {facts.cores} cores. Open MPI with --oversubscribe yields the core "
                   "while it waits (measured on a 2-core Debian 12 KVM guest: microseconds still), but results are "
                   "not comparable with a placement that has a core per rank.")
    yield rule.finding(verdict, f"oversubscribed: {facts.ranks} ranks on {facts.cores} cores", meaning,
                       "Run at most one rank per core (fewer ranks, or more nodes).", subject=facts.where, ranks=facts.ranks,
                       cores=facts.cores, mpi=family)


@rule("shm-size", GROUPS, "Open MPI help-opal-shmem-mmap.txt [target full] "
      "(https://github.com/open-mpi/ompi/blob/main/opal/mca/shmem/mmap/help-opal-shmem-mmap.txt); "
      "https://github.com/Azure/batch-shipyard/issues/8 (docker's 64 MB /dev/shm)",
      "/dev/shm against what the ranks' shared-memory segments need (podman's default: 64 MB)")
def shm_size(rule, facts: SystemFacts):
    if facts.shm_bytes is None:
        return
    need = facts.ranks * OMPI_SHM_PER_RANK
    hits = [hit for hit in match(facts.probe_output) if hit.signature.id in ("shm-target-full", "bus-error",
                                                                              "ucx-posix-oom")]
    evidence = {"shm_bytes": facts.shm_bytes, "needed_bytes": need, "ranks": facts.ranks}
    if hits:
        evidence["line"] = hits[0].line
    if hits or facts.shm_bytes < need:
        yield rule.finding("problem" if hits else "warning",
                           f"/dev/shm is {facts.shm_bytes / MIB:.0f} MiB, the ranks need about {need / MIB:.0f} MiB",
                           "MPI shared-memory transports back their segments with files in /dev/shm (Open MPI 5 asks "
                           "16 MiB per local rank); when it is full the job aborts (Bus error) or falls back to "
                           "slower paths.", "podman run --shm-size=1g (mpistack's containers get 1g) or --ipc host.",
                           subject=facts.where, **evidence)
    else:
        yield rule.finding("ok", f"/dev/shm: {facts.shm_bytes / MIB:.0f} MiB", "Enough for the ranks' segments.",
                           subject=facts.where, **evidence)


@rule("single-copy-confinement", GROUPS, "capabilities(7) CAP_SYS_PTRACE; Linux Yama documentation "
      "(https://www.kernel.org/doc/html/latest/admin-guide/LSM/Yama.html); https://github.com/pytorch/tensorpipe/issues/188",
      "whether ranks may attach each other's memory (CMA): CapEff bit 19, Yama ptrace_scope, seccomp")
def single_copy(rule, facts: SystemFacts):
    reasons = {}
    if facts.cap_eff is not None and not facts.cap_eff >> CAP_SYS_PTRACE & 1:
        reasons["CapEff"] = f"{facts.cap_eff:016x} (no bit 19, CAP_SYS_PTRACE)"
    if facts.ptrace_scope:
        reasons["ptrace_scope"] = facts.ptrace_scope
    if facts.seccomp == 2 and facts.in_container:
        reasons["Seccomp"] = "2 (a filter: docker's and podman's default profiles may refuse process_vm_readv)"
    if not reasons:
        yield rule.finding("ok", "cross-process memory attach (CMA) is allowed", "Single-copy transfers can be used.",
                           subject=facts.where)
        return
    yield rule.finding("warning", "single-copy (CMA) may be blocked",
                       "Without CAP_SYS_PTRACE, or under Yama or a seccomp filter, the kernel may refuse "
                       "process_vm_readv between ranks (processes of one user may still attach each other: "
                       "the transport a run records says which mechanism it used); shared-memory transports "
                       "then copy in and out for large messages, which may or may not cost bandwidth: let a "
                       "paired comparison judge it.",
                       "--cap-add SYS_PTRACE (and --security-opt seccomp=unconfined) for the containers, or "
                       "kernel.yama.ptrace_scope=0 on the host.", subject=facts.where, **reasons)


#: libfabric providers that carry messages between nodes at network speed (LINKx: shm beside one of them)
FABRIC_PROVIDERS = ("cxi", "verbs", "efa", "psm3", "opx", "lnx")
#: UCX transports between ranks of one node
UCX_SHARED_MEMORY = ("sysv", "posix", "cma", "xpmem", "knem")


def _inventory(rule, facts: SystemFacts, title: str, useful: list[str], present: str, absent: str, fix: str,
               **evidence):
    """The finding of what a library offers there (libfabric's providers, UCX's transports): ok when something
    ``useful`` is present, else a warning with what it means and the fix."""
    return rule.finding("ok" if useful else "warning", title, present if useful else absent, "" if useful else fix,
                        subject=facts.where, **evidence)


@rule("libfabric-providers", GROUPS, "fi_info(1) of libfabric; CSCS docs 'Container Engine resource hook' "
      "(https://docs.cscs.ch/software/container-engine/resource-hook/)",
      "which libfabric providers exist (fi_info -l): without cxi, verbs or efa, inter-node traffic goes over TCP")
def libfabric(rule, facts: SystemFacts):
    if facts.fi_providers is None:
        return
    fabric = [p for p in facts.fi_providers if p in FABRIC_PROVIDERS]
    wanted = facts.env.get("FI_PROVIDER")
    if wanted and wanted.split(";")[0].lstrip("^") not in facts.fi_providers and not wanted.startswith("^"):
        yield rule.finding("problem", f"FI_PROVIDER={wanted} names a provider libfabric does not have",
                           "libfabric finds no provider and MPI_Init fails (fi_getinfo -61).",
                           f"Set FI_PROVIDER to one of: {', '.join(facts.fi_providers)}.", subject=facts.where,
                           providers=facts.fi_providers)
    intel = [p for p in facts.fi_providers if p in ("psm2", "psm")]
    yield _inventory(rule, facts, f"libfabric providers: {', '.join(fabric) or 'no fabric provider'}", fabric,
                     "A fabric provider carries inter-node messages at network speed.",
                     f"No fabric provider ({', '.join(FABRIC_PROVIDERS)}): between nodes libfabric uses TCP"
                     + (f", unless an Intel Omni-Path or TrueScale adapter is there for {' or '.join(intel)} (builds "
                        "such as Debian's list these providers without one)." if intel else "."),
                     "On a Slingshot system, use the host's libfabric with cxi (the CXI hook).",
                     providers=facts.fi_providers)


@rule("ucx-transports", GROUPS, "ucx_info(1) of UCX (https://openucx.readthedocs.io/en/master/faq.html)",
      "which UCX transports exist (ucx_info -d): shared memory (sysv, posix, cma, xpmem) and the network")
def ucx(rule, facts: SystemFacts):
    if facts.ucx_transports is None:
        return
    tls = facts.env.get("UCX_TLS")
    if tls is not None and not tls.strip():
        yield rule.finding("problem", "UCX_TLS is set but empty", "MPICH over UCX aborts in MPI_Init "
                           "('The TLs list is empty').", "Unset UCX_TLS or name transports.", subject=facts.where)
    yield _inventory(rule, facts, f"UCX transports: {', '.join(facts.ucx_transports)}",
                     [t for t in facts.ucx_transports if t in UCX_SHARED_MEMORY],
                     "Shared-memory transports are present.",
                     "No shared-memory transport: ranks on one node talk over TCP.",
                     "Give the container /dev/shm (--ipc host) or UCX_TLS=sm,self.", transports=facts.ucx_transports)


@rule("linked-libraries", GROUPS, "ld.so(8), ldd(1); CSCS docs 'Cray MPICH' (https://docs.cscs.ch/software/communication/cray-mpich/)",
      "what the benchmark's MPI links: libfabric, libcxi, xpmem, CUDA, GTL, the MPI ABI; missing ones")
def linked(rule, facts: SystemFacts):
    if not facts.linked:
        return
    missing = {name: path for name, path in facts.linked.items() if "not found" in path}
    present = sorted({what for name in facts.linked for key, what in CAPABILITY_LIBRARIES.items()
                      if name.startswith(key) and name not in missing})
    if missing:
        yield rule.finding("problem", f"libraries not found: {', '.join(missing)}",
                           "The dynamic loader cannot find what the program needs: it will not start.",
                           "Install the library in the image, or bind the host's and set LD_LIBRARY_PATH.",
                           subject=facts.where, missing=sorted(missing))
    yield rule.finding("ok", "links: " + (", ".join(present) or "none of the known capability libraries"),
                       "What the MPI can use, as the loader resolves it.", subject=facts.where, present=present,
                       devices=facts.devices)


@rule("srun-mpi", GROUPS, "Slurm 'MPI Users Guide' (https://slurm.schedmd.com/mpi_guide.html); CSCS docs "
      "'Container Engine' (https://docs.cscs.ch/software/container-engine/run/)",
      "srun --mpi=list against the PMI type the MPI speaks (pmi2 for MPICH, pmix for Open MPI)")
def srun_mpi(rule, facts: SystemFacts):
    family = mpi_family(facts.library_version) or facts.mpi
    if facts.srun_mpi_types is None or family not in SRUN_MPI:
        return
    needed = SRUN_MPI[family]
    have = any(kind.startswith(needed) for kind in facts.srun_mpi_types)
    yield rule.finding("ok" if have else "problem", f"srun --mpi={needed} " + ("is available" if have else "is missing"),
                       f"{family} wires up through {needed}." + ("" if have else " Without it every rank runs as a "
                                                                   "singleton or fails in MPI_Init."),
                       "" if have else f"Build Slurm with {needed} support, or launch with the MPI's own mpiexec.",
                       subject=facts.where, srun_mpi_types=facts.srun_mpi_types, needed=needed)


@rule("probe-output-signatures", GROUPS, "the signature bank (data/doctor/signatures.toml), each entry with its source",
      "known messages in the probe launch's output")
def probe_signatures(rule, facts: SystemFacts):
    for hit in match(facts.probe_output):
        if hit.signature.id in ("shm-target-full", "bus-error", "ucx-posix-oom", "ranks-did-not-join"):
            continue  # shm-size and singletons explain these with their figures
        yield rule.finding(hit.verdict, hit.signature.id, hit.signature.meaning, hit.signature.fix,
                           subject=facts.where, source=hit.signature.source, line=hit.line)
