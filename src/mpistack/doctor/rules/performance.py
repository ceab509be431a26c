"""Rules on stored results and their analysis (``doctor.evidence.Performance``): a row that is slower than native
because its ranks took TCP (latency and bandwidth), an intra-node path slower than the network, a container loss
only above the eager limit, a small-message loss that the same stack shows natively, and a row faster than
native with where that comes from.

A performance finding belongs to a row that is slower (or leaning slower) than a baseline, at the sizes where it
is: a row at native speed gets none. TCP is blamed by the path the row's ranks took as their MPI recorded it
(between ranks of one node when the row ran on one), or by the campaign's measured machine bounds; figures alone,
without bounds, blame nothing.
"""

from __future__ import annotations

import dataclasses
import math
import shlex

from ...analysis.answers import SAME_STACK, SYSTEM
from ...analysis.classes import REGIME_TEXT, format_size, format_sizes
from ...analysis.matrix import Column
from ...analysis.statistics import SizeComparison, Verdict
from ...parsers.transport import TCP, path_of
from ..evidence import Performance
from ..model import rule
from ..signatures import match
from .fixes import FABRIC_FIX, runtime_of, single_copy_fix, tcp_fix
from .runs import CMA_REFUSED

#: Without a transport or bounds, the bandwidth TCP reaches through a fabric's host (a fallback when the provider
#: is missing): the CSCS Container Engine pages show 1280, 3121 and 3764 MB/s at 4 MiB without the CXI hook against
#: about 24000 MB/s with it. Used for published references only, whose source says what they measured.
TYPICAL_TCP_MBPS = 5000.0
FABRIC_FACTOR = 3.0  # a comparable row this many times faster shows what the network could do
SINGLE_COPY = ("cma", "xpmem", "knem")  # mechanisms that copy a large message once, from the peer's memory
#: the classes of a settled comparison: only these say what a deployment costs against its own build (an open ``?``
#: one may hold regimes that lean at speed, which decide nothing)
SETTLED = ("Y", "(Y)", "N")
#: how a variant says it switches the single copy off (besides recording single_copy = none)
NO_SINGLE_COPY_VARIANT = "no-single-copy"


def _cell(key):
    return (key.scope, key.stack, key.approach, key.variant)


def _label(key) -> str:
    return f"{key.stack} {Column(key.approach, key.variant).label}"


def _subject(key) -> str:
    return f"{_label(key)} ({key.benchmark} {key.buffers}, {key.ranks} ranks on {key.nodes} node(s), {key.scope})"


def _unit(metric: str) -> str:
    return "us" if metric == "latency" else "MB/s"


def _figure(value: float, metric: str) -> str:
    """Three significant figures at most, never rounded to nothing (a loaded machine's 2-byte bandwidth is
    0.41 MB/s, not 0)."""
    unit = "us" if metric == "latency" else "MB/s"
    digits = 0 if value >= 100 else 1 if value >= 10 else 2
    return f"{value:.{digits}f} {unit}" if value >= 0.01 else f"{value:.3g} {unit}"


def _machine(bounds) -> str:
    """Where the bounds were measured, on one line (a library's version string may hold tabs)."""
    return " ".join(bounds.describe().split())


def _span(sizes) -> tuple[int, int] | None:
    """The smallest and largest of some message sizes (``Finding.sizes``); None where none has a size."""
    sized = [size for size in sizes if size is not None]
    return (min(sized), max(sized)) if sized else None


def _slower(perf: Performance, key) -> dict[int | None, SizeComparison]:
    """The sizes where the row is slower than a baseline (confirmed across its sizes), or leaning slower where
    its class is undecided, each with the comparison that says so (the system baseline's first)."""
    found: dict[int | None, SizeComparison] = {}
    for item in sorted((a for a in perf.answers if a.key == key), key=lambda a: a.baseline != SYSTEM):
        slow = {size for ranges in item.row_class.slow for size in ranges.sizes}
        for comparison in item.sizes:
            leaning = item.label == "?" and comparison.ratio < comparison.floor_low
            if (comparison.size in slow or leaning) and comparison.size not in found:
                found[comparison.size] = comparison
    return dict(sorted(found.items(), key=lambda item: -1 if item[0] is None else item[0]))


def _system_baseline(perf: Performance, key):
    """The row the key's comparison with the system MPI used as its baseline, where it is in the analysis."""
    item = next((a for a in perf.answers if a.key == key and a.baseline == SYSTEM), None)
    return perf.rows.get(item.baseline_row) if item is not None and item.baseline_row is not None else None


def _tcp_class(rule, perf: Performance, metrics: tuple[str, ...]):
    """A row slower than native whose ranks took TCP: by the path its MPI recorded for its placement (a problem),
    or by figures on TCP's side of the campaign's measured bounds where no path was recorded (a warning). One
    cause per configuration: the rows of its benchmarks share the title of the worst of them, which comes
    first, so that the finding is said once and names every benchmark it was seen in."""
    found = list(_tcp_class_rows(rule, perf, metrics))
    worst_of: dict[tuple, tuple] = {}  # in the order the groups first appear
    for ratio, group, title, _ in found:
        if group not in worst_of or ratio < worst_of[group][0]:
            worst_of[group] = (ratio, title)
    order = {group: index for index, group in enumerate(worst_of)}
    for _, group, _, finding in sorted(found, key=lambda item: (order[item[1]], item[0])):
        yield dataclasses.replace(finding, title=worst_of[group][1])


