"""point_result date_known: False when the result's source stated no date (its times are then the import's)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 20:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("point_result", schema=None) as batch_op:
        batch_op.add_column(sa.Column("date_known", sa.Boolean(), nullable=False, server_default=sa.true()))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # SQLite (3.35+) drops a plain column in place, without copying the table its other tables refer to.
        op.execute("ALTER TABLE point_result DROP COLUMN date_known")
    else:
        op.drop_column("point_result", "date_known")
