"""The first schema: campaigns, runs, run tags, results.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "campaigns",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("spec", sa.JSON),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_campaigns_name", "campaigns", ["name"])
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id", ondelete="CASCADE")),
        sa.Column("benchmark", sa.String(64), nullable=False),
        sa.Column("title", sa.String(200)),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("incomplete", sa.Boolean, nullable=False),
        sa.Column("message", sa.Text),
        sa.Column("stack", sa.String(200)),
        sa.Column("approach", sa.String(64)),
        sa.Column("launcher", sa.String(64)),
        sa.Column("ranks", sa.Integer),
        sa.Column("nodes", sa.Integer),
        sa.Column("command", sa.Text),
        sa.Column("environment", sa.JSON),
        sa.Column("benchmark_suite", sa.String(64)),
        sa.Column("device", sa.String(16)),
        sa.Column("buffers", sa.String(16)),
        sa.Column("mpi_library_version", sa.Text),
        sa.Column("libfabric_version", sa.String(64)),
        sa.Column("libfabric_provider", sa.String(64)),
        sa.Column("image_digest", sa.String(128)),
        sa.Column("hosts", sa.JSON),
        sa.Column("tool_version", sa.String(32)),
        sa.Column("source", sa.Text),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_runs_campaign_id", "runs", ["campaign_id"])
    op.create_table(
        "run_tags",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_index("ix_run_tags_key_value", "run_tags", ["key", "value", "run_id"])
    stat = [sa.Column(name, sa.Float) for name in
            ("min", "max", "mean", "median", "p50", "p90", "p99", "stddev", "ci95_low", "ci95_high")]
    op.create_table(
        "results",
        sa.Column("id", _id, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("benchmark", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger),
        sa.Column("metric", sa.String(32), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.String(16), nullable=False),
        *stat,
        sa.Column("iterations", sa.Integer),
        sa.Column("validation", sa.String(8)),
    )
    op.create_index("ix_results_run_id", "results", ["run_id"])
    op.create_index("ix_results_benchmark_size", "results", ["benchmark", "size"])


def downgrade() -> None:
    op.drop_table("results")
    op.drop_table("run_tags")
    op.drop_table("runs")
    op.drop_table("campaigns")
