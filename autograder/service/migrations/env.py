"""Alembic environment: runs the migrations against the URL `db.upgrade` passes in."""

from alembic import context
from sqlalchemy import create_engine

from autograder.service.db import Base

config = context.config
url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
connectable = config.attributes.get("connection") or create_engine(url)

with connectable.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