def _tcp_class_rows(rule, perf: Performance, metrics: tuple[str, ...]):
    """(worst ratio, the configuration's group, title, finding) of each row _tcp_class reports."""
    for row in perf.rows.values():
        key = row.key
        if key.metric not in metrics or not row.launches or not (slower := _slower(perf, key)):
            continue
        one_node = (key.nodes or 1) <= 1
        path, via = path_of(perf.transport_of(row), key.nodes)
        if path not in (None, TCP):
            continue  # its MPI said it used shared memory or a fabric there: the loss is not TCP's doing
        if path == TCP and (baseline := _system_baseline(perf, key)) is not None:
            base_path, base_via = path_of(perf.transport_of(baseline), key.nodes)
            if base_path == TCP:
                # both sides on TCP (a variant that forces it on the baseline too): TCP is not what differs
                where = "on one node" if one_node else "between nodes"
                title = f"both sides on TCP {where} (recorded): the loss is not TCP's doing"
                yield 1.0, (_cell(key), where, "ok"), title, rule.finding(
                    "ok", title, f"The row's MPI ({via}) and its baseline's ({base_via}) both said they talked over "
                    "TCP, so the row's loss comes from something else.", "", subject=_subject(key), cell=_cell(key),
                    cause=f"tcp-{'intra' if one_node else 'inter'}", recorded_path=f"{path} ({via})",
                    baseline_path=f"{base_path} ({base_via})")
                continue
        bounds = perf.bounds_of(key)
        judged = {size: bounds.tcp_side(key.metric, size, comparison.median_candidate, nodes=key.nodes or 1)
                  for size, comparison in slower.items() if size is not None} if bounds else {}
        on_tcp = [size for size, side in judged.items() if side]
        if path is None and not on_tcp:
            continue  # no recorded path, and no bounds to put the figures on TCP's side: no claim
        sizes = on_tcp or list(slower)
        worst = min((slower[size] for size in sizes), key=lambda comparison: comparison.ratio)
        where = "on one node" if one_node else "between nodes"
        evidence = {"slower_at": format_sizes(sizes), "figure": _figure(worst.median_candidate, key.metric),
                    "baseline": _figure(worst.median_baseline, key.metric), "at": format_size(worst.size),
                    "ratio": float(f"{worst.ratio:.3g}"), "recorded_path": f"{path} ({via})" if path else "not recorded"}
        if bounds:
            tcp = bounds.tcp_bound(key.metric, worst.size, key.nodes or 1)  # between nodes: the network's
            evidence["tcp_bound"] = _figure(tcp, key.metric) if tcp else "not measured"
            if not one_node and bounds.net_latency_us(1) is not None:
                evidence["network"] = bounds.network
            evidence["bounds_measured_on"] = _machine(bounds)
        disagree = bool(judged) and not on_tcp
        what = "latency" if key.metric == "latency" else "bandwidth"
        verdict = "warning" if path is None or disagree else "problem"
        title = (f"TCP-class {what} {where}: {_figure(worst.median_candidate, key.metric)} at "
                 f"{format_size(worst.size)}" + (" (recorded: tcp)" if path else ""))
        yield worst.ratio, (_cell(key), where, verdict), title, rule.finding(
            verdict, title,
            (f"The ranks' MPI said they talked over TCP ({via}), and the row is slower than native at "
             f"{format_sizes(list(slower))}." if path else
             f"No path was recorded; the figures at {format_sizes(sizes)} are on TCP's side of this machine's "
             "measured bounds (oversubscribed busy-polling ranks can be as slow).")
            + (" Yet the figures are better than TCP's bound here: something else costs too." if disagree else ""),
            tcp_fix(perf.transport_of(row), one_node), subject=_subject(key), cell=_cell(key),
            cause=f"tcp-{'intra' if one_node else 'inter'}", sizes=_span(slower), **evidence)


def _published_tcp_class(rule, perf: Performance):
    """A published reference without transport or bounds: a bandwidth plateau at TCP's typical level while a
    comparable row of the same reference reaches the fabric's (the publisher attributes the gap)."""
    for row in perf.rows.values():
        key = row.key
        if not key.scope.startswith("reference ") or key.metric != "bandwidth" or (key.nodes or 1) <= 1 \
                or not row.launches or not (peak := perf.peak(row)) or peak[1] > TYPICAL_TCP_MBPS:
            continue
        better = [(perf.peak(other), other.key) for other in perf.rows.values()
                  if other is not row and other.launches and (other.key.scope, other.key.benchmark, other.key.metric,
                                                               other.key.nodes, other.key.buffers)
                  == (key.scope, key.benchmark, key.metric, key.nodes, key.buffers)]
        better = [(p, k) for p, k in better if p and p[1] >= FABRIC_FACTOR * peak[1]]
        if not better:
            continue
        (reference_peak, reference) = max(better, key=lambda item: item[0][1])
        yield rule.finding(
            "problem", f"TCP-class bandwidth between nodes: {peak[1]:.0f} MB/s at {format_size(peak[0])}",
            "The bandwidth plateaus where TCP does, far below a comparable row of the same reference: the MPI fell "
            "back to TCP (no cxi, verbs or efa provider in the container, or a provider forced to tcp).",
            FABRIC_FIX, subject=_subject(key), cell=_cell(key), cause="tcp-inter",
            peak_MBps=round(peak[1], 2), at=format_size(peak[0]),
            tcp_basis=f"typical TCP fallback below {TYPICAL_TCP_MBPS:.0f} MB/s",
            comparable=f"{reference.stack} {reference.approach}", comparable_peak_MBps=round(reference_peak[1], 2),
            ratio=round(peak[1] / reference_peak[1], 3))


