"""sweep_lease: one driver per sweep

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 10:05:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweep_lease",
        sa.Column("sweep", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("token", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("holder_host", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("holder_pid", sa.Integer(), nullable=False),
        sa.Column("holder_identity", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("acquired_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("heartbeat_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("sweep"),
    )


def downgrade() -> None:
    op.drop_table("sweep_lease")
