"""One dashboard store per test run, shared by the page tests and the browser test.

Building it costs several seconds (a simulated corpus, a model, an experiment, live alerts and
a workbench suite through the real CLI). Tests may add rows (the live test appends alerts); each
compares a page with the store as it is when it runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from support.app import build_store


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build_store(tmp_path_factory.mktemp("app") / "store")
