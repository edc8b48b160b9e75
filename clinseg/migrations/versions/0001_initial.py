"""The first schema of the `clinseg serve` database: users, submissions, settings.

Hand-written Alembic revision (the one place clinseg has hand-written Python rather than a notebook export: a
migration must stay exactly as released). Revision ids are plain numbers in order.
"""
from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table("users",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_prefix", sa.String(16), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(255), nullable=False),
        sa.Column("created", sa.Float, nullable=False))
    op.create_table("submissions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("stored", sa.String(64), nullable=False, unique=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("problems", sa.Text, nullable=False),
        sa.Column("public_score", sa.Float), sa.Column("private_score", sa.Float), sa.Column("score", sa.Float),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("scored", sa.Float), sa.Column("error", sa.Text))
    op.create_index("ix_submissions_user_created", "submissions", ["user_id", "created"])
    op.create_index("ix_submissions_status", "submissions", ["status"])
    op.create_table("settings",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False))


def downgrade():
    op.drop_table("settings")
    op.drop_index("ix_submissions_status", "submissions")
    op.drop_index("ix_submissions_user_created", "submissions")
    op.drop_table("submissions")
    op.drop_table("users")
