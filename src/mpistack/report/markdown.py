"""report.md: per benchmark the tables of figures (a row per size, a column per approach), then the classes, the
compatibility matrix with its legend, and the failed and timed-out runs. Rendered from templates/report.md."""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined

from .. import __version__
from ..analysis.answers import where_slow
from ..analysis.classes import format_size
from ..analysis.matrix import LEGEND, placement_text
from ..parsers.transport import describe_transport
from ..spec.benchmarks import metric_of
from .bounds import bounds_view
from .data import Report


def md(text) -> str:
    """Text safe in a Markdown table cell: no pipes, no line breaks."""
    return " ".join(str(text).split()).replace("|", "\\|")


def template_context(report: Report) -> dict:
    """What both the Markdown and the HTML templates are given."""
    return {
        "report": report, "version": __version__, "legend": LEGEND, "where": where_slow,
        "placement": placement_text, "default_metric": lambda benchmark: metric_of(benchmark).name,
        "scoped": len({group.key.scope for group in report.groups} | {row.scope for row in report.matrix.rows}) > 1,
        "floor": report.settings.floor.describe(higher_is_better=False),
        "small_below": format_size(report.settings.ranges.small_below),
        "large_from": format_size(report.settings.ranges.large_from),
        "transport": describe_transport,
        "machine_bounds": bounds_view(report),
    }


@lru_cache(maxsize=1)
def _environment() -> Environment:
    environment = Environment(loader=PackageLoader("mpistack.report", "templates"), autoescape=False,
                              undefined=StrictUndefined, keep_trailing_newline=True)
    environment.filters["md"] = md
    return environment


def render_markdown(report: Report) -> str:
    return _environment().get_template("report.md").render(**template_context(report))
