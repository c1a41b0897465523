"""Pseudonyms for the speed leaderboard: the name a student chose to appear under (none: not on
the board), and its case-folded key, unique, so that "Ann" and "ann" cannot both be taken.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("students") as batch:
        batch.add_column(sa.Column("pseudonym", sa.String(30), nullable=True))
        batch.add_column(sa.Column("pseudonym_key", sa.String(120), nullable=True))
        batch.create_unique_constraint("uq_students_pseudonym", ["pseudonym"])
        batch.create_unique_constraint("uq_students_pseudonym_key", ["pseudonym_key"])


def downgrade() -> None:
    with op.batch_alter_table("students") as batch:
        batch.drop_constraint("uq_students_pseudonym_key", type_="unique")
        batch.drop_constraint("uq_students_pseudonym", type_="unique")
        batch.drop_column("pseudonym_key")
        batch.drop_column("pseudonym")
