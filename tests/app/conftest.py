"""One dashboard store per test run, shared by the page tests and the browser test.

Building it costs several seconds (a simulated corpus, a model, an experiment, live alerts and
a workbench suite through the real CLI). Tests may add rows (the live test appends alerts); each
compares a page with the store as it is when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.app import build_store
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build_store(tmp_path_factory.mktemp("app") / "store")


@pytest.fixture(scope="session")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Calls only (12 simulated sessions): for pages that need no model, experiment or alerts."""
    root = tmp_path_factory.mktemp("small") / "store"
    Store(root).append("calls", simulate(seed=1, sessions=12))
    return root
