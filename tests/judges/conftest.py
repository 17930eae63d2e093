"""Fixtures for the judge tests: the built-in model's tiny exported network is the models tests' own."""

from __future__ import annotations

from tests.models.conftest import tiny_weights  # noqa: F401 -- a fixture, registered by being imported here
from tests.judges.endpoint_server import server  # noqa: F401 -- a fixture, registered by being imported here
