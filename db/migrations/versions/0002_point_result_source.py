"""point_result.source for imported results

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 10:09:46.183712
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("point_result", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source", sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("point_result", schema=None) as batch_op:
        batch_op.drop_column("source")
