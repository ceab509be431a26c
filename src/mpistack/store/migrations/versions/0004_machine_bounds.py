"""Machine bounds: what the machine a campaign ran on can do at all (memcpy, TCP loopback, the shared-memory
floor), measured before its first case, one row per host, kind of bound and MPI family, with its provenance.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "machine_bounds",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id", ondelete="CASCADE"), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("cpu_model", sa.Text),
        sa.Column("kernel", sa.String(200)),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("mpi", sa.String(32), nullable=False),
        sa.Column("command", sa.Text),
        sa.Column("library_version", sa.Text),
        sa.Column("measured_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("launches", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message", sa.Text),
        sa.Column("figures", sa.JSON),
    )
    op.create_index("ix_machine_bounds_campaign_id", "machine_bounds", ["campaign_id"])


def downgrade() -> None:
    op.drop_index("ix_machine_bounds_campaign_id", table_name="machine_bounds")
    op.drop_table("machine_bounds")
