"""report.html: one self-contained page (styles inline, plots as inline SVG; no scripts, fonts, images or links
to fetch): the compatibility matrix coloured by class (it fits a 1024 px window: cells wrap, a long library
version line is shortened with the whole line on hover), per benchmark the plots as small multiples (tables folded
away beneath), the classes, the failed and timed-out runs, and each stack and approach's provenance.
Rendered from templates/report.html with autoescaping on."""

from __future__ import annotations

import re
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


#: a library version line longer than this is shortened in the matrix (the whole line is its hover text)
LIBRARY_CHARS = 32
_VERSION_WORD = re.compile(r"\bVersion:\s*", re.I)


def short_library(text: str | None, limit: int = LIBRARY_CHARS) -> str:
    """A library version line as the matrix shows it: its first clause without the word "Version:" ("Open MPI
    v4.1.4" of Open MPI's 120-character ident line, "MPICH 4.0.2"), cut at a word with an ellipsis beyond
    ``limit`` characters."""
    line = " ".join(_VERSION_WORD.sub("", _first_line(text)).split())
    head = line.split(",", 1)[0].strip() or line
    if len(head) <= limit:
        return head
    cut = head[:limit - 1].rsplit(" ", 1)[0] if " " in head[:limit - 1] else head[:limit - 1]
    return cut.rstrip(" ,;:") + "…"


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(loader=PackageLoader("mpistack.report", "templates"), autoescape=True,
                       undefined=StrictUndefined)


def render_html(report: Report, plots: dict[str, tuple[str, ...]] | None = None) -> str:
    """The page; ``plots`` maps a group's slug to its SVGs (``plots.group_plots``: values, ratio to the system
    MPI and, where there is one, the deployment effect), or none."""
    safe = {slug: tuple(Markup(svg) for svg in svgs) for slug, svgs in (plots or {}).items()}
    return _environment().get_template("report.html").render(
        **template_context(report), plots=safe, css=css_class, first_line=_first_line, short_library=short_library,
        sized_groups=sum(group.sized for group in report.groups), max_plotted=MAX_PLOTTED_GROUPS)
