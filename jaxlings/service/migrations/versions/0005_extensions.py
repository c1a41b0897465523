"""Extensions: more time for one student on one topic (course.toml's due date and late limit
moved by it), recorded with who granted them and when.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "extensions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("student_id", sa.Integer, sa.ForeignKey("students.id"), nullable=False, index=True),
        sa.Column("topic", sa.String(100), nullable=False),
        sa.Column("seconds", sa.Integer, nullable=False),
        sa.Column("granted_by", sa.String(200), nullable=False, server_default=""),
        sa.Column("reason", sa.String(500), nullable=False, server_default=""),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("extensions")
