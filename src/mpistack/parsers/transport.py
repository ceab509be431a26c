"""Transport evidence: what an MPI library says it used, read from the output of a verbose probe launch.

The messages read here are the libraries' own, as printed on this kind of machine:

- UCX (`UCX_LOG_LEVEL=info`): one `ep_cfg[N]: tag(...) rma(...) am(...)` line per endpoint configuration,
  naming the transport/device pairs of each lane (ucp_worker.c in openucx/ucx).
- MPICH (`MPIR_CVAR_DEBUG_SUMMARY=1`): `==== UCX netmod Capability ====` for ch4:ucx; for ch4:ofi the
  `libfabric provider: NAME - ...` line of its capability set and `MPIDI_OFI_DEFAULT_SHORT_SEND_SIZE`.
- Open MPI (`OMPI_MCA_pml_base_verbose`, `OMPI_MCA_btl_base_verbose`, `OMPI_MCA_smsc_base_verbose`,
  `OMPI_MCA_mtl_ofi_verbose`, `OMPI_MCA_mpi_show_mca_params=all`): `select: component ob1 selected`,
  `mtl:ofi:prov: tcp;ofi_rxm` (the cm PML's provider), `mca: bml: Using vader btl for send
  to ...`, `mca_smsc_base_select: selected shared-memory single-copy component: cma` (5.x) or the
  `btl_vader_single_copy_mechanism=cma` parameter (4.x), and each BTL's `btl_X_eager_limit=N`.

Ranks on one node and ranks on different nodes may take different paths, so a record names both: ``intra`` and
``inter`` (a class: shm, tcp or fabric) with ``intra_via`` and ``inter_via`` (what carried them). MPICH's ch4:ofi
builds move messages between local ranks through MPICH's own shared memory (ch4 shm) unless MPIR_CVAR_NOLOCAL=1
("as though all processes are located on another node", https://github.com/pmodels/mpich/blob/main/src/util/
mpir_nodemap.c), and their summary names only the netmod's provider, so the intra-node path of
such a build is read from the environment the ranks ran with, not from the output. Debian's MPICH 4.0.2
(ch4:ucx) sends local messages through UCX: with UCX_TLS=tcp its 1 B latency is 3.6 us with or without
MPIR_CVAR_NOLOCAL=1, against 0.33 us by default (mpistack-bench latency, 2 ranks, on a 2-core Debian 12 KVM
guest). Open MPI names the node of each peer it picks a BTL for, so its two paths are told apart by node.

`parse_transport` is pure and never raises: noise gives an empty or partial answer.
"""

from __future__ import annotations

import re

#: the keys of a transport record (Provenance.transport); absent when unknown
# in the order a person reads them (mpistack show prints them so): what carried the messages first, how it
# was learnt last
KEYS = ("intra", "intra_via", "inter", "inter_via", "layer", "transports", "provider", "network", "single_copy",
        "eager_limit", "ns_separate", "ns_ranks", "cap_eff", "one_kernel", "one_kernel_separate", "mpi", "probe",
        "note")
#: the keys of the ranks' confinement (`confinement`), kept even from a probe that failed or hung
CONFINEMENT_KEYS = ("ns_separate", "ns_ranks", "cap_eff", "one_kernel", "one_kernel_separate")
#: the classes a path (and ``network``, the class of the library's network layer) may take
SHM, TCP, FABRIC = "shm", "tcp", "fabric"
MPICH_SHM = "MPICH ch4 shm"

#: each rank's line, said by mpistack-bench before MPI_Init when MPISTACK_CONFINEMENT=1 (bench/src/confinement.c)
_CONFINEMENT = re.compile(r"mpistack-bench: confinement host=(\S*) pid=(\d+) uid=(-?\d+) cap_eff=([0-9a-f]+)"
                          r"((?: ns_\w+=\d+)+)(?: boot=(\S+))?")
