"""Rules on stored results and their analysis (``doctor.evidence.Performance``): bandwidth or latency of the TCP
class, an intra-node path slower than the network, a container loss only above the eager limit, and a
small-message loss that the same stack shows natively."""

from __future__ import annotations

from statistics import median

from ...analysis.answers import SAME_STACK, SYSTEM
from ...analysis.classes import SizeRanges, format_size
from ...analysis.matrix import Column
from ..evidence import Performance
from ..model import rule

#: Without a TCP calibration measured here, the bandwidth TCP reaches through a fabric's host (a fallback when the
#: provider is missing): the CSCS Container Engine pages show 1280, 3121 and 3764 MB/s at 4 MiB without the CXI
#: hook against about 24000 MB/s with it.
TYPICAL_TCP_MBPS = 5000.0
FABRIC_FACTOR = 3.0  # a comparable row this many times faster shows what the network could do
#: Without a native shared-memory row of the same stack, what small messages take between ranks of one node over
#: shared memory: measured here, Debian MPICH 4.0.2 over UCX (sysv/cma) 0.13 to 0.55 us at 1 B, against about 6 us
#: with UCX_TLS=tcp; the OSU intra-node latencies published for current CPUs are below 1 us as well.
TYPICAL_SHM_LATENCY_US = 1.0
LATENCY_FACTOR = 4.0  # small-message latency this many times the shared-memory figure is TCP's, not memory's


def _cell(key):
    return (key.scope, key.stack, key.approach, key.variant)


def _subject(key) -> str:
    return f"{key.stack} {key.approach}" + ("" if key.variant == "default" else f"+{key.variant}") + \
        f" ({key.benchmark} {key.buffers}, {key.ranks} ranks on {key.nodes} node(s), {key.scope})"


def _calibration(perf: Performance, key) -> tuple[float, str] | None:
    """The peak bandwidth of a row whose launches said they used TCP, at the same placement and scope."""
    best = None
    for row in perf.rows.values():
        other = row.key
        if (other.scope, other.benchmark, other.metric, other.nodes) != (key.scope, key.benchmark, key.metric,
                                                                       key.nodes):
            continue
        if perf.transport_of(row).get("network") == "tcp" and (peak := perf.peak(row)):
            if best is None or peak[1] > best[0]:
                best = (peak[1], f"{other.stack} {other.approach}+{other.variant} (transport: tcp)")
    return best


@rule("tcp-class-bandwidth", "performance",
      "CSCS docs 'Container Engine' and 'MPICH image' (https://docs.cscs.ch/software/container-engine/resource-hook/, "
      "https://docs.cscs.ch/software/container-engine/guidelines-images/image-mpich/): osu_bw without the CXI hook "
      "1280-3764 MB/s against about 24000 MB/s with it",
      "peak bandwidth at TCP's level (a TCP calibration stored here, else typical figures) while a comparable "
      "row reaches the fabric's")
def tcp_class(rule, perf: Performance):
    for row in perf.rows.values():
        key = row.key
        if key.metric != "bandwidth" or not row.launches or not (peak := perf.peak(row)):
            continue
        calibration = _calibration(perf, key)
        if perf.transport_of(row).get("network") == "tcp":
            continue  # the calibration itself: TCP by its own account
        ceiling, basis = ((calibration[0] * 1.25, f"TCP measured here: {calibration[1]} peaks at "
                           f"{calibration[0]:.0f} MB/s") if calibration else
                          (TYPICAL_TCP_MBPS, f"typical TCP fallback below {TYPICAL_TCP_MBPS:.0f} MB/s"))
        if peak[1] > ceiling:
            continue
        better = [(perf.peak(other), other.key) for other in perf.rows.values()
                  if other is not row and other.launches and (other.key.scope, other.key.benchmark, other.key.metric,
                                                               other.key.nodes, other.key.buffers)
                  == (key.scope, key.benchmark, key.metric, key.nodes, key.buffers)]
        better = [(p, k) for p, k in better if p and p[1] >= FABRIC_FACTOR * peak[1]]
        if not better and not calibration:
            continue  # nothing here shows the network could do better: this may be all it has
        reference = max(better, key=lambda item: item[0][1]) if better else None
        evidence = {"peak_MBps": round(peak[1], 2), "at": format_size(peak[0]), "tcp_basis": basis}
        if reference:
            evidence.update(comparable=f"{reference[1].stack} {reference[1].approach}",
                            comparable_peak_MBps=round(reference[0][1], 2),
                            ratio=round(peak[1] / reference[0][1], 3))
        yield rule.finding(
            "problem", f"TCP-class bandwidth: {peak[1]:.0f} MB/s at {format_size(peak[0])}",
            "The bandwidth plateaus where TCP does, far below the fabric: the MPI fell back to TCP (no cxi, verbs "
            "or efa provider in the container, or a provider forced to tcp).",
            "Check the provider inside the container (fi_info -p cxi exits 61 when cxi is absent); bring the host's "
            "libfabric and /dev/cxi* in (the CSCS CXI hook: com.hooks.cxi.enabled = \"true\").",
            subject=_subject(key), cell=_cell(key), **evidence)


