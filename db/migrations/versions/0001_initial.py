"""initial schema: hardware, recipe, sweep, job, point_result

Revision ID: 0001
Revises:
Create Date: 2026-11-29 09:46:52.619887
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "hardware",
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("vendor", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("accelerator_unit", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "recipe",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("path", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("hardware_key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("engine_kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("snapshot", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("recipe", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_recipe_fingerprint"), ["fingerprint"], unique=True)
        batch_op.create_index(batch_op.f("ix_recipe_name"), ["name"], unique=False)

    op.create_table(
        "sweep",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sweep", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sweep_name"), ["name"], unique=True)

    op.create_table(
        "job",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("sweep_id", sa.Integer(), nullable=False),
        sa.Column("recipe_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("points_planned", sa.Integer(), nullable=False),
        sa.Column("error_kind", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("error_message", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("retryable", sa.Boolean(), nullable=True),
        sa.Column("log_dir", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("started_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("finished_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["recipe_id"],
            ["recipe.id"],
        ),
        sa.ForeignKeyConstraint(
            ["sweep_id"],
            ["sweep.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_job_recipe_id"), ["recipe_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_job_sweep_id"), ["sweep_id"], unique=False)

    op.create_table(
        "point_result",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sweep_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("recipe_id", sa.Integer(), nullable=False),
        sa.Column("point_key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("repeat_index", sa.Integer(), nullable=False),
        sa.Column("workload_kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("isl", sa.Integer(), nullable=True),
        sa.Column("osl", sa.Integer(), nullable=True),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("origin", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("valid", sa.Boolean(), nullable=False),
        sa.Column("validity_reasons", sa.JSON(), nullable=False),
        sa.Column("completed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("request_throughput", sa.Float(), nullable=False),
        sa.Column("output_throughput", sa.Float(), nullable=False),
        sa.Column("total_token_throughput", sa.Float(), nullable=False),
        sa.Column("accelerators", sa.Integer(), nullable=False),
        sa.Column("output_throughput_per_gpu", sa.Float(), nullable=False),
        sa.Column("total_token_throughput_per_gpu", sa.Float(), nullable=False),
        sa.Column("ttft_p50_ms", sa.Float(), nullable=True),
        sa.Column("ttft_p99_ms", sa.Float(), nullable=True),
        sa.Column("tpot_p50_ms", sa.Float(), nullable=True),
        sa.Column("tpot_p90_ms", sa.Float(), nullable=True),
        sa.Column("e2el_p50_ms", sa.Float(), nullable=True),
        sa.Column("interactivity_p50", sa.Float(), nullable=True),
        sa.Column("interactivity_p90", sa.Float(), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("records_path", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("started_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("finished_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("retracted", sa.Boolean(), nullable=False),
        sa.Column("retraction_reason", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["job.id"],
        ),
        sa.ForeignKeyConstraint(
            ["recipe_id"],
            ["recipe.id"],
        ),
        sa.ForeignKeyConstraint(
            ["sweep_id"],
            ["sweep.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("sweep_id", "point_key", name="uq_point_result_sweep_point"),
    )
    with op.batch_alter_table("point_result", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_point_result_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_point_result_recipe_id"), ["recipe_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_point_result_sweep_id"), ["sweep_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("point_result", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_point_result_sweep_id"))
        batch_op.drop_index(batch_op.f("ix_point_result_recipe_id"))
        batch_op.drop_index(batch_op.f("ix_point_result_job_id"))

    op.drop_table("point_result")
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_job_sweep_id"))
        batch_op.drop_index(batch_op.f("ix_job_recipe_id"))

    op.drop_table("job")
    with op.batch_alter_table("sweep", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sweep_name"))

    op.drop_table("sweep")
    with op.batch_alter_table("recipe", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_recipe_name"))
        batch_op.drop_index(batch_op.f("ix_recipe_fingerprint"))

    op.drop_table("recipe")
    op.drop_table("hardware")
