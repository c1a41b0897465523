"""Every stored result of a submission kept (its grading history: the latest counts), and
students dropped from the course without deleting what they submitted.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grade_results",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), nullable=False, index=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("worker", sa.String(200), nullable=False, server_default=""),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("max_score", sa.Float, nullable=False),
        sa.Column("result_json", sa.Text, nullable=False),
    )
    # what was stored before this migration is each submission's first (and latest) result
    op.execute(
        "INSERT INTO grade_results (submission_id, created_at, worker, score, max_score, result_json) "
        "SELECT id, COALESCE(finished_at, created_at), worker, score, max_score, result_json FROM submissions "
        "WHERE result_json IS NOT NULL AND score IS NOT NULL AND max_score IS NOT NULL"
    )
    with op.batch_alter_table("students") as batch:
        batch.add_column(sa.Column("dropped_at", sa.DateTime, nullable=True))
        batch.add_column(sa.Column("dropped_by", sa.String(200), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("students") as batch:
        batch.drop_column("dropped_by")
        batch.drop_column("dropped_at")
    op.drop_table("grade_results")
