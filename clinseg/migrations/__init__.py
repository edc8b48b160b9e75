# Alembic migrations of the `clinseg serve` database. Hand-written, not exported from a notebook: a migration is a
# fixed historical record and must never change once released (see nbs/16a_database.ipynb, "The schema").
