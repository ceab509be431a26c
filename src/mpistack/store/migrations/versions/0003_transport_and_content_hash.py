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
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("transport", sa.JSON))
        batch.add_column(sa.Column("content_sha256", sa.String(64)))
        batch.create_index("ix_runs_content_sha256", ["content_sha256"])


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_content_sha256")
        batch.drop_column("content_sha256")
        batch.drop_column("transport")
