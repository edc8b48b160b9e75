# Hand-written Alembic revision scripts (not exported from notebooks; see ../__init__.py).