_UCX_EP_CFG = re.compile(r"ep_cfg\[\d+\]:\s*tag\(([^)]*)\)")
_UCX_WARN = re.compile(r"UCX\s+(?:WARN|ERROR)\s+(.+)")
_OFI_PROVIDER = re.compile(r"^libfabric provider:\s*(\S+)", re.MULTILINE)
_OFI_SHORT_SEND = re.compile(r"^MPIDI_OFI_DEFAULT_SHORT_SEND_SIZE:\s*(\d+)", re.MULTILINE)
_UCX_NETMOD = re.compile(r"^==== UCX netmod Capability ====", re.MULTILINE)
_OMPI_PML = re.compile(r"select: component (\w+) selected")  # the MTL under the cm PML prints this line too
_OMPI_PML_CHOSEN = re.compile(r"selected (\w+) best priority")  # pml_base_select's choice among PMLs alone
_OMPI_PML_UCX_FAILED = re.compile(r"PML (\w+) cannot be selected")
_OMPI_BTL = re.compile(r"mca: bml: Using (\w+) btl for send to")
#: the same line with the process's own node (its prefix) and the peer's, when Open MPI prints them
_OMPI_BTL_NODES = re.compile(r"\[([^:\]\s]+):\d+\] mca: bml: Using (\w+) btl for send to \S+ on node (\S+)")
_OMPI_SMSC = re.compile(r"selected shared-memory single-copy component: (\w+)")
_OMPI_NO_SMSC = re.compile(r"no shared-memory single-copy component available")
#: Open MPI 5's smsc/cma refusing a peer at attach time (no CAP_SYS_PTRACE): it copies twice, silently by default
_OMPI_SMSC_REFUSED = re.compile(r"mca_smsc_cma_module_get_endpoint: can not proceed[^\n]*")
_OMPI_VADER_COPY = re.compile(r"\bbtl_(?:vader|sm)_single_copy_mechanism=(\w+)")
_OMPI_EAGER = re.compile(r"\bbtl_(\w+?)_eager_limit=(\d+)")
# mtl_ofi_verbose >= 1 names the provider ("mtl:ofi:prov: tcp;ofi_rxm"); the "mtl:ofi:provider:" line that
# mtl_base_verbose prints names the provider's domain in Open MPI 4.1 ("eth0"), so it says only that ofi was used
_OMPI_MTL_PROVIDER = re.compile(r"mtl:ofi:prov:\s*(\S+)")
_OMPI_MTL_DOMAIN = re.compile(r"mtl:ofi:provider:\s*(\S+)")
_OMPI_CMA_DENIED = re.compile(r"CMA support is\s+not available[^.]*", re.IGNORECASE)

#: single-copy mechanisms by the name UCX gives their transport or Open MPI its component
_SINGLE_COPY = {"cma": "cma", "xpmem": "xpmem", "knem": "knem", "emulated": "none", "none": "none"}
_SHM_UCX = {"sysv", "posix", "cma", "xpmem", "knem", "self"}
# libfabric 1.17's "net" is its TCP sockets provider (protocol FI_PROTO_XNET, on an IP interface: fi_info -p net),
# which later releases ship as "tcp"
_TCP_PROVIDERS = {"tcp", "sockets", "udp", "net"}  # and their layered forms, tcp;ofi_rxm, udp;ofi_rxd, ...
_SHM_PROVIDERS = {"shm", "sm2"}
_SHM_BTLS = {"vader", "sm", "self", "smcuda"}


def parse_transport(text: str, mpi: str, nolocal: bool = False) -> dict[str, str]:
    """The transport record a probe's output supports (keys: KEYS); `mpi` is "mpich" or "openmpi"; `nolocal`:
    the ranks ran with MPIR_CVAR_NOLOCAL=1 (MPICH sends to local ranks through its netmod)."""
    try:
        found = _openmpi(text) if mpi == "openmpi" else _mpich(text, nolocal)
    except Exception:  # noqa: BLE001 - evidence is best effort: a library's odd output never fails a run
        found = {}
    if mpi in ("mpich", "openmpi"):
        found["mpi"] = mpi
    found.update(confinement(text))
    return {key: found[key] for key in KEYS if found.get(key)}


def confinement(text: str) -> dict[str, str]:
    """What the ranks' confinement lines say: ``ns_separate``, the namespaces (user, ipc, pid, mnt, net) in
    which ranks of one node differ, comma-separated, or ``none``; ``ns_ranks``, how many ranks said theirs;
    ``cap_eff``, their effective capabilities (``0``: none, ``mixed`` when they differ). Where ranks of several
    host names said one boot id (nodes that are namespaces of one machine, one kernel): ``one_kernel``, those
    host names (``none`` when the ranks said boot ids and no two host names share one), and
    ``one_kernel_separate``, the namespaces in which the ranks of that kernel differ. Empty without lines."""
    ranks = {}
    for host, pid, _uid, caps, spaces, boot in _CONFINEMENT.findall(text):
        ranks[host, pid] = (int(caps, 16), dict(item.split("=") for item in spaces.split()), boot)
    if not ranks:
        return {}
    found = {"ns_separate": _separate_by(ranks, lambda host, boot: host) or "none", "ns_ranks": str(len(ranks))}
    caps = {caps for caps, _, _ in ranks.values()}
    found["cap_eff"] = f"{caps.pop():x}" if len(caps) == 1 else "mixed"
    boots = {boot for _, _, boot in ranks.values() if boot}
    if boots:
        found["one_kernel"] = "none"
    for boot in boots:
        hosts = sorted({host for (host, _), (_, _, said) in ranks.items() if said == boot})
        if len(hosts) > 1:
            found["one_kernel"] = ",".join(hosts)
            found["one_kernel_separate"] = _separate_by(ranks, lambda host, said: said) or "none"
    return found


