"""The results store's tables.

A campaign has runs; a run is one benchmark invocation (one stack x approach x launcher x placement) with
its status, exact command, environment and provenance; a result is one metric of one benchmark at one
message size. Tags are free key/value pairs on a run (system, nodes, buffers, ...), kept in their own
indexed table so that `--where key=value` filters stay fast on millions of results.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from ..spec.status import RunStatus



def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map = {dict: JSON, list: JSON}


class CampaignRow(Base):
    __tablename__ = "campaigns"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    spec: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    runs: Mapped[list[RunRow]] = relationship(back_populates="campaign")


class CampaignLockRow(Base):
    """The runner of a campaign (by name) while it runs: one row per name, so that a second is refused."""

    __tablename__ = "campaign_locks"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    since: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RunRow(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int | None] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"), index=True)
    benchmark: Mapped[str] = mapped_column(String(64))
    title: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(32), default=RunStatus.OK.value)
    incomplete: Mapped[bool] = mapped_column(Boolean, default=False)
    message: Mapped[str | None] = mapped_column(Text)
    # what was run
    stack: Mapped[str | None] = mapped_column(String(200))
    approach: Mapped[str | None] = mapped_column(String(64))
    launcher: Mapped[str | None] = mapped_column(String(64))
    ranks: Mapped[int | None] = mapped_column(Integer)
    nodes: Mapped[int | None] = mapped_column(Integer)
    command: Mapped[str | None] = mapped_column(Text)
    environment: Mapped[dict | None] = mapped_column(JSON)
    # provenance
    benchmark_suite: Mapped[str | None] = mapped_column(String(64))  # osu 7.5, mpistack-bench 0.1, ...
    device: Mapped[str | None] = mapped_column(String(16))  # cuda, rocm, None for host memory
    buffers: Mapped[str | None] = mapped_column(String(16))  # H-H, D-D, ...
    mpi_library_version: Mapped[str | None] = mapped_column(Text)
    libfabric_version: Mapped[str | None] = mapped_column(String(64))
    libfabric_provider: Mapped[str | None] = mapped_column(String(64))
    image_digest: Mapped[str | None] = mapped_column(String(128))
    hosts: Mapped[list | None] = mapped_column(JSON)
    tool_version: Mapped[str | None] = mapped_column(String(32))
    source: Mapped[str | None] = mapped_column(Text)  # file (and block line) the run was read from
    # sha256 of the ingested file: the same file is stored once unless replaced
    content_sha256: Mapped[str | None] = mapped_column(String(64), index=True)
    # what the MPI library said it used: transport, provider, single-copy mechanism, ... (doctor evidence)
    transport: Mapped[dict | None] = mapped_column(JSON)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    campaign: Mapped[CampaignRow | None] = relationship(back_populates="runs")
    tags: Mapped[list[RunTagRow]] = relationship(back_populates="run", cascade="all, delete-orphan")
    results: Mapped[list[ResultRow]] = relationship(back_populates="run", cascade="all, delete-orphan")


class RunTagRow(Base):
    __tablename__ = "run_tags"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)

    run: Mapped[RunRow] = relationship(back_populates="tags")

    # (key, value) first: filters look runs up by tag; run_id makes it covering.
    __table_args__ = (Index("ix_run_tags_key_value", "key", "value", "run_id"),)


class ResultRow(Base):
    __tablename__ = "results"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    benchmark: Mapped[str] = mapped_column(String(64))
    size: Mapped[int | None] = mapped_column(BigInteger)
    metric: Mapped[str] = mapped_column(String(32))
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(16))
    min: Mapped[float | None] = mapped_column(Float)
    max: Mapped[float | None] = mapped_column(Float)
    mean: Mapped[float | None] = mapped_column(Float)
    median: Mapped[float | None] = mapped_column(Float)
    p50: Mapped[float | None] = mapped_column(Float)
    p90: Mapped[float | None] = mapped_column(Float)
    p99: Mapped[float | None] = mapped_column(Float)
    stddev: Mapped[float | None] = mapped_column(Float)
    ci95_low: Mapped[float | None] = mapped_column(Float)
    ci95_high: Mapped[float | None] = mapped_column(Float)
    iterations: Mapped[int | None] = mapped_column(Integer)
    validation: Mapped[str | None] = mapped_column(String(8))  # pass, fail, None when not validated

    run: Mapped[RunRow] = relationship(back_populates="results")

    __table_args__ = (
        Index("ix_results_run_id", "run_id"),
        Index("ix_results_benchmark_size", "benchmark", "size"),
    )
