"""Transport evidence: what an MPI library says it used, read from the output of a verbose probe launch.

The messages read here are the libraries' own, as printed on this kind of machine:

- UCX (`UCX_LOG_LEVEL=info`): one `ep_cfg[N]: tag(...) rma(...) am(...)` line per endpoint configuration,
  naming the transport/device pairs of each lane (ucp_worker.c in openucx/ucx).
- MPICH (`MPIR_CVAR_DEBUG_SUMMARY=1`): `==== UCX netmod Capability ====` for ch4:ucx; for ch4:ofi the
  `libfabric provider: NAME - ...` line of its capability set and `MPIDI_OFI_DEFAULT_SHORT_SEND_SIZE`.
- Open MPI (`OMPI_MCA_pml_base_verbose`, `OMPI_MCA_btl_base_verbose`, `OMPI_MCA_smsc_base_verbose`,
  `OMPI_MCA_mpi_show_mca_params=all`): `select: component ob1 selected`, `mca: bml: Using vader btl for send
  to ...`, `mca_smsc_base_select: selected shared-memory single-copy component: cma` (5.x) or the
  `btl_vader_single_copy_mechanism=cma` parameter (4.x), and each BTL's `btl_X_eager_limit=N`.

`parse_transport` is pure and never raises: noise gives an empty or partial answer.
"""

from __future__ import annotations

import re

#: the keys of a transport record (Provenance.transport); absent when unknown
# in the order a person reads them (mpistack show prints them so): what carried the messages first, how it
# was learnt last
KEYS = ("layer", "transports", "provider", "network", "single_copy", "eager_limit", "mpi", "probe", "note")

_UCX_EP_CFG = re.compile(r"ep_cfg\[\d+\]:\s*tag\(([^)]*)\)")
_UCX_WARN = re.compile(r"UCX\s+(?:WARN|ERROR)\s+(.+)")
_OFI_PROVIDER = re.compile(r"^libfabric provider:\s*(\S+)", re.MULTILINE)
_OFI_SHORT_SEND = re.compile(r"^MPIDI_OFI_DEFAULT_SHORT_SEND_SIZE:\s*(\d+)", re.MULTILINE)
_UCX_NETMOD = re.compile(r"^==== UCX netmod Capability ====", re.MULTILINE)
_OMPI_PML = re.compile(r"select: component (\w+) selected")
_OMPI_PML_UCX_FAILED = re.compile(r"PML (\w+) cannot be selected")
_OMPI_BTL = re.compile(r"mca: bml: Using (\w+) btl for send to")
_OMPI_SMSC = re.compile(r"selected shared-memory single-copy component: (\w+)")
_OMPI_NO_SMSC = re.compile(r"no shared-memory single-copy component available")
_OMPI_VADER_COPY = re.compile(r"\bbtl_(?:vader|sm)_single_copy_mechanism=(\w+)")
_OMPI_EAGER = re.compile(r"\bbtl_(\w+?)_eager_limit=(\d+)")
_OMPI_MTL_PROVIDER = re.compile(r"mtl:ofi:provider:\s*(\S+)")
_OMPI_CMA_DENIED = re.compile(r"CMA support is\s+not available[^.]*", re.IGNORECASE)

#: single-copy mechanisms by the name UCX gives their transport or Open MPI its component
_SINGLE_COPY = {"cma": "cma", "xpmem": "xpmem", "knem": "knem", "emulated": "none", "none": "none"}
_SHM_UCX = {"sysv", "posix", "cma", "xpmem", "knem", "self"}
_TCP_PROVIDERS = {"tcp", "sockets", "udp", "tcp;ofi_rxm", "udp;ofi_rxd", "sockets;ofi_rxm"}
_SHM_PROVIDERS = {"shm", "sm2"}
_SHM_BTLS = {"vader", "sm", "self", "smcuda"}


def parse_transport(text: str, mpi: str) -> dict[str, str]:
    """The transport record a probe's output supports (keys: KEYS); `mpi` is "mpich" or "openmpi"."""
    try:
        found = _openmpi(text) if mpi == "openmpi" else _mpich(text)
    except Exception:  # noqa: BLE001 - evidence is best effort: a library's odd output never fails a run
        found = {}
    if mpi in ("mpich", "openmpi"):
        found["mpi"] = mpi
    return {key: found[key] for key in KEYS if found.get(key)}


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
    warning = _UCX_WARN.search(text)
    if warning:
        found["note"] = warning.group(1).strip()[:200]
    return found


def _provider_network(provider: str) -> str:
    if provider in _SHM_PROVIDERS:
        return "shm"
    if provider in _TCP_PROVIDERS or provider.split(";")[0] in {"tcp", "sockets", "udp"}:
        return "tcp"
    return "fabric"


def _mpich(text: str) -> dict[str, str]:
    found = _ucx(text)
    provider = _OFI_PROVIDER.search(text)
    if provider:
        name = provider.group(1)
        found.update(probe="MPIR_CVAR_DEBUG_SUMMARY=1", layer="ofi", provider=name, network=_provider_network(name))
        short = _OFI_SHORT_SEND.search(text)
        if short:
            found["eager_limit"] = short.group(1)
    elif _UCX_NETMOD.search(text) and not found:
        found.update(probe="MPIR_CVAR_DEBUG_SUMMARY=1", layer="ucx")
    return found


def _openmpi(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    pmls = _unique(_OMPI_PML.findall(text))
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
    mtl = _OMPI_MTL_PROVIDER.search(text)
    if mtl:
        found.update(provider=mtl.group(1), network=_provider_network(mtl.group(1)))
    smsc = _OMPI_SMSC.search(text)
    vader = _OMPI_VADER_COPY.search(text)
    if smsc:
        found["single_copy"] = _SINGLE_COPY.get(smsc.group(1), smsc.group(1))
    elif _OMPI_NO_SMSC.search(text):
        found["single_copy"] = "none"
    elif vader and any(name in ("vader", "sm") for name in btls):
        found["single_copy"] = _SINGLE_COPY.get(vader.group(1), vader.group(1))
    denied = _OMPI_CMA_DENIED.search(text)
    if denied:
        found["note"] = " ".join(denied.group(0).split())[:200]
    elif failed:
        found["note"] = f"PML {failed.group(1)} cannot be selected"
    return found


def describe_transport(record: dict | None) -> str:
    """One line for a person: layer, transports or provider, network class, single-copy mechanism."""
    if not record:
        return ""
    parts = [record.get("layer"), record.get("transports"),
             f"provider {record['provider']}" if record.get("provider") else None,
             f"({record['network']})" if record.get("network") else None,
             f"single-copy {record['single_copy']}" if record.get("single_copy") else None,
             f"eager limit {record['eager_limit']} B" if record.get("eager_limit") else None]
    text = " ".join(part for part in parts if part)
    note = record.get("note")
    return "; ".join(part for part in (text, note) if part)
