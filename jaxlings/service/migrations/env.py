"""Alembic environment: runs the migrations against the URL `db.upgrade` passes in.

Processes that start together (an API and its workers on a fresh database) would each find no
schema and create it, and all but one fail; on PostgreSQL they take turns on an advisory lock
held for the migration's transaction (SQLite's turn is taken in `db.upgrade`, on a lock file).
"""

from alembic import context
from sqlalchemy import create_engine, text

from jaxlings.service.db import MIGRATION_LOCK, Base

config = context.config
url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
connectable = config.attributes.get("connection")
if connectable is None:
    if not url:
        raise RuntimeError("no database to migrate: give the URL as attributes['url'] or sqlalchemy.url")
    connectable = create_engine(url)

with connectable.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":  # before the version is read: the next in turn finds it current
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        context.run_migrations()
