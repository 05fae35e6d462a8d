"""The store and collector most OTLP tests run against (a test file that needs other collector
settings overrides ``collector``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolwatch.collector.otlp.server import Collector
from toolwatch.collector.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store")


@pytest.fixture
def collector(store: Store) -> Iterator[Collector]:
    with Collector(store, compact_interval=None) as c:
        yield c
