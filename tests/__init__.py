"""The test suite: one package per area (tests/features, tests/users, ...; `make test
AREA=features` runs one), and at this level what every area shares: the fixtures
(conftest.py), test data and requests (factories.py), PostgreSQL (pg.py) and the service as a
subprocess (harness.py)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository: the service runs from here