@rule("tcp-class-bandwidth", "performance",
      "the path the MPI recorded (UCX_LOG_LEVEL=info, MPIR_CVAR_DEBUG_SUMMARY=1, Open MPI btl_base_verbose) and the "
      "campaign's machine bounds (Hoefler and Belli, 'Scientific Benchmarking of Parallel Computing Systems', SC15, "
      "https://htor.inf.ethz.ch/publications/img/hoefler-scientific-benchmarking.pdf); published references: CSCS docs "
      "'Container Engine' (https://docs.cscs.ch/software/container-engine/resource-hook/): osu_bw without the CXI "
      "hook 1280-3764 MB/s against about 24000 MB/s with it",
      "bandwidth slower than native where the ranks took TCP for their placement (recorded, or on TCP's side of the "
      "measured bounds); a published row at TCP's level beside one at the fabric's")
def tcp_class_bandwidth(rule, perf: Performance):
    yield from _tcp_class(rule, perf, ("bandwidth", "bi-bandwidth"))
    yield from _published_tcp_class(rule, perf)


@rule("tcp-class-latency", "performance",
      "the path the MPI recorded and the campaign's machine bounds; measured on a 2-core Debian 12 KVM guest: Debian "
      "MPICH 4.0.2 over UCX 1.13.1, 1 B latency 0.33 us over sysv/cma and 3.6 us with UCX_TLS=tcp; UCX transport "
      "selection (https://openucx.readthedocs.io/en/master/faq.html); Open MPI's ofi MTL default provider exclude list "
      "'shm,sockets,tcp,udp,rstream,usnic' (https://github.com/open-mpi/ompi/pull/5776), which Open MPI 4.1.4 "
      "built with --with-ofi (the catalogue's source-openmpi-ofi) passes over for libfabric 1.17's TCP provider net: "
      "on a 2-core Debian 12 KVM guest, 1 B in 5.2 us in its container against 0.41 us for Debian's Open MPI natively "
      "over UCX (`mpistack run examples/source.toml`)",
      "latency slower than native where the ranks took TCP for their placement (recorded, or on TCP's side of the "
      "measured bounds)")
def tcp_class_latency(rule, perf: Performance):
    yield from _tcp_class(rule, perf, ("latency",))


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


def _eager_limit(transport: dict) -> int | None:
    value = str(transport.get("eager_limit", ""))
    return int(value) if value.isdigit() else None


def _stack_explains(item, same: dict) -> set[str]:
    """The slower regimes of a row against the system MPI that its same build, run natively, shows as well: the
    container there is at the speed of its own stack (its same-stack answer decides that regime at speed or
    faster), so the loss is the stack's. Empty where there is no same-stack answer, or where that answer is not
    settled (``?``): a regime at speed inside an open comparison decides nothing about the deployment."""
    own = same.get(item.key)
    if item.baseline != SYSTEM or own is None or own.label not in SETTLED:
        return set()
    return {slow.regime for slow in item.row_class.slow
            if slow.regime in own.row_class.regimes
            and own.row_class.regimes[slow.regime].verdict in (Verdict.AT_SPEED, Verdict.FASTER)}


@rule("loss-above-eager", "performance",
      "Open MPI FAQ 'shared memory' single-copy (https://docs.open-mpi.org/en/v5.0.x/tuning-apps/networking/shared-memory.html); "
      "UCX protocol selection (UCX_PROTO_INFO=y): rendezvous zero-copy via cma above the eager switch",
      "a container loss only at sizes above the eager/rendezvous switch, on a run that recorded no single copy: "
      "single-copy missing (not judged while the campaign's A/A control is not Y)")
