"""snapshot_publication, snapshot_retraction: a published snapshot names its parent and records its retractions

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07 01:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "snapshot_publication",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("parent_sha256", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("published_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("points", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "snapshot_retraction",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("point_result_id", sa.Integer(), nullable=False),
        sa.Column("point_sha256", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("reason", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("retracted_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("snapshot_retraction")
    op.drop_table("snapshot_publication")
