"""point_result retracted_at: when a result was retracted

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29 17:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("point_result", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retracted_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # SQLite (3.35+) drops a plain column in place, without copying the table its other tables refer to.
        op.execute("ALTER TABLE point_result DROP COLUMN retracted_at")
    else:
        op.drop_column("point_result", "retracted_at")