def _small_medians(row, ranges: SizeRanges) -> dict:
    """Per small-message size (the analysis's regime), the median over the row's launches."""
    return {size: median(values) for size, values in row.figures.items()
            if values and ranges.regime(size) == "small"}


@rule("tcp-class-latency", "performance",
      "measured here: Debian MPICH 4.0.2 over UCX 1.13.1, 1 B latency 0.13-0.55 us over sysv/cma and about 6 us with "
      "UCX_TLS=tcp; UCX transport selection (https://openucx.readthedocs.io/en/master/faq.html)",
      "small-message latency between ranks of one node far above the same stack's shared-memory figure natively "
      "(else a typical one), decided by the transport the run recorded when it recorded one")
def tcp_class_latency(rule, perf: Performance):
    ranges = perf.settings.ranges
    for row in perf.rows.values():
        key = row.key
        if key.metric != "latency" or (key.nodes or 1) > 1 or not row.launches:
            continue
        network = perf.transport_of(row).get("network")
        if network not in (None, "tcp"):
            continue  # its MPI said it used shared memory (or a fabric): a slow row is not TCP's doing
        own = _small_medians(row, ranges)
        basis_row = perf.rows.get(key.with_(approach="native", variant=row.variant_baseline))
        basis = _small_medians(basis_row, ranges) if basis_row is not None and basis_row is not row \
            and perf.transport_of(basis_row).get("network") != "tcp" else {}
        common = sorted(set(own) & set(basis), key=lambda size: -1 if size is None else size)
        if common:
            latency, reference = median([own[size] for size in common]), median([basis[size] for size in common])
            described = f"{key.stack} {Column('native', row.variant_baseline).label}: {reference:.2f} us"
        elif own:
            latency, reference = median(list(own.values())), TYPICAL_SHM_LATENCY_US
            described = f"typical shared memory: below {TYPICAL_SHM_LATENCY_US:g} us"
        else:
            continue
        if latency < LATENCY_FACTOR * reference:
            continue
        transport = perf.transport_of(row)
        recorded = network == "tcp"
        evidence = {"small_latency_us": round(latency, 3), "shared_memory_basis": described,
                    "ratio": round(latency / reference, 1),
                    "recorded_transport": (transport.get("transports") or transport.get("provider") or "tcp")
                    if recorded else "not recorded"}
        yield rule.finding(
            "problem" if recorded else "warning",
            f"TCP-class latency on one node: {latency:.2f} us" + (" (recorded: tcp)" if recorded else ""),
            "Ranks that share a node take TCP's latency, not shared memory's: " + (
                "the run's MPI said it used TCP." if recorded else
                "no transport was recorded, so this rests on the figures alone (oversubscribed busy-polling ranks "
                "are slow too)."),
            "Let the MPI use shared memory between local ranks: unset UCX_TLS or include sm/shm in it (and "
            "FI_PROVIDER, MPIR_CVAR_NOLOCAL); in containers share IPC (--ipc host) and /dev/shm.",
            subject=_subject(key), cell=_cell(key), **evidence)


@rule("intra-below-inter", "performance",
      "'Open MPI for HPE Cray EX Systems' (Pritchard, Naughton, Shehata, Bernholdt), LINKx: the shm provider for "
      "intra-node traffic beside cxi for inter-node; fi_lnx(7) (https://ofiwg.github.io/libfabric/v2.1.0/man/fi_lnx.7.html)",
      "bandwidth between ranks on one node far below the same stack between nodes: no shared-memory path")
