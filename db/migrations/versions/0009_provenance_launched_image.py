"""provenance engine_image, engine_image_digest: the image the launched engine ran in, as its runner reported

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 13:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

COLUMNS = ("engine_image", "engine_image_digest")


def upgrade() -> None:
    with op.batch_alter_table("provenance", schema=None) as batch_op:
        for name in COLUMNS:
            batch_op.add_column(sa.Column(name, sa.String(), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # SQLite (3.35+) drops a plain column in place, without copying the table its other tables refer to.
        op.execute("ALTER TABLE provenance DROP COLUMN engine_image")
        op.execute("ALTER TABLE provenance DROP COLUMN engine_image_digest")
    else:
        for name in COLUMNS:
            op.drop_column("provenance", name)
