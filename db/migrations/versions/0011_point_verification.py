"""point_verification: what signed result bundles say of each Point (signed, verified by recomputation, hash only)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06 23:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "point_verification",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("point_result_id", sa.Integer(), nullable=False),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("signer", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("key_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("envelope_sha256", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["point_result_id"], ["point_result.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        op.f("ix_point_verification_point_result_id"), "point_verification", ["point_result_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_point_verification_point_result_id"), table_name="point_verification")
    op.drop_table("point_verification")
