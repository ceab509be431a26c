"""The report's plots as inline SVG, per benchmark group and as small multiples (one panel per stack, on shared
axes, so that stacks compare at a glance):

* values: the figure against message size (log-log): each approach and variant of the stack, the system MPI
  natively (solid black) and the same stack natively (its same-stack baseline: dashed black, open squares),
  each with the spread of its launches as a band, and the machine's bounds as grey reference lines;
* ratio: against the system MPI per size, with each ratio's confidence interval, parity at 1 and the practical
  floor shaded;
* deployment effect: each deployment (container, hybrid, bind, ...) against the same build natively, which is
  what the container itself costs (drawn when a group has such comparisons).

Colours follow the Okabe-Ito palette (M. Okabe and K. Ito, "Color Universal Design (CUD): how to make figures
and presentations that are friendly to colorblind people", https://jfly.uni-koeln.de/color/), one colour and
marker per approach and variant across the whole report; black is kept for the baselines. Each figure has one
legend with one entry per kind of line (its group is the SVG element ``<g id="legend-…">``).

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
from dataclasses import dataclass, field

from ..analysis.bounds import MachineBounds
from ..analysis.classes import format_size
from ..analysis.matrix import Column, column_order
from ..spec.campaign import DEFAULT_VARIANT
from .bounds import COPIES, LATENCY_BENCHMARKS, above_memcpy
from .data import Group, Report, Series

#: Okabe-Ito's colours but black, the yellow last (the weakest on white).
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442")
#: The approaches' own colours in their default variant; variants take the palette's unused colours in turn.
#: (A stack's own native run is drawn as its same-stack baseline, in black: native has no colour of its own.)
APPROACH_COLOURS = {"container": "#E69F00", "hybrid": "#009E73", "bind": "#CC79A7", "fabric-swap": "#0072B2"}
MARKERS = "o^Dvs<>ph*"
BASELINE_COLOUR = "#000000"
FLOOR_COLOUR = "#9e9e9e"
BOUND_COLOUR = "#4d4d4d"  # the machine's bounds: grey, thin, each its own dash pattern
BOUND_LINE_WIDTH = 1.0
SYSTEM_LABEL = "system MPI natively (the panel's baseline)"
SAME_STACK_LABEL = "same stack natively (same-stack baseline)"
PARITY_LABEL = "parity (native speed)"
ABOVE_LABEL = "above the memcpy bound (an in-cache figure)"
#: ratio ticks a reader can read off: parity, the usual floors' edges and the halves and doublings around it
NICE_RATIOS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.8, 1.0, 1.25, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0,
               200.0, 500.0, 1000.0)
PANEL_COLUMNS = 3
PANEL_SIZE = (3.35, 2.2)  # inches per panel: three across fit a 1024 px page at a readable 7.5 pt
_STRIP = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_REFERENCE = re.compile(r"""(?:url\(#|href=["']#)([^)"']+)""")
_ID = re.compile(r"""\s+id=["']([^"']+)["']""")
LEGEND_ID = "legend-"  # the legend group's id prefix, kept in the SVG (the page's tests read the entries)


@dataclass(frozen=True)
class LineStyle:
    colour: str
    linestyle: object = "-"
    marker: str = ""
    filled: bool = True
    width: float = 1.3
    marker_size: float = 3.5

    def kwargs(self) -> dict:
        style = {"color": self.colour, "linestyle": self.linestyle, "linewidth": self.width}
        if self.marker:
            style |= {"marker": self.marker, "markersize": self.marker_size}
            if not self.filled:
                style |= {"markerfacecolor": "white", "markeredgewidth": 1.0, "markersize": 5.5}
        return style


SYSTEM_STYLE = LineStyle(BASELINE_COLOUR, "-", "", width=2.4)
#: a figure above the memcpy bound of its size: marked, never read as a faster transport
ABOVE_STYLE = LineStyle(BASELINE_COLOUR, "none", "x", width=1.2, marker_size=7.0)
#: drawn beneath the deployments, wider and with larger open markers, so that a deployment at the same speed
#: lies on it and both stay visible
SAME_STACK_STYLE = LineStyle(BASELINE_COLOUR, "--", "s", filled=False, width=2.0)


#: a stack's own native run: its same-stack baseline, drawn in SAME_STACK_STYLE
SAME_STACK_COLUMN = Column("native")


def column_styles(columns) -> dict[Column, LineStyle]:
    """One style per approach and variant, for every plot of a report: the approach's colour in its default
    variant (solid), the palette's unused colours for the variants (dashed), each with its own marker."""
    ordered = [column for column in sorted(set(columns), key=column_order) if column != SAME_STACK_COLUMN]
    taken = {APPROACH_COLOURS[c.approach] for c in ordered if c.variant == DEFAULT_VARIANT
             and c.approach in APPROACH_COLOURS}
    spare = [colour for colour in OKABE_ITO if colour not in taken]
    styles = {}
    for index, column in enumerate(ordered):
        default = column.variant == DEFAULT_VARIANT
        if default and column.approach in APPROACH_COLOURS:
            colour = APPROACH_COLOURS[column.approach]
        elif spare:
            colour = spare.pop(0)
        else:  # more columns than colours: the marker and dash tell them apart
            colour = OKABE_ITO[index % len(OKABE_ITO)]
        styles[column] = LineStyle(colour, "-" if default else "--", MARKERS[index % len(MARKERS)])
    styles[SAME_STACK_COLUMN] = SAME_STACK_STYLE
    return styles


def _column(series: Series) -> Column:
    return Column(series.key.approach, series.key.variant)


def _is_same_stack(series: Series) -> bool:
    """The stack's own build natively, without a container: the same-stack baseline of its deployments."""
    return _column(series) == SAME_STACK_COLUMN


def _in_column_order(series) -> list[Series]:
    """Series in the matrix's column order (the legend's order): the same-stack baseline first."""
    return sorted(series, key=lambda item: column_order(_column(item)))


def _sized(series: Series) -> list[int]:
    return [size for size in series.sizes if size is not None and size > 0]


# -- figure layout ------------------------------------------------------------------------------------------


@dataclass
class Panel:
    """One stack's panel: its candidates and the system MPI's native rows they are compared with."""

    stack: str
    candidates: list[Series]
    baselines: list[Series] = field(default_factory=list)

    @property
    def title(self) -> str:
        against = ", ".join(dict.fromkeys(s.key.stack for s in self.baselines if s.key.stack != self.stack))
        return self.stack + (f" (system: {against})" if against else "")


def panels(group: Group) -> list[Panel]:
    """A panel per stack with candidates that have message sizes, in the group's order, then one per system MPI
    that no candidate was compared with."""
    baselines = {series.key: series for series in group.baselines}
    by_stack: dict[str, Panel] = {}
    for series in group.candidates:
        if not _sized(series):
            continue
        panel = by_stack.setdefault(series.key.stack, Panel(series.key.stack, []))
        panel.candidates.append(series)
        row = series.answer.baseline_row if series.answer else None
        if row in baselines and baselines[row] not in panel.baselines:
            panel.baselines.append(baselines[row])
    for panel in by_stack.values():  # a stack whose candidates have no answer: the group's baselines
        panel.baselines = panel.baselines or [s for s in group.baselines if _sized(s)]
    shown = {id(series) for panel in by_stack.values() for series in panel.baselines}
    for series in group.baselines:  # a system MPI nothing was compared with: a panel of its own (characterised)
        if _sized(series) and id(series) not in shown:
            by_stack.setdefault(series.key.stack, Panel(series.key.stack, [])).baselines.append(series)
    return list(by_stack.values())


def _grid(count: int, legend_entries: int):
    """A figure of ``count`` panels, PANEL_COLUMNS across, sharing both axes, with room below for a legend of
    ``legend_entries`` entries; laid out once with fixed margins (``bbox_inches='tight'`` would draw twice)."""
    from matplotlib.figure import Figure

    columns = max(1, min(PANEL_COLUMNS, count))
    rows = max(1, math.ceil(count / columns))
    legend_rows = math.ceil(legend_entries / _legend_columns(columns)) if legend_entries else 0
    left, right, top, gap_x, gap_y = 0.72, 0.12, 0.26, 0.22, 0.55
    bottom = 0.42 + (0.06 + 0.17 * legend_rows if legend_rows else 0)
    width = left + right + columns * PANEL_SIZE[0] + (columns - 1) * gap_x
    height = top + bottom + rows * PANEL_SIZE[1] + (rows - 1) * gap_y
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                           wspace=gap_x / PANEL_SIZE[0], hspace=gap_y / PANEL_SIZE[1])
    grid = figure.add_gridspec(rows, columns)
    axes: list = []
    for index in range(count):  # only the panels drawn: an empty axes costs as much as a full one
        share = {"sharex": axes[0], "sharey": axes[0]} if axes else {}
        axes.append(figure.add_subplot(grid[index // columns, index % columns], **share))
        # tick labels on the left column and under the lowest panel of each column
        axes[-1].tick_params(labelleft=index % columns == 0, labelbottom=index + columns >= count, labelsize=7.5)
    return figure, axes, bottom / height


def _legend_columns(panel_columns: int) -> int:
    """As many legend columns as panel columns (up to 3): an entry is about as wide as a panel."""
    return max(1, min(3, panel_columns))


class Legend:
    """A figure's legend entries, one per label (the first style given for it): every kind of line once."""

    def __init__(self) -> None:
        self.entries: dict[str, object] = {}

    def line(self, label: str, style: LineStyle) -> None:
        if label not in self.entries:
            from matplotlib.lines import Line2D

            self.entries[label] = Line2D([], [], **style.kwargs())

    def reference(self, label: str, colour_: str, linestyle, width: float = BOUND_LINE_WIDTH) -> None:
        if label not in self.entries:
            from matplotlib.lines import Line2D

            self.entries[label] = Line2D([], [], color=colour_, linestyle=linestyle, linewidth=width)

    def patch(self, label: str, colour_: str, alpha: float) -> None:
        if label not in self.entries:
            from matplotlib.patches import Patch

            self.entries[label] = Patch(facecolor=colour_, alpha=alpha, linewidth=0)

    def draw(self, figure, columns: int, bottom: float, salt: str) -> None:
        if not self.entries:
            return
        legend = figure.legend(list(self.entries.values()), list(self.entries), loc="upper center",
                               bbox_to_anchor=(0.5, bottom - 0.36 / figure.get_figheight()), frameon=False,
                               fontsize=7.5, ncol=_legend_columns(columns), handlelength=2.6, columnspacing=1.4)
        legend.set_gid(f"{LEGEND_ID}{salt}")


def _size_axis(axes, label: bool) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_locator(LogLocator(base=16))  # 1 B, 16 B, 256 B, 4 KiB, 64 KiB, 1 MiB: fits a panel
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: format_size(int(round(value)))))
    axes.xaxis.set_minor_locator(NullLocator())  # ticks are what drawing costs most; the grid shows the majors
    if label:
        axes.set_xlabel("message size", fontsize=7.5)
    axes.grid(True, which="major", color="#e6e6e6", linewidth=0.6)


def _plain_numbers(axis) -> None:
    """Value ticks as plain numbers (0.1, 1, 20, 10000), without mathtext (slow to lay out, and not plain text),
    and no minor ticks."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    axis.set_major_locator(LogLocator(base=10, numticks=7))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_locator(NullLocator())


def ratio_ticks(bottom: float, top: float) -> list[float]:
    """The NICE_RATIOS within [bottom, top]: 0.8 and 1.25 (a 20% loss or gain) over a narrow range, the 1-2-5
    steps over a wider one, the decades with 0.5 and 2 over a very wide one."""
    ticks = [tick for tick in NICE_RATIOS if bottom <= tick <= top]
    if len(ticks) > 8 or top / bottom > 10:  # 0.8 and 1.25 would crowd parity
        ticks = [tick for tick in ticks if tick not in (0.8, 1.25)]
    if len(ticks) > 8:
        ticks = [tick for tick in ticks if math.log10(tick).is_integer() or tick in (0.5, 2.0)]
    return ticks


def _ratio_axis(axes, bottom: float, top: float) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    axes.set_yscale("log")
    axes.set_ylim(bottom, top)
    axes.yaxis.set_major_locator(FixedLocator(ratio_ticks(bottom, top)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.yaxis.set_minor_locator(NullLocator())


def _svg(figure, salt: str) -> str:
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg")
    text = buffer.getvalue()
    text = _STRIP.sub("", text[text.index("<svg"):])
    # matplotlib names its groups figure_1, axes_1, ... in every SVG: drop the ids nothing refers to, so that ids
    # stay unique on a page of many plots (the referenced ones, clip paths and markers, are salted per plot, and
    # the legend's by its gid)
    referenced = set(_REFERENCE.findall(text))
    return _ID.sub(lambda match: match.group(0) if match.group(1) in referenced
                   or match.group(1).startswith(LEGEND_ID) else "", text)


def _panel_title(axes, text: str) -> None:
    # as plain text above the axes: set_title would measure every tick label to place itself
    axes.text(0.0, 1.025, text, transform=axes.transAxes, fontsize=8, ha="left", va="bottom")


def _style_of(series: Series, styles: dict[Column, LineStyle]) -> tuple[str, LineStyle]:
    if _is_same_stack(series):
        return SAME_STACK_LABEL, SAME_STACK_STYLE
    column = _column(series)
    return column.label, styles.get(column) or column_styles([column])[column]


#: From this many stacks on, a plot is one dense panel instead of small multiples: one colour per approach
#: (+variant), without markers, bands or a panel per stack (a campaign of 20 stacks would read none the better).
DENSE = 10


def _dense(group: Group) -> bool:
    return len({series.key.stack for series in group.candidates if _sized(series)}) > DENSE


# -- the value plot -----------------------------------------------------------------------------------------


def _bound_lines(group: Group, bounds: MachineBounds | None) -> list[tuple[str, list[int], list[float], object]]:
    """The machine's bounds over the group's sizes, as (label, sizes, values, dash): memcpy in cache and from
    memory above (bandwidth of bw and bibw) and TCP loopback below; for latency, the shared-memory floor and
    TCP's latency. Only the bounds measured."""
    if bounds is None:
        return []
    sizes = sorted({size for series in [*group.baselines, *group.candidates] for size in _sized(series)})
    benchmark, metric = group.key.benchmark, group.key.metric
    if not sizes or not ((metric == "bandwidth" and benchmark in COPIES) or
                         (metric == "latency" and benchmark in LATENCY_BENCHMARKS)):
        return []
    if metric == "bandwidth":
        copies = COPIES[benchmark]
        times = "" if copies == 1 else f" ×{copies}"
        lines = [(f"memcpy in cache{times} (upper bound)", [bounds.memcpy_mbs(s, "cache") for s in sizes], copies,
                  (0, (1, 1.5))),
                 (f"memcpy from memory{times}", [bounds.memcpy_mbs(s, "memory") for s in sizes], copies, "-."),
                 (f"TCP loopback{times} (lower bound)", [bounds.tcp_bandwidth_mbs(s) for s in sizes], copies,
                  (0, (5, 1.5, 1, 1.5, 1, 1.5)))]
    else:
        floor = bounds.shm_latency_us()
        lines = [("shared-memory floor (1 B)", [floor] * len(sizes), 1, (0, (6, 2.5))),
                 ("TCP loopback latency", [bounds.tcp_latency_us(s) for s in sizes], 1, (0, (5, 1.5, 1, 1.5, 1, 1.5)))]
    return [(label, sizes, [value * factor for value in values], dash) for label, values, factor, dash in lines
            if all(value is not None for value in values)]


def _marks(index: int, count: int) -> dict:
    """Markers on every count-th point, shifted by the line's index: lines that lie on one another (deployments
    at the same speed) still show each its own markers."""
    return {"markevery": (index % count, count)} if count > 1 else {}


def _above_bound(group: Group, bounds: MachineBounds | None, series: list[Series]) -> list[tuple[int, float]]:
    """The (size, median) points of these series above the memcpy bound of their size (report/bounds.py)."""
    return [(size, item.median[size]) for item in series for size in _sized(item)
            if above_memcpy(bounds, group.key.benchmark, group.key.metric, size, item.median[size])]


def _draw_series(axes, series: Series, style: LineStyle, band_alpha: float, zorder: float = 2,
                 marks: dict | None = None) -> None:
    sizes = _sized(series)
    axes.fill_between(sizes, [series.low[s] for s in sizes], [series.high[s] for s in sizes], color=style.colour,
                      alpha=band_alpha, linewidth=0, zorder=zorder - 0.5)
    axes.plot(sizes, [series.median[s] for s in sizes], zorder=zorder, **style.kwargs(), **(marks or {}))


def value_plot(group: Group, bounds: MachineBounds | None = None,
               styles: dict[Column, LineStyle] | None = None) -> str:
    """The figure against size, log-log, a panel per stack: the system MPI natively and the same stack natively,
    every approach and variant of the stack with its launches' spread, and the machine's bounds where measured."""
    if _dense(group):
        return _dense_value_plot(group, bounds)
    styles = styles or column_styles(_column(s) for s in group.candidates)
    found = panels(group)
    legend = Legend()
    references = _bound_lines(group, bounds)
    if any(panel.baselines for panel in found):
        legend.line(SYSTEM_LABEL, SYSTEM_STYLE)
    for series in _in_column_order(s for panel in found for s in panel.candidates):
        legend.line(*_style_of(series, styles))
    for label, _, _, dash in references:
        legend.reference(label, BOUND_COLOUR, dash)
    above = {id(panel): _above_bound(group, bounds, [*panel.baselines, *panel.candidates]) for panel in found}
    if any(above.values()):
        legend.line(ABOVE_LABEL, ABOVE_STYLE)
    figure, axes_list, bottom = _grid(len(found), len(legend.entries))
    for index, (panel, axes) in enumerate(zip(found, axes_list)):
        for _, sizes, values, dash in references:
            axes.plot(sizes, values, color=BOUND_COLOUR, linestyle=dash, linewidth=BOUND_LINE_WIDTH, zorder=1)
        for series in panel.baselines:
            _draw_series(axes, series, SYSTEM_STYLE, 0.12, zorder=1.5)  # beneath: the candidates on it stay seen
        deployed = [series for series in panel.candidates if not _is_same_stack(series)]
        for series in panel.candidates:
            if _is_same_stack(series):
                _draw_series(axes, series, SAME_STACK_STYLE, 0.12, zorder=2)
            else:
                _draw_series(axes, series, _style_of(series, styles)[1], 0.12, zorder=3,
                             marks=_marks(deployed.index(series), len(deployed)))
        if above[id(panel)]:
            sizes, values = zip(*above[id(panel)])
            axes.plot(sizes, values, zorder=5, **ABOVE_STYLE.kwargs())
        _panel_title(axes, panel.title)
        _size_axis(axes, label=index + PANEL_COLUMNS >= len(found))
        axes.set_yscale("log")
        _plain_numbers(axes.yaxis)
    better = "higher is better" if group.higher_is_better else "lower is better"
    if axes_list:
        figure.supylabel(f"{group.key.metric} ({group.unit}), {better}", fontsize=7.5, x=0.1 / figure.get_figwidth())
    legend.draw(figure, min(PANEL_COLUMNS, len(found)), bottom, f"{group.key.slug}-value")
    return _svg(figure, f"{group.key.slug}-value")


# -- the ratio plots ----------------------------------------------------------------------------------------


def _comparisons(answer) -> list:
    return [c for c in (answer.sizes if answer else []) if c.size and c.size > 0 and math.isfinite(c.ratio)
            and c.ratio > 0]


def _floor_band(answers, relative: float) -> tuple[list[int], list[float], list[float]]:
    """The practical floor in ratio terms per size, from the first comparison that carries it; else ±relative."""
    for answer in answers:
        points = [c for c in _comparisons(answer) if math.isfinite(c.floor_low)]
        if points:
            return [c.size for c in points], [c.floor_low for c in points], [c.floor_high for c in points]
    sizes = sorted({c.size for answer in answers for c in _comparisons(answer)})
    return sizes, [1 - relative] * len(sizes), [1 + relative] * len(sizes)


#: how far beyond the ratios themselves the axis follows their intervals: a noisy size's interval of 0.001-1000
#: would otherwise squeeze every ratio into a sliver (the band is cut at the axis instead)
INTERVAL_REACH = 4.0


def _ratio_limits(answers) -> tuple[float, float]:
    ratios, intervals = [1.0], []
    for answer in answers:
        for c in _comparisons(answer):
            ratios.append(c.ratio)
            intervals += [v for v in (c.ci_low, c.ci_high) if math.isfinite(v) and v > 0]
    low, high = min(ratios), max(ratios)
    bottom = max(min([low, *intervals]), low / INTERVAL_REACH, 1e-3) / 1.2
    top = min(max([high, *intervals]), high * INTERVAL_REACH, 1e3) * 1.2
    return min(bottom, 0.75), max(top, 1.35)


def _ratio_figure(group: Group, report: Report, rows: list[tuple[str, list[tuple[Series, object]]]],
                  styles: dict[Column, LineStyle], ylabel: str, salt: str) -> str:
    """Panels of (title, [(series, answer)]): each answer's ratio per size with its interval, parity and the
    practical floor."""
    answers = [answer for _, pairs in rows for _, answer in pairs]
    floor_text = f"practical floor ({report.settings.floor.describe(higher_is_better=group.higher_is_better)})"
    legend = Legend()
    for series in _in_column_order(series for _, pairs in rows for series, _ in pairs):
        legend.line(*_style_of(series, styles))
    legend.reference(PARITY_LABEL, BASELINE_COLOUR, "-", width=1.0)
    legend.patch(floor_text, FLOOR_COLOUR, 0.3)
    bottom, top = _ratio_limits(answers)
    figure, axes_list, legend_bottom = _grid(len(rows), len(legend.entries))
    for index, ((title, pairs), axes) in enumerate(zip(rows, axes_list)):
        sizes, low, high = _floor_band([answer for _, answer in pairs], report.settings.floor.relative)
        if sizes:
            axes.fill_between(sizes, [max(v, bottom) for v in low], [min(v, top) for v in high], color=FLOOR_COLOUR,
                              alpha=0.3, linewidth=0, zorder=0)
        axes.axhline(1.0, color=BASELINE_COLOUR, linewidth=1.0, zorder=1)
        deployed = [series for series, _ in pairs if not _is_same_stack(series)]
        for series, answer in pairs:
            points = _comparisons(answer)
            style = _style_of(series, styles)[1]
            at = [c.size for c in points]
            lows = [c.ci_low if math.isfinite(c.ci_low) and c.ci_low > 0 else math.nan for c in points]
            highs = [c.ci_high if math.isfinite(c.ci_high) and c.ci_high > 0 else math.nan for c in points]
            axes.fill_between(at, lows, highs, color=style.colour, alpha=0.15, linewidth=0, zorder=1.5)
            same = _is_same_stack(series)
            axes.plot(at, [c.ratio for c in points], zorder=2 if same else 3, **style.kwargs(),
                      **({} if same else _marks(deployed.index(series), len(deployed))))
        _panel_title(axes, title)
        _size_axis(axes, label=index + PANEL_COLUMNS >= len(rows))
        _ratio_axis(axes, bottom, top)
    if axes_list:
        figure.supylabel(ylabel, fontsize=7.5, x=0.1 / figure.get_figwidth())
    legend.draw(figure, min(PANEL_COLUMNS, len(rows)), legend_bottom, salt)
    return _svg(figure, salt)


def ratio_plot(group: Group, report: Report, styles: dict[Column, LineStyle] | None = None) -> str | None:
    """The ratio against the system MPI per size, a panel per stack (1 = native speed, below = slower), with its
    confidence interval; parity at 1 and the practical floor shaded. None when nothing was compared."""
    if _dense(group):
        return _dense_ratio_plot(group, report)
    styles = styles or column_styles(_column(s) for s in group.candidates)
    rows = [(panel.title, [(s, s.answer) for s in panel.candidates if _comparisons(s.answer)])
            for panel in panels(group)]
    rows = [(title, pairs) for title, pairs in rows if pairs]
    if not rows:
        return None
    return _ratio_figure(group, report, rows, styles, "ratio to the system MPI natively (below 1: slower)",
                         f"{group.key.slug}-ratio")


def deployment_answer(series: Series):
    """What a deployment costs: the row against the same build natively (its same-stack answer, or its system
    answer where the system MPI is that very build); None for a native row or without one."""
    if series.key.approach == "native":
        return None
    if series.same_stack is not None:
        return series.same_stack
    if series.answer is not None and series.answer.same_build_as_system:
        return series.answer
    return None


def deployment_plot(group: Group, report: Report, styles: dict[Column, LineStyle] | None = None) -> str | None:
    """The deployment effect, a panel per stack: each approach against the same build natively (what the
    container, the hybrid launch or the bound-in MPI costs, whatever the build itself costs against the system
    MPI); None when the group has no such comparison."""
    styles = styles or column_styles(_column(s) for s in group.candidates)
    by_stack: dict[str, list[tuple[Series, object]]] = {}
    for series in group.candidates:
        answer = deployment_answer(series)
        if answer is not None and _comparisons(answer):
            by_stack.setdefault(series.key.stack, []).append((series, answer))
    if not by_stack:
        return None
    rows = list(by_stack.items())
    return _ratio_figure(group, report, rows, styles, "ratio to the same build natively (below 1: slower)",
                         f"{group.key.slug}-deployment")


# -- one dense panel for many stacks ------------------------------------------------------------------------


def _dense_lines(axes, lines: list[tuple[Series, list[int], list[float]]]) -> int:
    """One colour per approach and variant, every stack's line in it; a legend entry per approach and variant."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    styles = column_styles(_column(series) for series, _, _ in lines)
    by_column: dict[Column, list] = {}
    for series, sizes, values in lines:
        by_column.setdefault(_column(series), []).append(list(zip(sizes, values)))
    for column, segments in by_column.items():
        style = styles[column]
        axes.add_collection(LineCollection(segments, colors=style.colour, linewidths=0.9, alpha=0.7,
                                           linestyles=style.linestyle))
        axes.add_line(Line2D([], [], color=style.colour, linestyle=style.linestyle,
                             label=f"{column.label} ({len(segments)} stack{'' if len(segments) == 1 else 's'})"))
    axes.autoscale_view()
    return len(by_column)


def _dense_figure():
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8.6, 3.8))
    figure.subplots_adjust(left=0.09, right=0.63, bottom=0.13, top=0.97)
    return figure, figure.add_subplot()


def _dense_legend(axes, salt: str) -> None:
    legend = axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False,
                         borderaxespad=0.0)
    legend.set_gid(f"{LEGEND_ID}{salt}")


def _dense_value_plot(group: Group, bounds: MachineBounds | None) -> str:
    figure, axes = _dense_figure()
    for label, sizes, values, dash in _bound_lines(group, bounds):
        axes.plot(sizes, values, color=BOUND_COLOUR, linestyle=dash, linewidth=BOUND_LINE_WIDTH, label=label)
    for series in group.baselines:
        sizes = _sized(series)
        if sizes:
            axes.plot(sizes, [series.median[s] for s in sizes], color=BASELINE_COLOUR, linewidth=2.0, zorder=4,
                      label=f"{series.label} (system, median)")
    _dense_lines(axes, [(s, _sized(s), [s.median[size] for size in _sized(s)]) for s in group.candidates
                        if _sized(s)])
    _size_axis(axes, label=True)
    axes.tick_params(labelsize=8)
    axes.set_yscale("log")
    _plain_numbers(axes.yaxis)
    better = "higher is better" if group.higher_is_better else "lower is better"
    axes.set_ylabel(f"{group.key.metric} ({group.unit}), {better}", fontsize=8)
    _dense_legend(axes, f"{group.key.slug}-value")
    return _svg(figure, f"{group.key.slug}-value")


def _dense_ratio_plot(group: Group, report: Report) -> str:
    figure, axes = _dense_figure()
    answers = [series.answer for series in group.candidates if _comparisons(series.answer)]
    _dense_lines(axes, [(s, [c.size for c in _comparisons(s.answer)], [c.ratio for c in _comparisons(s.answer)])
                        for s in group.candidates if _comparisons(s.answer)])
    bottom, top = _ratio_limits(answers)
    sizes, low, high = _floor_band(answers, report.settings.floor.relative)
    if sizes:
        axes.fill_between(sizes, [max(v, bottom) for v in low], [min(v, top) for v in high], color=FLOOR_COLOUR,
                          alpha=0.25, linewidth=0,
                          label=f"practical floor ({report.settings.floor.describe(higher_is_better=group.higher_is_better)})")
    axes.axhline(1.0, color=BASELINE_COLOUR, linewidth=1.0, label="parity (native speed)")
    _size_axis(axes, label=True)
    axes.tick_params(labelsize=8)
    _ratio_axis(axes, bottom, top)
    axes.set_ylabel("ratio to the system MPI (1 = native speed)", fontsize=8)
    _dense_legend(axes, f"{group.key.slug}-ratio")
    return _svg(figure, f"{group.key.slug}-ratio")


# -- which groups, and drawing them -------------------------------------------------------------------------


#: At most this many benchmark groups are plotted (two or three figures each, a few tenths of a second apiece); a
#: report over a whole store of many campaigns plots the newest campaign's groups and gives the others as tables.
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


def report_styles(report: Report) -> dict[Column, LineStyle]:
    """One style per approach and variant of the whole report, so that a colour means the same in every plot."""
    return column_styles([*report.matrix.columns,
                          *(_column(s) for group in report.groups for s in group.candidates)])


def group_figures(group: Group, report: Report, styles: dict[Column, LineStyle] | None = None) -> tuple[str, ...]:
    """A group's SVGs: values; then, when anything was compared, the ratio to the system MPI; then the deployment
    effect when there is one."""
    styles = styles or report_styles(report)
    ratio = ratio_plot(group, report, styles)
    if ratio is None:
        return (value_plot(group, report.bounds, styles),)
    deployment = None if _dense(group) else deployment_plot(group, report, styles)
    return (value_plot(group, report.bounds, styles), ratio, *((deployment,) if deployment else ()))


def _plot_group(index: int) -> tuple[str, tuple[str, ...]]:
    report, groups, styles = _FORKED
    group = groups[index]
    return group.key.slug, group_figures(group, report, styles)


_FORKED: tuple = ()
#: From this many groups on, plots are drawn by forked worker processes, one per CPU.
PARALLEL_FROM = 4


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def group_plots(report: Report, limit: int = MAX_PLOTTED_GROUPS) -> dict[str, tuple[str, ...]]:
    """Per group slug, its figures as SVG text (``group_figures``; ``plotted_groups``), in the groups' order."""
    global _FORKED
    groups = plotted_groups(report, limit)
    styles = report_styles(report)
    workers = min(_cpus(), len(groups))
    if workers > 1 and len(groups) >= PARALLEL_FROM and "fork" in multiprocessing.get_all_start_methods():
        _FORKED = (report, groups, styles)  # read from the forked memory: nothing is pickled but the SVGs
        try:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                return dict(pool.map(_plot_group, range(len(groups))))
        finally:
            _FORKED = ()
    return {group.key.slug: group_figures(group, report, styles) for group in groups}
