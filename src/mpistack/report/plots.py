"""The report's plots as inline SVG: per benchmark, the figure against message size (log-log) for every approach with
the system MPI's median as the reference, the spread of the launches as a band and the machine's bounds as reference
lines, and the ratio against size with the parity line at 1.0, each ratio's confidence interval, and the practical
floor shaded.

matplotlib is imported here only, when plots are made (it takes a while to import). Figures are drawn without
pyplot (``matplotlib.figure.Figure``), so nothing needs a display and no global backend is switched; text stays
text in the SVG (``svg.fonttype = 'none'``), and ids are salted per plot so that several SVGs share one page.
"""

from __future__ import annotations

import io
import math
import multiprocessing
import os
import re

from ..analysis.classes import format_size
from ..spec.campaign import DEFAULT_VARIANT
from ..analysis.bounds import MachineBounds
from .bounds import COPIES, LATENCY_BENCHMARKS
from .data import Group, Report, Series

APPROACH_COLOURS = {"native": "#1f77b4", "container": "#ff7f0e", "hybrid": "#2ca02c", "bind": "#9467bd",
                    "fabric-swap": "#8c564b"}
OTHER_COLOURS = ("#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
BASELINE_COLOUR = "#000000"
FLOOR_COLOUR = "#9e9e9e"
BOUND_COLOUR = "#c62828"  # memcpy: what no transport within a node exceeds
TCP_COLOUR = "#616161"
FLOOR_LINE_COLOUR = "#2e7d32"  # the shared-memory floor
MARKERS = "osD^v<>ph*"
_STRIP = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_REFERENCE = re.compile(r"""(?:url\(#|href=["']#)([^)"']+)""")
_ID = re.compile(r"""\s+id=["']([^"']+)["']""")


def colour(approach: str) -> str:
    if approach in APPROACH_COLOURS:
        return APPROACH_COLOURS[approach]
    return OTHER_COLOURS[sum(map(ord, approach)) % len(OTHER_COLOURS)]


def _sized(series: Series) -> list[int]:
    return [size for size in series.sizes if size is not None and size > 0]


def _size_axis(axes) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_locator(LogLocator(base=8))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: format_size(int(round(value)))))
    axes.xaxis.set_minor_locator(NullLocator())  # ticks are what drawing costs most; the grid shows the majors
    axes.set_xlabel("message size", fontsize=8)
    axes.tick_params(labelsize=8)
    axes.grid(True, which="major", color="#e6e6e6", linewidth=0.6)


def _plain_numbers(axis, base: float = 10) -> None:
    """Tick labels as plain numbers (0.5, 1, 2, 100), without mathtext (slow to lay out, and not plain text), and
    no minor ticks."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    axis.set_major_locator(LogLocator(base=base, numticks=8))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))
    axis.set_minor_locator(NullLocator())


def _figure():
    """A figure with fixed margins, the plot on the left and room for the legend on the right: laid out once
    (``bbox_inches='tight'`` would draw every figure twice)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8.6, 3.8))
    figure.subplots_adjust(left=0.09, right=0.63, bottom=0.13, top=0.97)
    return figure, figure.add_subplot()


def _legend(axes, count: int) -> None:
    if count:
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False,
                    ncol=1 + (count - 1) // 24, borderaxespad=0.0)


def _svg(figure, salt: str) -> str:
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg")
    text = buffer.getvalue()
    text = _STRIP.sub("", text[text.index("<svg"):])
    # matplotlib names its groups figure_1, axes_1, ... in every SVG: drop the ids nothing refers to, so that ids
    # stay unique on a page of many plots (the referenced ones, clip paths and markers, are salted per plot)
    referenced = set(_REFERENCE.findall(text))
    return _ID.sub(lambda match: match.group(0) if match.group(1) in referenced else "", text)


def _style(series: Series, stacks: dict[str, int]) -> dict:
    return {"color": colour(series.key.approach),
            "linestyle": "-" if series.key.variant == DEFAULT_VARIANT else "--",
            "marker": MARKERS[stacks.setdefault(series.key.stack, len(stacks)) % len(MARKERS)],
            "markersize": 3, "linewidth": 1.3}


#: Above this many candidate lines a plot is drawn dense: one colour per approach (+variant), without markers,
#: bands or a legend entry per stack (a campaign of 20 stacks would otherwise take seconds per plot, and read none
#: the better).
DENSE = 12


