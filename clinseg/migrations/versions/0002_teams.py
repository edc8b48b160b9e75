"""Teams, display names, disabled accounts and session epochs; final selections, late days and per-item scores.

Hand-written Alembic revision (see 0001_initial.py): it must stay exactly as released.
"""
from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table("teams",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("join_code", sa.String(32), nullable=False, unique=True),
        sa.Column("extension_days", sa.Float, nullable=False, server_default="0"),
        sa.Column("created", sa.Float, nullable=False))
    with op.batch_alter_table("users") as b:
        b.add_column(sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id", name="fk_users_team_id")))
        b.add_column(sa.Column("display_name", sa.String(64)))
        b.add_column(sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()))
        b.add_column(sa.Column("epoch", sa.Integer, nullable=False, server_default="0"))
        b.add_column(sa.Column("extension_days", sa.Float, nullable=False, server_default="0"))
    with op.batch_alter_table("submissions") as b:
        b.add_column(sa.Column("selected", sa.Boolean, nullable=False, server_default=sa.false()))
        b.add_column(sa.Column("late_days", sa.Integer, nullable=False, server_default="0"))
        b.add_column(sa.Column("items", sa.Text))


def downgrade():
    with op.batch_alter_table("submissions") as b:
        for c in ("items", "late_days", "selected"): b.drop_column(c)
    with op.batch_alter_table("users") as b:
        for c in ("extension_days", "epoch", "disabled", "display_name"): b.drop_column(c)
        b.drop_constraint("fk_users_team_id", type_="foreignkey")
        b.drop_column("team_id")
    op.drop_table("teams")
