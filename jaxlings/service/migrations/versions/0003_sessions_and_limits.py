"""Page sessions apart from tokens, token revocation times, the per-student submit lock, and the
count of gradings failed for an infrastructure reason.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("login", sa.String(200), nullable=False),
        sa.Column("student_id", sa.Integer, sa.ForeignKey("students.id"), nullable=True),
        sa.Column("token_id", sa.Integer, sa.ForeignKey("tokens.id"), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=False),
    )
    with op.batch_alter_table("students") as batch:
        batch.add_column(sa.Column("last_submitted_at", sa.DateTime, nullable=True))
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("revoked_at", sa.DateTime, nullable=True))
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("failures", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("failures")
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("revoked_at")
    with op.batch_alter_table("students") as batch:
        batch.drop_column("last_submitted_at")
    op.drop_table("web_sessions")