def _draw(axes, lines: list[tuple], band_alpha: float) -> int:
    """Draw (series, sizes, values, lows, highs) lines with their bands; returns the number of legend entries."""
    if len(lines) <= DENSE:
        stacks: dict[str, int] = {}
        for series, sizes, values, lows, highs in lines:
            style = _style(series, stacks)
            axes.fill_between(sizes, lows, highs, color=style["color"], alpha=band_alpha, linewidth=0)
            axes.plot(sizes, values, label=series.label, **style)
        return len(lines)
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    by_column: dict[tuple[str, str], list] = {}
    for series, sizes, values, _, _ in lines:
        by_column.setdefault((series.key.approach, series.key.variant), []).append(list(zip(sizes, values)))
    for (approach, variant), segments in by_column.items():
        linestyle = "-" if variant == DEFAULT_VARIANT else "--"
        axes.add_collection(LineCollection(segments, colors=colour(approach), linewidths=0.9, alpha=0.7,
                                           linestyles=linestyle))
        label = approach if variant == DEFAULT_VARIANT else f"{approach}+{variant}"
        axes.add_line(Line2D([], [], color=colour(approach), linestyle=linestyle,
                             label=f"{label} ({len(segments)} stack{'' if len(segments) == 1 else 's'})"))
    axes.autoscale_view()
    return len(by_column)


def _bound_lines(axes, group: Group, bounds: MachineBounds | None) -> int:
    """The machine's bounds over the group's sizes: memcpy in cache and from memory above (bandwidth of bw and
    bibw) and TCP loopback below; for latency, the shared-memory floor and TCP's latency. The number drawn."""
    if bounds is None:
        return 0
    sizes = sorted({size for series in [*group.baselines, *group.candidates] for size in _sized(series)})
    benchmark, metric = group.key.benchmark, group.key.metric
    if not sizes or not ((metric == "bandwidth" and benchmark in COPIES) or
                         (metric == "latency" and benchmark in LATENCY_BENCHMARKS)):
        return 0
    lines = []
    if metric == "bandwidth":
        copies = COPIES[benchmark]
        times = "" if copies == 1 else f" ×{copies}"
        lines += [(f"memcpy in cache{times} (upper bound)", [bounds.memcpy_mbs(s, "cache") for s in sizes],
                   copies, BOUND_COLOUR, ":"),
                  (f"memcpy from memory{times}", [bounds.memcpy_mbs(s, "memory") for s in sizes], copies,
                   BOUND_COLOUR, "-."),
                  (f"TCP loopback{times} (lower bound)", [bounds.tcp_bandwidth_mbs(s) for s in sizes], copies,
                   TCP_COLOUR, ":")]
    else:
        floor = bounds.shm_latency_us()
        lines += [("shared-memory floor (1 B)", [floor] * len(sizes), 1, FLOOR_LINE_COLOUR, "--"),
                  ("TCP loopback latency", [bounds.tcp_latency_us(s) for s in sizes], 1, TCP_COLOUR, ":")]
    drawn = 0
    for label, values, factor, colour_, style in lines:
        if all(value is not None for value in values):
            axes.plot(sizes, [value * factor for value in values], color=colour_, linestyle=style, linewidth=1.2,
                      zorder=3, label=label)
            drawn += 1
    return drawn


def value_plot(group: Group, bounds: MachineBounds | None = None) -> str:
    """The figure against size, log-log: the system MPI's median (black) with its launches' spread, every
    approach with its own, and the machine's bounds where measured (``_bound_lines``)."""
    figure, axes = _figure()
    count = _bound_lines(axes, group, bounds)
    for series in group.baselines:
        sizes = _sized(series)
        if not sizes:
            continue
        axes.fill_between(sizes, [series.low[s] for s in sizes], [series.high[s] for s in sizes],
                          color=BASELINE_COLOUR, alpha=0.12, linewidth=0)
        axes.plot(sizes, [series.median[s] for s in sizes], color=BASELINE_COLOUR, linewidth=2.0, zorder=4,
                  label=f"{series.label} (system, median)")
        count += 1
    lines = []
    for series in group.candidates:
        sizes = _sized(series)
        if sizes:
            lines.append((series, sizes, [series.median[s] for s in sizes], [series.low[s] for s in sizes],
                          [series.high[s] for s in sizes]))
    count += _draw(axes, lines, band_alpha=0.12)
    _size_axis(axes)
    axes.set_yscale("log")
    _plain_numbers(axes.yaxis)
    better = "higher is better" if group.higher_is_better else "lower is better"
    axes.set_ylabel(f"{group.key.metric} ({group.unit}), {better}", fontsize=8)
    _legend(axes, count)
    return _svg(figure, f"{group.key.slug}-value")


