"""Alembic environment: runs migrations on the connection or URL the caller gives (db.session.migrate)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from db.models import SQLModel

target_metadata = SQLModel.metadata
config = context.config


def run_migrations() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = config.get_main_option("sqlalchemy.url")
    if url is None:  # db.session always sets it: only a hand-run alembic without it gets here
        raise RuntimeError("alembic: no sqlalchemy.url to migrate (run `infersweep db upgrade`)")
    engine = create_engine(url)
    with engine.connect() as new_connection:
        context.configure(connection=new_connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations()