_NAMESPACE_ORDER = ("ns_user", "ns_ipc", "ns_pid", "ns_mnt", "ns_net")


def _separate_by(ranks: dict, group) -> str:
    """The namespaces in which ranks of one group (group(host, boot id)) differ, in reading order."""
    groups: dict[str, list[dict]] = {}
    for (host, _), (_, spaces, boot) in ranks.items():
        groups.setdefault(group(host, boot), []).append(spaces)
    separate = {name for members in groups.values() for name in members[0]
                if len({spaces.get(name) for spaces in members}) > 1}
    return ",".join(name[3:] for name in _NAMESPACE_ORDER if name in separate)


def _unique(items) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))


def _ucx(text: str) -> dict[str, str]:
    """The transports of the endpoints to other ranks (an endpoint to the process itself uses self/...)."""
    lanes = [lane.split() for lane in _UCX_EP_CFG.findall(text)]
    if not lanes:
        return {}
    peers = [lane for lane in lanes if not any(item.startswith("self/") for item in lane)] or lanes
    transports = _unique(item for lane in peers for item in lane)
    names = {item.split("/")[0] for item in transports}
    found = {"probe": "UCX_LOG_LEVEL=info", "layer": "ucx", "transports": ",".join(transports)}
    copy = next((_SINGLE_COPY[name] for name in ("xpmem", "knem", "cma") if name in names), None)
    if names <= _SHM_UCX:
        found["network"] = "shm"
        found["single_copy"] = copy or "none"  # every lane is listed: no zero-copy transport among them
    elif names & {"tcp"} and not names - _SHM_UCX - {"tcp"}:
        found["network"] = "tcp"
    else:
        found["network"] = "fabric"
    if copy and "single_copy" not in found:
        found["single_copy"] = copy
    found.update(_ucx_paths(peers))
    warning = _UCX_WARN.search(text)
    if warning:
        found["note"] = warning.group(1).strip()[:200]
    return found


def _ucx_class(names: set[str]) -> str:
    if names <= _SHM_UCX:
        return SHM
    return TCP if not names - _SHM_UCX - {"tcp"} else FABRIC


def _ucx_paths(peers: list[list[str]]) -> dict[str, str]:
    """An endpoint whose lanes are all shared memory reaches a rank on the same node; one with a network lane
    reaches a remote rank, or a local one where no shared-memory endpoint exists (UCX_TLS=tcp, no shared IPC)."""
    local = [lane for lane in peers if _ucx_class({item.split("/")[0] for item in lane}) == SHM]
    remote = [lane for lane in peers if lane not in local]
    found = {}
    for path, lanes in (("intra", local or remote), ("inter", remote)):
        if lanes:
            transports = _unique(item for lane in lanes for item in lane)
            found[path] = _ucx_class({item.split("/")[0] for item in transports})
            found[f"{path}_via"] = "UCX " + ",".join(transports)
    return found


def _provider_network(provider: str) -> str:
    if provider in _SHM_PROVIDERS:
        return "shm"
    if provider.split(";")[0] in _TCP_PROVIDERS:
        return "tcp"
    return "fabric"


def _mpich(text: str, nolocal: bool) -> dict[str, str]:
    found = _ucx(text)
    provider = _OFI_PROVIDER.search(text)
    if provider:
        name = provider.group(1)
        network = _provider_network(name)
        found.update(probe="MPIR_CVAR_DEBUG_SUMMARY=1", layer="ofi", provider=name, network=network,
                     inter=network, inter_via=f"libfabric provider {name}")
        if nolocal:
            found.update(intra=network, intra_via=f"libfabric provider {name} (MPIR_CVAR_NOLOCAL=1)")
        else:
            found.update(intra=SHM, intra_via=MPICH_SHM)
        short = _OFI_SHORT_SEND.search(text)
        if short:
            found["eager_limit"] = short.group(1)
    elif _UCX_NETMOD.search(text) and not found:
        found.update(probe="MPIR_CVAR_DEBUG_SUMMARY=1", layer="ucx")
    return found


