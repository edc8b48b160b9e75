# Alembic environment for the `clinseg serve` database. Hand-written (not exported from a notebook): Alembic loads this
# file by path. Configured from Python only (no alembic.ini): `clinseg.board.migrate` passes an open connection, inside
# a transaction, in `config.attributes["connection"]`.
from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("clinseg's migrations run through clinseg.board.migrate(engine), which passes a connection")
context.configure(connection=connection, target_metadata=None, render_as_batch=True, transaction_per_migration=False)
with context.begin_transaction():
    context.run_migrations()
