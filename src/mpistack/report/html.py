"""report.html: one self-contained page (styles inline, plots as inline SVG; no scripts, fonts, images or links
to fetch): the compatibility matrix coloured by class, per benchmark the value and ratio plots (tables folded
away beneath), the classes, the failed and timed-out runs, and each stack and approach's provenance.
Rendered from templates/report.html with autoescaping on."""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from .data import Report
from .markdown import template_context
from .plots import MAX_PLOTTED_GROUPS  # plots imports matplotlib only when it draws

_CSS_CLASS = {"Y": "c-Y", "(Y)": "c-pY", "N": "c-N", "?": "c-q"}


def css_class(label: str) -> str:
    """The CSS class of a class label: Y green, (Y) amber, N red, ? grey."""
    return _CSS_CLASS.get(label, "c-q")


def _first_line(text: str | None) -> str:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(loader=PackageLoader("mpistack.report", "templates"), autoescape=True,
                       undefined=StrictUndefined)


def render_html(report: Report, plots: dict[str, tuple[str, str]] | None = None) -> str:
    """The page; ``plots`` maps a group's slug to its value and ratio SVGs (``plots.group_plots``), or none."""
    safe = {slug: (Markup(value), Markup(ratio)) for slug, (value, ratio) in (plots or {}).items()}
    return _environment().get_template("report.html").render(
        **template_context(report), plots=safe, css=css_class, first_line=_first_line,
        sized_groups=sum(group.sized for group in report.groups), max_plotted=MAX_PLOTTED_GROUPS)