def _openmpi(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    pmls = _unique(_OMPI_PML_CHOSEN.findall(text)) or _unique(_OMPI_PML.findall(text))
    failed = _OMPI_PML_UCX_FAILED.search(text)
    if pmls:
        found.update(probe="OMPI_MCA_pml_base_verbose=10", layer=pmls[0])
    ucx = _ucx(text)
    if pmls and pmls[0] == "ucx" and ucx:
        found.update({key: value for key, value in ucx.items() if key != "probe"})
    btls = _unique(_OMPI_BTL.findall(text))
    if btls and found.get("layer") != "ucx":
        # peers first: the BTL to the rank itself (self) says nothing about the transport between ranks
        btls.sort(key=lambda name: name == "self")
        found["transports"] = ",".join(btls)
        found.setdefault("layer", "ob1")
        found["network"] = ("shm" if set(btls) <= _SHM_BTLS else
                            "tcp" if set(btls) <= _SHM_BTLS | {"tcp"} else "fabric")
        eager = dict(_OMPI_EAGER.findall(text))
        first = btls[0]
        if first in eager:
            found["eager_limit"] = eager[first]
        found.update(_btl_paths(text, btls))
    mtl = _OMPI_MTL_PROVIDER.search(text)
    if mtl:
        # the cm PML sends every message, local or remote, through the MTL's provider
        network = _provider_network(mtl.group(1))
        found.update(provider=mtl.group(1), network=network, intra=network, inter=network,
                     intra_via=f"mtl ofi provider {mtl.group(1)}", inter_via=f"mtl ofi provider {mtl.group(1)}")
    elif domain := _OMPI_MTL_DOMAIN.search(text):
        found["transports"] = f"mtl ofi (domain {domain.group(1)})"
    smsc = _OMPI_SMSC.search(text)
    vader = _OMPI_VADER_COPY.search(text)
    refused = _OMPI_SMSC_REFUSED.search(text)
    if refused:
        found["single_copy"] = "none"
    elif smsc:
        found["single_copy"] = _SINGLE_COPY.get(smsc.group(1), smsc.group(1))
    elif _OMPI_NO_SMSC.search(text):
        found["single_copy"] = "none"
    elif vader and any(name in ("vader", "sm") for name in btls):
        found["single_copy"] = _SINGLE_COPY.get(vader.group(1), vader.group(1))
    denied = _OMPI_CMA_DENIED.search(text) or refused
    if denied:
        found["note"] = " ".join(denied.group(0).split())[:200]
    elif failed:
        found["note"] = f"PML {failed.group(1)} cannot be selected"
    return found


def _btl_class(btls: set[str]) -> str:
    return SHM if btls <= _SHM_BTLS else TCP if btls <= _SHM_BTLS | {"tcp"} else FABRIC


def _btl_paths(text: str, btls: list[str]) -> dict[str, str]:
    """The BTLs Open MPI chose for peers on its own node and on others (every peer counts as local where the
    lines name no node: a probe always has a local peer)."""
    local, remote = [], []
    for own, btl, peer in _OMPI_BTL_NODES.findall(text):
        if btl != "self":
            (local if own == peer else remote).append(btl)
    if not local and not remote:
        local = [name for name in btls if name != "self"] or btls
    found = {}
    for path, names in (("intra", _unique(local)), ("inter", _unique(remote))):
        if names:
            found[path] = _btl_class(set(names))
            found[f"{path}_via"] = "btl " + ",".join(names)
    return found


def path_of(record: dict | None, nodes: int | None) -> tuple[str | None, str]:
    """The class and carrier of the path the ranks of a placement took: between ranks of one node when
    ``nodes`` is 1, between nodes otherwise. Records stored before paths were recorded fall back to their
    ``network`` (and to MPICH's shared memory where the probe noted it)."""
    record = record or {}
    path = "intra" if (nodes or 1) <= 1 else "inter"
    if record.get(path):
        return record[path], record.get(f"{path}_via", "")
    if path == "intra" and "MPICH's shared memory" in (record.get("note") or ""):
        return SHM, MPICH_SHM
    return record.get("network"), record.get("transports") or record.get("provider") or ""


def describe_transport(record: dict | None) -> str:
    """One line for a person: the path between ranks of one node and between nodes where recorded (else the
    layer, transports or provider and network class), the single-copy mechanism, the eager limit, the note."""
    if not record:
        return ""
    paths = [f"{name} {record[path]}" + (f" ({record[path + '_via']})" if record.get(path + "_via") else "")
             for path, name in (("intra", "intra-node"), ("inter", "inter-node")) if record.get(path)]
    parts = paths or [" ".join(part for part in (
        record.get("layer"), record.get("transports"),
        f"provider {record['provider']}" if record.get("provider") else None,
        f"({record['network']})" if record.get("network") else None) if part)]
    parts += [f"single-copy {record['single_copy']}" if record.get("single_copy") else "",
              f"eager limit {record['eager_limit']} B" if record.get("eager_limit") else "",
              f"namespaces apart: {record['ns_separate']}" if record.get("ns_separate") else "",
              f"one kernel under {record['one_kernel']}" if record.get("one_kernel", "none") != "none" else ""]
    text = (", " if paths else " ").join(part for part in parts if part)
    note = record.get("note")
    return "; ".join(part for part in (text, note) if part)
