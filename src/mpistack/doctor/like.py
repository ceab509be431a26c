"""Figures of a file read against a published reference mpistack ships (``mpistack doctor FILE --like
ref:NAME``): the reference says what its kind of system reaches (its best row: the fabric's) and, where it
publishes one, what the same system reaches when it falls back (a row at TCP's level); the file's figures are
placed between them. An ingested run is read alike (``mpistack doctor --run N --like ref:NAME``). Without a
reference the doctor says only what the text proves."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ingest import published
from ..parsers import ParsedRun, ParseError
from ..spec.benchmarks import metric_of

PREFIX = "ref:"


class UnknownReference(ValueError):
    """--like names no shipped reference: the message lists those there are."""


@dataclass(frozen=True)
class Figure:
    """One test's figure as the comparison reads it: a bandwidth's plateau or a latency at its smallest size."""

    benchmark: str
    metric: str  # bandwidth | latency
    size: int | None
    value: float
    nodes: int | None
    buffers: str | None
    label: str  # where it comes from: 'FILE:LINE' or the reference's row ('CXI hook on')


@dataclass
class LikeSubject:
    """The files' figures and the reference they are read against."""

    name: str
    title: str
    source: str
    figures: list[Figure] = field(default_factory=list)  # the files'
    reference: list[Figure] = field(default_factory=list)  # the reference's rows


def figure_of(run: ParsedRun, label: str) -> Figure | None:
    """A bandwidth test's highest figure (its plateau) or a latency test's figure at its smallest size; None for
    a test without figures or of another metric."""
    metric = metric_of(run.benchmark).name
    sizes, _validations, metrics, _stats = run.rows.columns()
    values = metrics.get(metric)
    if values is None or not len(values):
        return None
    return _figure(run.benchmark, metric, zip(sizes, values), run.provenance.nodes, run.provenance.buffers, label)


def figure_of_results(results: list[dict], label: str) -> Figure | None:
    """The same figure from one stored run's results (``mpistack doctor --run N --like``): rows as the store's
    query_results gives them, each with its run's benchmark, nodes and buffers."""
    if not results:
        return None
    first = results[0]
    metric = metric_of(first["benchmark"]).name
    pairs = [(row["size"], row["value"]) for row in results if row["metric"] == metric and row["value"] is not None]
    return _figure(first["benchmark"], metric, pairs, first.get("nodes"), first.get("buffers"), label)


def _figure(benchmark: str, metric: str, sized, nodes: int | None, buffers: str | None,
            label: str) -> Figure | None:
    pairs = [(size, value) for size, value in sized if value == value]  # NaN: a size without a figure
    if not pairs:
        return None
    if metric == "bandwidth":
        size, value = max(pairs, key=lambda pair: pair[1])
    else:
        size, value = min(pairs, key=lambda pair: pair[0])
    return Figure(benchmark, metric, size, value, nodes, buffers, label)


def load(name: str) -> LikeSubject:
    """A shipped reference by name (``ref:NAME`` or ``NAME``) with its rows' figures; UnknownReference lists the
    names when there is none of that name."""
    bare = name[len(PREFIX):] if name.startswith(PREFIX) else name
    known = published.available()
    if bare not in known:
        raise UnknownReference(f"--like {name!r}: no shipped reference of that name; expected ref:NAME, one of "
                               + ", ".join(f"ref:{known_name}" for known_name in known))
    loaded = known[bare]
    reference = loaded.reference
    subject = LikeSubject(bare, reference.title, reference.source + (f" ({reference.url})" if reference.url else ""))
    for path, tags in loaded.files():
        try:
            runs = published.parse_content(path, None, messages=False)
        except ParseError:  # a shipped file that does not parse is the test suite's to catch, not the user's
            continue
        for run in runs:
            label = tags.get("source_label") or tags.get("approach") or path.stem
            figure = figure_of(run, label)
            if figure is not None:
                subject.reference.append(figure)
    return subject
