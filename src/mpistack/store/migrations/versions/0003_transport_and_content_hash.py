"""What a run's MPI library says it used (transport evidence), and the sha256 of the file a run was
ingested from (so that ingesting the same file twice stores it once).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("transport", sa.JSON))
    op.add_column("runs", sa.Column("content_sha256", sa.String(64)))
    op.create_index("ix_runs_content_sha256", "runs", ["content_sha256"])


def downgrade() -> None:
    # Plain ALTER TABLE, not a batch: a batch copies runs into a new table and drops the old one, and with
    # foreign keys on (every store connection) SQLite's DROP TABLE cascades to every result and tag.
    op.drop_index("ix_runs_content_sha256", table_name="runs")
    op.drop_column("runs", "content_sha256")
    op.drop_column("runs", "transport")