def intra_below_inter(rule, perf: Performance):
    by_key = {}
    for row in perf.rows.values():
        if row.key.metric == "bandwidth" and row.launches and (peak := perf.peak(row)):
            by_key.setdefault(row.key.with_(nodes=0, ranks=0), {})[row.key.nodes] = (peak, row.key)
    for placements in by_key.values():
        intra = placements.get(1)
        inter = [placements[n] for n in placements if n > 1]
        if not intra or not inter:
            continue
        best = max(inter, key=lambda item: item[0][1])
        if intra[0][1] < 0.5 * best[0][1]:
            key = intra[1]
            yield rule.finding(
                "warning", f"intra-node bandwidth {intra[0][1]:.0f} MB/s below inter-node {best[0][1]:.0f} MB/s",
                "Ranks on one node should be at least as fast as ranks on two; here the intra-node messages take "
                "a network path (the provider has no shared-memory part: cxi alone, or tcp).",
                "Give the MPI a shared-memory path: Open MPI's LINKx (FI_PROVIDER=lnx, FI_LNX_PROV_LINKS=shm+cxi), "
                "or a provider/transport list that includes shm; share /dev/shm with the containers.",
                subject=_subject(key), cell=_cell(key), intra_MBps=round(intra[0][1], 2),
                inter_MBps=round(best[0][1], 2), ratio=round(intra[0][1] / best[0][1], 3))


@rule("loss-above-eager", "performance",
      "Open MPI FAQ 'shared memory' single-copy (https://docs.open-mpi.org/en/v5.0.x/tuning-apps/networking/shared-memory.html); "
      "UCX protocol selection (UCX_PROTO_INFO=y): rendezvous zero-copy via cma above the eager switch",
      "a container loss only at sizes above the eager/rendezvous switch: single-copy missing")
def loss_above_eager(rule, perf: Performance):
    for item in perf.answers:
        key = item.key
        if key.approach == "native" or item.label != "(Y)" or not item.row_class.slow:
            continue
        row = perf.rows.get(key)
        transport = perf.transport_of(row) if row else {}
        eager = int(transport["eager_limit"]) if str(transport.get("eager_limit", "")).isdigit() \
            else perf.settings.ranges.small_below
        slow_sizes = [size for slow in item.row_class.slow for size in slow.sizes if size is not None]
        if not slow_sizes or min(slow_sizes) < eager or (key.nodes or 1) > 1:
            continue
        worst = min(item.row_class.slow, key=lambda slow: slow.worst_ratio)
        yield rule.finding(
            "warning", f"slower only above the eager limit ({format_size(eager)}): single-copy missing?",
            "Small messages run at native speed, large ones do not: the container's rendezvous path differs. "
            "Default container confinement blocks CMA (no CAP_SYS_PTRACE), so large messages are copied twice.",
            "Run the containers with --cap-add SYS_PTRACE (an approach with single-copy), share /dev/shm and the "
            "PID namespace; compare again.", subject=_subject(key), cell=_cell(key), baseline=item.baseline,
            slow_from=format_size(min(slow_sizes)), worst_ratio=round(worst.worst_ratio, 3),
            worst_at=format_size(worst.worst_size), eager_limit=eager,
            single_copy=transport.get("single_copy", "not recorded"))


@rule("stack-effect", "performance",
      "the two baselines of mpistack's analysis (docs/analysis.md: the system MPI and the same stack natively)",
      "a small-message loss against the system MPI that the same stack shows natively: the stack, not the container")
def stack_effect(rule, perf: Performance):
    same = {item.key: item for item in perf.answers if item.baseline == SAME_STACK}
    for item in perf.answers:
        key = item.key
        if item.baseline != SYSTEM or key.approach == "native" or item.label != "(Y)":
            continue
        small = [slow for slow in item.row_class.slow if slow.regime == "small"]
        own = same.get(key)
        if not small or own is None or any(slow.regime == "small" for slow in own.row_class.slow):
            continue
        yield rule.finding(
            "warning", "small-message loss is the stack's, not the container's",
            "Against the system MPI the container is slower for small messages, but against the same build run "
            "natively it is not: the MPI build itself (its device, provider or version) costs the latency.",
            "Build the image's MPI like the system's (same device and provider), or accept the stack's cost; the "
            "deployment is not at fault.", subject=_subject(key), cell=_cell(key),
            system_worst_ratio=round(min(slow.worst_ratio for slow in small), 3), same_stack_class=own.label,
            same_stack=own.baseline_row.stack if own.baseline_row else None)
