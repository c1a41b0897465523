"""A student's own time zone (an IANA name; empty: the course's), in which their page and
`grade submit` show the course's dates.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("students") as batch:
        batch.add_column(sa.Column("timezone", sa.String(64), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("students") as batch:
        batch.drop_column("timezone")
