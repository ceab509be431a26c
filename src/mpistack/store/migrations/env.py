"""Alembic environment: always run with a connection handed in by mpistack.store.engine."""

from alembic import context

from mpistack.store.schema import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