def loss_above_eager(rule, perf: Performance):
    same = {item.key: item for item in perf.answers if item.baseline == SAME_STACK}
    for item in perf.answers:
        key = item.key
        if item.label != "(Y)" or not item.row_class.slow:
            continue
        if item.baseline == SYSTEM and key in same and same[key].label != "(Y)":
            continue  # against its own build natively it is not slower (stack-effect), or not known: no claim
        row = perf.rows.get(key)
        transport = perf.transport_of(row) if row else {}
        native = key.approach == "native"
        theirs = None
        if native:
            if row is None or row.control or key.variant == NO_SINGLE_COPY_VARIANT or item.baseline_row is None \
                    or item.baseline_row.stack == key.stack:
                continue  # natively only another build, against the system MPI
            base = perf.rows.get(item.baseline_row)
            theirs = (perf.transport_of(base) if base else {}).get("single_copy")
            if transport.get("single_copy") != "none" and theirs not in SINGLE_COPY:
                continue  # nothing recorded on either side says the builds differ in their single copy
        eager = _eager_limit(transport) or perf.settings.ranges.small_below
        slow_sizes = [size for slow in item.row_class.slow for size in slow.sizes if size is not None]
        if not slow_sizes or min(slow_sizes) < eager or (key.nodes or 1) > 1:
            continue
        if transport.get("single_copy") in SINGLE_COPY:
            continue  # the library said it used single copy here: its absence cannot be the cause
        worst = min(item.row_class.slow, key=lambda slow: slow.worst_ratio)
        refused = _single_copy_refused(perf, row) if row else None
        if not refused and (as_fast := _point_to_point_as_fast(perf, item)):
            # a collective's large messages are point-to-point transfers: where those are not slower, the single
            # copy is not what the collective lacks (its algorithm or its reduction is)
            yield rule.finding(
                "ok", f"{key.benchmark} slower above the eager limit ({format_size(eager)}), not for want of a single "
                f"copy: {as_fast}",
                f"{_label(key)} is slower than its baseline from {format_size(min(slow_sizes))} on, but its point-to-"
                f"point messages of those sizes are not ({as_fast}): the copy of a large message is not what costs "
                "the collective; its algorithm or its reduction differs from the baseline's.", "",
                subject=_subject(key), cell=_cell(key), sizes=_span(slow_sizes), anomaly="refuted",
                point_to_point=as_fast)
            continue
        restores = (f"expected to restore {key.benchmark} from {format_size(min(slow_sizes))} on (worst "
                    f"{worst.worst_ratio:.2f}× at {format_size(worst.worst_size)}) to its baseline's speed")
        runs = row.runs if row else ()
        runtime = next((found for run in runs if (found := runtime_of(perf.launches.get(run) or {}))), None)
        grant = single_copy_fix(runtime, -(-key.ranks // (key.nodes or 1)))  # the ranks of a node
        evidence = dict(subject=_subject(key), cell=_cell(key), sizes=_span(slow_sizes), baseline=item.baseline,
                        slow_from=format_size(min(slow_sizes)), worst_ratio=round(worst.worst_ratio, 3),
                        worst_at=format_size(worst.worst_size), eager_limit=eager,
                        single_copy=transport.get("single_copy", "not recorded"), restores=restores)
        recorded = transport.get("single_copy") == "none"
        if refused:
            yield rule.finding(
                "problem", f"{key.benchmark} slower from {format_size(min(slow_sizes))}: single copy refused "
                f"(recorded: {refused})",
                f"Small messages run at native speed, large ones do not, and the run recorded that its single copy "
                f"was refused ({refused}): large messages are copied twice through shared memory.",
                f"{grant[:-1]}; {restores}.",
                recorded=refused, **evidence)
        elif native:
            theirs_text = f"the system MPI: {theirs}" if theirs in SINGLE_COPY else "the system MPI has one"
            what = f"has no single copy (recorded: none; {theirs_text})" if recorded else \
                f"records no single copy ({theirs_text})"
            title = f"{key.benchmark} slower above the eager limit ({format_size(eager)}): this build {what}"
            yield from _judged_or_not(
                rule, perf, key, worst.worst_ratio, title,
                "Small messages run near the system MPI's speed, large ones do not, and this build of the MPI "
                + ("said it had no single-copy mechanism" if recorded else "recorded no single-copy mechanism")
                + " while the system MPI's did: large messages are copied twice through shared memory. Its "
                "containers inherit the cost.",
                f"Use a build of the MPI with a single-copy mechanism (CMA, XPMEM), as the system MPI's, or the "
                f"system MPI itself (an approach that binds it in); {restores}.", evidence)
        elif recorded:
            yield from _judged_or_not(
                rule, perf, key, worst.worst_ratio, f"{key.benchmark} slower only above the eager limit "
                f"({format_size(eager)}): no single copy (recorded: none)",
                "Small messages run at native speed, large ones do not, and the MPI library said it had no "
                "single-copy mechanism here: large messages are copied twice through shared memory.",
                f"{grant} Or unset a setting that turns it off; {restores}.", evidence)
        else:
            yield from _judged_or_not(
                rule, perf, key, worst.worst_ratio, f"{key.benchmark} slower only above the eager limit "
                f"({format_size(eager)}): single copy missing? (not recorded)",
                "Small messages run at native speed, large ones do not: the rendezvous path differs. The run did not "
                "record a single-copy mechanism; a container without CAP_SYS_PTRACE cannot use CMA, so large "
                "messages would be copied twice.",
                f"{grant} Compare again; {restores}.", evidence)


#: the benchmarks whose messages go from one rank to another as they are (a collective's are made of them)
POINT_TO_POINT = ("latency", "bw", "bibw")


def _point_to_point_as_fast(perf: Performance, item) -> str | None:
    """Where a collective row is slower in some regime, the same configuration's point-to-point rows decided at
    speed or faster than the same baseline in that regime ("latency large 1.47×, faster"), else None."""
    key = item.key
    if key.benchmark in POINT_TO_POINT:
        return None
    regimes = {slow.regime for slow in item.row_class.slow}
    found = []
    for other in perf.answers:
        mine = other.key
        if mine.benchmark not in POINT_TO_POINT or other.baseline != item.baseline or (
                mine.scope, mine.stack, mine.approach, mine.variant, mine.ranks, mine.nodes, mine.buffers) != (
                key.scope, key.stack, key.approach, key.variant, key.ranks, key.nodes, key.buffers):
            continue
        for regime in sorted(regimes & set(other.row_class.regimes)):
            comparison = other.row_class.regimes[regime]
            if comparison.verdict in (Verdict.AT_SPEED, Verdict.FASTER):
                found.append(f"{mine.benchmark} {regime} {comparison.ratio:.2f}×, "
                             f"{'faster' if comparison.verdict is Verdict.FASTER else 'at speed'}")
    return "; ".join(found) or None


def _judged_or_not(rule, perf: Performance, key, ratio: float, title: str, meaning: str, fix: str, evidence: dict):
    """A cause of a loss as a warning; on a machine whose A/A control is not Y and does not account for the
    effect (``_noisy_control``), the same cause said as not judged (ok), its fix kept behind the rerun."""
    noisy = _noisy_control(perf, key, ratio)
    if not noisy:
        yield rule.finding("warning", title, meaning, fix, **evidence)
        return
    yield rule.finding(
        "ok", f"{title}: not judged (the A/A control was {noisy})",
        f"{meaning} But this campaign's A/A control was {noisy}, not Y: the machine could not tell two identical "
        "configurations apart, so the effect may be its noise.",
        f"Rerun on a quieter machine (the A/A control Y) to judge it; if the loss holds: {fix[0].lower()}{fix[1:]}",
        anomaly="not judged", **evidence)


def _single_copy_refused(perf: Performance, row) -> str | None:
    """What a row's launches recorded of a refused single copy (a CMA or ptrace refusal among their messages, or in
    the note of the transport their probe recorded), else None."""
    note = perf.transport_of(row).get("note")
    for message in [(perf.launches.get(run) or {}).get("message") for run in row.runs] + [note]:
        hit = next((hit for hit in match(message) if hit.signature.id in CMA_REFUSED), None)
        if hit is not None:
            return hit.signature.id
    return None


@rule("stack-effect", "performance",
      "the two baselines of mpistack's analysis (docs/analysis.md: the system MPI and the same stack natively)",
      "a loss against the system MPI that the same stack shows natively: the stack, not the container")
def stack_effect(rule, perf: Performance):
    same = {item.key: item for item in perf.answers if item.baseline == SAME_STACK}
    for item in perf.answers:
        key = item.key
        if item.baseline != SYSTEM or key.approach == "native" or item.label != "(Y)":
            continue
        explained = _stack_explains(item, same)
        if not explained:
            continue
        own = same[key]
        regimes = [slow for slow in item.row_class.slow if slow.regime in explained]
        names = list(dict.fromkeys(REGIME_TEXT[slow.regime].removesuffix(" messages") for slow in regimes))
        where = (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]) + " messages"
        yield rule.finding(
            # an explanation, as a speed-up between builds is (faster-than-native's STACK): nothing to fix in the
            # deployment, so not a warning
            "ok", f"the loss at {where} is the stack's, not the container's",
            f"Against the system MPI the container is slower at {where}, but against the same build run natively "
            "it is not: the MPI build itself (its device, provider or version) costs it.",
            "Build the image's MPI like the system's (same device and provider), or accept the stack's cost; the "
            "deployment is not at fault.", subject=_subject(key), cell=_cell(key),
            sizes=_span(size for slow in regimes for size in slow.sizes),
            system_worst_ratio=round(min(slow.worst_ratio for slow in regimes), 3), same_stack_class=own.label,
            same_stack=own.baseline_row.stack if own.baseline_row else None,
            regimes=", ".join(dict.fromkeys(slow.regime for slow in regimes)))


# -- binding ----------------------------------------------------------------------------------------------------

#: variables that set a launcher's binding policy: Open MPI's MCA parameter, MPICH Hydra's -bind-to
BINDING_VARIABLES = ("OMPI_MCA_hwloc_base_binding_policy", "HYDRA_BINDING")
#: launcher options that take a binding: mpirun's --bind-to, Hydra's -bind-to, srun's --cpu-bind
BINDING_OPTIONS = ("--bind-to", "-bind-to", "--cpu-bind", "--cpu_bind")
_MCA_BINDING = "hwloc_base_binding_policy"


def unbound_by(launch: dict) -> str | None:
    """The setting by which a launch left its ranks unbound (a binding policy of none), as recorded in its
    environment or command; None where it set none."""
    environment = launch.get("environment") or {}
    for name in BINDING_VARIABLES:
        if environment.get(name, "").strip().lower() == "none":
            return f"{name}=none"
    command = launch.get("command") or ""
    if "none" not in command.lower():  # the common case, without splitting every launch's command
        return None
    words = shlex.split(command)
    for index, word in enumerate(words):
        option, _, value = word.partition("=")
        following = words[index + 1:index + 3]
        if option in BINDING_OPTIONS and (value or (following or [""])[0]).lower() == "none":
            return f"{option} none"
        if option in ("--mca", "-mca") and following == [_MCA_BINDING, "none"]:
            return f"{option} {_MCA_BINDING} none"
    return None


@rule("no-binding", "performance",
      "Open MPI mpirun(1) --bind-to (https://www.open-mpi.org/doc/v4.1/man1/mpirun.1.php): ranks bound to cores by "
      "default for 2 or fewer processes; MPICH 'Using the Hydra Process Manager', -bind-to and HYDRA_BINDING "
      "(https://github.com/pmodels/mpich/blob/main/doc/wiki/how_to/Using_the_Hydra_Process_Manager.md); srun(1) "
      "--cpu-bind (https://slurm.schedmd.com/srun.html)",
      "a row slower than a baseline whose launches left their ranks unbound (a binding policy of none in the "
      "environment or on the launcher's command line)")
def no_binding(rule, perf: Performance):
    for row in perf.rows.values():
        key = row.key
        setting = next((found for run in row.runs if (found := unbound_by(perf.launches.get(run, {})))), None)
        if setting is None or not row.launches or not (slower := _slower(perf, key)):
            continue
        worst = min(slower.values(), key=lambda comparison: comparison.ratio)
        yield rule.finding(
            "warning", f"ranks left unbound ({setting})",
            f"The launches set a binding policy of none ({setting}): the scheduler may move a rank between cores "
            f"or put two on one, away from the memory it touched, and the row is slower than native at "
            f"{format_sizes(list(slower))}.",
            "Bind ranks to cores: drop the setting (Open MPI binds 2 ranks to cores by default; Hydra -bind-to "
            "core; srun --cpu-bind=cores).", subject=_subject(key), cell=_cell(key), sizes=_span(slower), setting=setting,
            slower_at=format_sizes(list(slower)), figure=_figure(worst.median_candidate, key.metric),
            baseline=_figure(worst.median_baseline, key.metric), at=format_size(worst.size),
            ratio=float(f"{worst.ratio:.3g}"))


# -- faster than native ---------------------------------------------------------------------------------------

#: how strong an explanation of a faster row is: the first that holds for a configuration is its title
CONFIRMED, IN_CACHE, STACK, SUSPECTED, REFUTED, UNEXPLAINED = range(6)


def _switches_off(perf: Performance, row, baseline) -> bool:
    """Whether the row is the baseline's own stack, natively, in a variant that switched its single copy off
    (recorded as single_copy none, or named for it), at the same benchmark, placement and buffers."""
    other = row.key
    return other.with_(variant=baseline.variant) == baseline and other.variant != baseline.variant and \
        bool(row.launches) and (perf.transport_of(row).get("single_copy") == "none"
                                or other.variant == NO_SINGLE_COPY_VARIANT)


def _switched_off(perf: Performance, baseline) -> object | None:
    """The row that switched the baseline's single copy off (``_switches_off``), if the campaign ran one."""
    return next((row for row in perf.rows.values() if _switches_off(perf, row, baseline)), None)


def _faster_units(item) -> set:
    """What the analysis decided faster: the regimes whose comparison is FASTER (regimes decide); a row compared
    without regime figures (a published one) is decided size by size, so its faster sizes. Sizes faster inside a
    regime at native speed only describe it (noise at a few sizes of an A/A control): they decide nothing."""
    regimes = item.row_class.regimes
    if regimes:
        return {name for name, comparison in regimes.items() if comparison.verdict is Verdict.FASTER}
    return {size for size in item.row_class.faster if size is not None}


def _faster_sizes(perf: Performance, item) -> list[int]:
    """The sizes a faster finding names: those that lean faster in the regimes decided faster (else every size
    of those regimes); none where no regime was decided faster."""
    units = _faster_units(item)
    if not item.row_class.regimes:
        return sorted(units)
    ranges = perf.settings.ranges
    in_faster = [c.size for c in item.sizes if c.size is not None and ranges.regime(c.size) in units]
    described = [size for size in item.row_class.faster if size in in_faster]
    return sorted(described or in_faster)


def _builds_differ(perf: Performance, item) -> bool:
    """Whether the speed-up is between MPI builds, not deployments: a stack natively against the system MPI, or
    a candidate that is not faster against its own build run natively where it beats the system MPI."""
    if item.baseline != SYSTEM or item.key.stack == item.baseline_row.stack:
        return False
    if item.key.approach == "native":
        return True
    own = next((a for a in perf.answers if a.key == item.key and a.baseline == SAME_STACK), None)
    # "its build natively is as fast" only from a settled comparison with that build, never from an open one
    return own is not None and own.label in SETTLED and not _faster_units(own) & _faster_units(item)


#: an effect this many times the A/A control's widest deviation from parity is judged although the control is
#: not Y: the control measured how far two identical configurations drift apart on this machine, and the effect
#: lies well beyond that
BEYOND_CONTROL = 3.0


def control_spread(perf: Performance, key) -> float | None:
    """The A/A control's widest deviation from parity, as a log ratio, over the regime intervals of the row's
    benchmark (of any benchmark where the control did not run that one); None without a control interval."""
    controls = [a for a in perf.answers if a.control and a.baseline == SYSTEM and a.key.scope == key.scope]
    mine = [a for a in controls if a.key.benchmark == key.benchmark] or controls
    edges = [abs(math.log(edge)) for a in mine for c in a.regimes.values() for edge in (c.ci_low, c.ci_high)
             if edge > 0 and math.isfinite(edge)]
    return max(edges) if edges else None


def _noisy_control(perf: Performance, key, ratio: float | None = None) -> str | None:
    """The class of the campaign's A/A control against the system MPI when it is not Y (the row's benchmark's
    first), else None: no control, one at speed, or an effect (``ratio``) at least ``BEYOND_CONTROL`` times the
    control's widest deviation for that benchmark, which the machine's noise does not explain."""
    controls = [a for a in perf.answers if a.control and a.baseline == SYSTEM and a.key.scope == key.scope]
    controls.sort(key=lambda a: a.key.benchmark != key.benchmark)
    if not controls or controls[0].label == "Y":
        return None
    spread = control_spread(perf, key)
    if ratio is not None and ratio > 0 and spread is not None and abs(math.log(ratio)) >= BEYOND_CONTROL * spread:
        return None
    return controls[0].label


def _not_judged(rule, noisy: str, key, cell, effect: str, seen: str, **evidence):
    """An effect no transport explains, on a machine whose A/A control is not Y: a machine that cannot tell two
    identical configurations apart makes it no evidence of a cause, so it is said (ok), not raised."""
    return rule.finding(
        "ok", f"{effect}: not judged (the A/A control was {noisy})",
        f"{seen}, but this campaign's A/A control was {noisy}, not Y: the machine could not tell two identical "
        "configurations apart, so the effect may be its noise.",
        "Rerun on a quieter machine (the A/A control Y) before looking for a cause.", subject=_subject(key),
        cell=cell, anomaly="not judged", **evidence)


def _explain(perf: Performance, item) -> tuple[int, str, dict]:
    """Why a candidate beats its baseline: (strength, the sentence, evidence)."""
    strength, sentence, evidence = _single_copy_or_cache(perf, item)
    if strength in (SUSPECTED, REFUTED, UNEXPLAINED) and _builds_differ(perf, item):
        # a confirming experiment (or an in-cache figure) outranks this, an inference from the records does not; a
        # refuting one only rules the baseline's single copy out, and the builds still differ
        return STACK, (f"the MPI builds differ and {item.key.stack} natively is as fast: the speed-up is the "
                       "stack's, not the deployment's"), evidence
    return strength, sentence, evidence


def _single_copy_or_cache(perf: Performance, item) -> tuple[int, str, dict]:
    """The explanations that look at both sides' figures and records: in cache, or the baseline's single copy."""
    row, base = perf.rows[item.key], perf.rows[item.baseline_row]
    sizes = _faster_sizes(perf, item)
    by_size = {comparison.size: comparison for comparison in item.sizes}
    best = max((by_size[size] for size in sizes), key=lambda comparison: comparison.ratio)
    metric = item.key.metric
    evidence = {"faster_at": format_sizes(sizes), "against": f"{_label(item.baseline_row)} ({item.baseline})",
                "figure": _figure(best.median_candidate, metric), "baseline": _figure(best.median_baseline, metric),
                "at": format_size(best.size), "ratio": round(best.ratio, 2)}
    bounds = perf.bounds_of(item.key)
    if bounds and metric != "latency":
        cached = [size for size in sizes if bounds.above_memcpy(size, by_size[size].median_candidate)]
        if cached:
            memcpy = bounds.memcpy_mbs(cached[0], "cache")
            evidence.update(in_cache_at=format_sizes(cached), memcpy_in_cache=_figure(memcpy or 0, metric),
                            bounds_measured_on=_machine(bounds))
        if len(cached) * 2 > len(sizes):  # at a few sizes alone it explains those, not the row
            return IN_CACHE, ("the candidate's figures are above one core's in-cache memcpy: the benchmark reused "
                              "buffers that stayed in cache, the candidate side is the anomaly"), evidence
    theirs, mine = perf.transport_of(base), perf.transport_of(row)
    mechanism, eager = theirs.get("single_copy"), _eager_limit(theirs)
    evidence.update(baseline_single_copy=mechanism or "not recorded", candidate_single_copy=mine.get(
        "single_copy") or ("none (MPICH ch4 shm)" if "ch4 shm" in path_of(mine, 1)[1] else "not recorded"))
    if eager:
        evidence["baseline_eager_limit"] = format_size(eager)
    above = [size for size in sizes if size >= (eager or perf.settings.ranges.small_below)]
    if mechanism not in SINGLE_COPY or not above:
        return UNEXPLAINED, ("neither side's recorded transport explains it (single copy, eager limit); check "
                             "binding and the eager limits of both"), evidence
    # the candidate may be the switch-off variant itself; a candidate that recorded the same mechanism may not have
    # used it: a probe of small messages never reaches the single copy, so a refusal at attach time goes unseen
    off = row if _switches_off(perf, row, base.key) else _switched_off(perf, base.key)
    if off is None:
        candidate = ("the candidate recorded it too (a probe of small messages does not see an attach refused "
                     "later)" if mine.get("single_copy") == mechanism else "the candidate does not")
        return SUSPECTED, (f"suspected, not confirmed: the baseline copies messages of {format_size(above[0])} and "
                           f"more once with {mechanism}, {candidate}; a variant of the baseline with its single copy "
                           "off would confirm it"), evidence
    gains = [(size, Performance.median_at(off, size), by_size[size].median_baseline) for size in above
             if Performance.median_at(off, size) is not None]
    floor = perf.settings.floor.relative
    better = [(size, value, slow) for size, value, slow in gains
              if (value < slow * (1 - floor) if metric == "latency" else value > slow * (1 + floor))]
    evidence["switched_off"] = _label(off.key)
    if gains:
        size, value, slow = max(gains, key=lambda gain: gain[1] / gain[2] if metric != "latency" else gain[2] / gain[1])
        evidence["switched_off_figure"] = f"{_figure(value, metric)} against {_figure(slow, metric)} at " \
                                          f"{format_size(size)}"
    if better and len(better) * 2 > len(gains):
        if off is row:
            return CONFIRMED, (f"this is the baseline with its {mechanism} single copy switched off: that single "
                               "copy is the slow side"), evidence
        return CONFIRMED, (f"the native baseline's {mechanism} single copy is the slow side: with it switched off "
                           f"({_label(off.key)}) the baseline is faster too"), evidence
    return REFUTED, (f"not the baseline's {mechanism} single copy: switching it off ({_label(off.key)}) did not "
                     "make the baseline faster; no rule of thumb replaces that experiment, look further (binding, "
                     "eager limits)"), evidence


_TITLES = {CONFIRMED: "the baseline's single copy is slow (confirmed)",
           IN_CACHE: "an in-cache figure (above memcpy)",
           STACK: "the stack's (its build natively is as fast)",
           SUSPECTED: "the baseline's single copy? (suspected)",
           REFUTED: "not the baseline's single copy (switched off, no faster)",
           UNEXPLAINED: "unexplained"}


#: STACK's title on a stack's own native row, where "its build natively is as fast" would explain it by itself
NATIVE_STACK_TITLE = "another MPI build than the system's, natively (the builds differ)"

_FASTER_FIXES = {
    CONFIRMED: "Compare against a baseline tuned like the candidate (e.g. OMPI_MCA_btl_vader_single_copy_mechanism="
               "none natively), and read the speed-up as the baseline's cost, not the container's merit.",
    SUSPECTED: "Run the baseline natively with its single copy off (OMPI_MCA_btl_vader_single_copy_mechanism=none, "
               "UCX_TLS without cma): faster confirms it, slower refutes it.",
    IN_CACHE: "Measure with buffers larger than the caches (the candidate's figure is a cache's, not a transport's).",
    STACK: "",
    UNEXPLAINED: "Run a variant that switches the suspected mechanism off (single copy, eager limit, binding) and "
                 "compare again.",
}


@rule("faster-than-native", "performance",
      "Open MPI FAQ 'shared memory' single-copy (https://docs.open-mpi.org/en/v5.0.x/tuning-apps/networking/shared-memory.html): "
      "btl_vader_single_copy_mechanism none; Hoefler and Belli, SC15, rule 11 (upper bounds: memcpy); Open MPI 4.1.4 "
      "natively on a 2-core Debian 12 KVM guest shared with other work, with CMA switched off (the default campaign's "
      "no-single-copy variant: `mpistack run examples/local.toml`, then `mpistack report local --row "
      "host-openmpi/native+no-single-copy/latency`): 4 KiB latency 1.16 us against 2.60 us with CMA (not settled), but "
      "slower from 128 KiB on (1 MiB 148 against 92 us), while MPICH 4.0.2 over UCX with UCX_TLS=^cma got slower (16 KiB "
      "22.7 against 2.7 us): the switch-off variant decides, never a rule of thumb",
      "a row faster than its native baseline beyond the floor: which side is the anomaly (the baseline's single copy "
      "above its eager limit, confirmed by a variant that switches it off, or an in-cache figure), or that the MPI "
      "builds differ (the candidate's build natively is as fast: ok)")
def faster_than_native(rule, perf: Performance):
    by_cell: dict[tuple, list] = {}
    for item in perf.answers:
        if _faster_sizes(perf, item) and item.baseline_row in perf.rows and item.key in perf.rows:
            by_cell.setdefault(_cell(item.key), []).append((*_explain(perf, item), item))
    for cell, explained in by_cell.items():
        strength, sentence, evidence, item = min(explained, key=lambda entry: entry[0])
        noisy = _noisy_control(perf, item.key, evidence["ratio"]) if strength == UNEXPLAINED else None
        if noisy:
            yield _not_judged(rule, noisy, item.key, cell, f"faster at {evidence['faster_at']}",
                              f"{_label(item.key)} beats {evidence['against']} in {item.key.benchmark}",
                              cause="faster", **evidence)
            continue
        others = [f"{other.key.benchmark} against {_label(other.baseline_row)}: {_TITLES[kind]}"
                  for kind, _, _, other in explained if other is not item]
        anomaly = "baseline" if strength in (CONFIRMED, SUSPECTED) else \
            "candidate" if strength == IN_CACHE else "none: the builds differ" if strength == STACK else "not known"
        # explained by the builds, or by the baseline's own single copy as the campaign's switch-off experiment
        # confirmed: nothing to fix in this configuration, an explanation (shown under its cell), not a warning
        yield rule.finding(
            "ok" if strength in (STACK, CONFIRMED) else "warning",
            f"faster at {evidence['faster_at']}: "
            + (NATIVE_STACK_TITLE if strength == STACK and item.key.approach == "native" else _TITLES[strength]),
            f"{_label(item.key)} beats {evidence['against']} in {item.key.benchmark}: {sentence}.",
            _FASTER_FIXES.get(strength, _FASTER_FIXES[UNEXPLAINED]),
            subject=_subject(item.key), cell=cell, cause="faster", anomaly=anomaly, **evidence,
            **({"also": others} if others else {}))
