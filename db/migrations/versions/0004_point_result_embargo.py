"""point_result embargo

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 10:55:23.051990
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("point_result", schema=None) as batch_op:
        batch_op.add_column(sa.Column("embargo_until", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("point_result", schema=None) as batch_op:
        batch_op.drop_column("embargo_until")
