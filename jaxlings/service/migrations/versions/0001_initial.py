"""The first schema: students, tokens, uploads, submissions.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "students",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("login", sa.String(200), nullable=False, unique=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("student_id", sa.Integer, sa.ForeignKey("students.id"), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False),
    )
    op.create_table(
        "uploads",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("student_id", sa.Integer, sa.ForeignKey("students.id"), nullable=False, index=True),
        sa.Column("digest", sa.String(64), sa.ForeignKey("uploads.digest"), nullable=False),
        sa.Column("topics", sa.String(400), nullable=False),
        sa.Column("status", sa.String(20), nullable=False, index=True),
        sa.Column("progress", sa.String(400), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False, index=True),
        sa.Column("sent_at", sa.DateTime, nullable=True),
        sa.Column("started_at", sa.DateTime, nullable=True),
        sa.Column("lease_until", sa.DateTime, nullable=True),
        sa.Column("finished_at", sa.DateTime, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("worker", sa.String(200), nullable=False),
        sa.Column("score", sa.Float, nullable=True),
        sa.Column("max_score", sa.Float, nullable=True),
        sa.Column("result_json", sa.Text, nullable=True),
        sa.Column("error", sa.Text, nullable=False),
        sa.UniqueConstraint("student_id", "digest", "topics", name="uq_submission_content"),
    )


def downgrade() -> None:
    for table in ("submissions", "uploads", "tokens", "students"):
        op.drop_table(table)