def _floor_band(group: Group, report: Report) -> tuple[list[int], list[float], list[float]]:
    for series in group.candidates:
        if series.answer and series.answer.sizes:
            points = [c for c in series.answer.sizes if c.size and c.size > 0 and math.isfinite(c.floor_low)]
            if points:
                return ([c.size for c in points], [c.floor_low for c in points], [c.floor_high for c in points])
    sizes = sorted({size for series in group.candidates for size in _sized(series)})
    relative = report.settings.floor.relative
    return sizes, [1 - relative] * len(sizes), [1 + relative] * len(sizes)


def ratio_plot(group: Group, report: Report) -> str:
    """The ratio against the system MPI per size (1.0 = parity, below = slower), with its confidence interval;
    parity at 1.0 and the practical floor shaded."""
    figure, axes = _figure()
    values: list[float] = [1.0]
    lines = []
    for series in group.candidates:
        comparisons = [c for c in (series.answer.sizes if series.answer else []) if c.size and c.size > 0
                       and math.isfinite(c.ratio) and c.ratio > 0]
        if not comparisons:
            continue
        lows = [c.ci_low if math.isfinite(c.ci_low) else math.nan for c in comparisons]
        highs = [c.ci_high if math.isfinite(c.ci_high) else math.nan for c in comparisons]
        lines.append((series, [c.size for c in comparisons], [c.ratio for c in comparisons], lows, highs))
        values += [c.ratio for c in comparisons] + [v for v in lows + highs if math.isfinite(v) and v > 0]
    count = _draw(axes, lines, band_alpha=0.15)
    sizes, low, high = _floor_band(group, report)
    bottom = max(min(values) / 1.25, 1e-3)
    top = min(max(values) * 1.25, 1e3)
    bottom, top = min(bottom, 0.8), max(top, 1.25)
    if sizes:
        axes.fill_between(sizes, [max(v, bottom) for v in low], [min(v, top) for v in high], color=FLOOR_COLOUR,
                          alpha=0.25, linewidth=0,
                          label=f"practical floor ({report.settings.floor.describe(higher_is_better=group.higher_is_better)})")
    axes.axhline(1.0, color=BASELINE_COLOUR, linewidth=1.0, label="parity (native speed)")
    _size_axis(axes)
    axes.set_yscale("log", base=2)
    axes.set_ylim(bottom, top)
    _plain_numbers(axes.yaxis, base=2 if math.log2(top / bottom) <= 6 else 10)
    axes.set_ylabel("ratio to the system MPI (1 = native speed)", fontsize=8)
    _legend(axes, count + 2)
    return _svg(figure, f"{group.key.slug}-ratio")


#: At most this many benchmark groups are plotted (two plots each, about 0.1 s apiece); a report over a whole store
#: of many campaigns plots the newest campaign's groups and gives the others as tables.
MAX_PLOTTED_GROUPS = 16


def _scope_order(scope: str) -> tuple:
    """Campaigns newest first, then published references and other scopes by name."""
    kind, _, name = scope.partition(" ")
    return (0, -int(name), "") if kind == "campaign" and name.isdigit() else (1, 0, scope)


def plotted_groups(report: Report, limit: int = MAX_PLOTTED_GROUPS) -> list[Group]:
    """The groups that get plots: those with message sizes, of one scope (the newest campaign when a report spans
    several: a whole store's report stays quick), at most ``limit``."""
    sized = sorted((group for group in report.groups if group.sized),
                   key=lambda group: (_scope_order(group.key.scope), group.key))
    return [group for group in sized if group.key.scope == sized[0].key.scope][:limit] if sized else []


def _plot_pair(index: int) -> tuple[str, tuple[str, str]]:
    report, groups = _FORKED
    group = groups[index]
    return group.key.slug, (value_plot(group, report.bounds), ratio_plot(group, report))


_FORKED: tuple = ()
#: From this many groups on, plots are drawn by forked worker processes, one per CPU (about 0.1 s a plot).
PARALLEL_FROM = 4


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def group_plots(report: Report, limit: int = MAX_PLOTTED_GROUPS) -> dict[str, tuple[str, str]]:
    """Per group slug, its value and ratio plots as SVG text (``plotted_groups``), in the groups' order."""
    global _FORKED
    groups = plotted_groups(report, limit)
    workers = min(_cpus(), len(groups))
    if workers > 1 and len(groups) >= PARALLEL_FROM and "fork" in multiprocessing.get_all_start_methods():
        _FORKED = (report, groups)  # the workers read it from the forked memory: nothing is pickled but the SVGs
        try:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                return dict(pool.map(_plot_pair, range(len(groups))))
        finally:
            _FORKED = ()
    return {group.key.slug: (value_plot(group, report.bounds), ratio_plot(group, report)) for group in groups}
