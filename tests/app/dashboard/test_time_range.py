"""The one time range: parsed from the URL, and every page opens with any valid date."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from toolwatch.app.dashboard.settings import MAIN_SCRIPT
from toolwatch.app.dashboard.time_range import resolve


def test_custom_days_are_whole_utc_days() -> None:
    span = resolve("custom", "2025-03-02", "2025-03-01")  # either order
    assert span.start == datetime(2025, 3, 1, tzinfo=UTC)
    assert span.end == datetime(2025, 3, 3, tzinfo=UTC)
    assert span.label == "2025-03-01 – 2025-03-02 (UTC)"


def test_the_last_date_there_is_ends_the_range_open() -> None:
    """9999-12-31 has no next day (its end overflowed on every page): the range is open."""
    span = resolve("custom", "9999-12-30", "9999-12-31")
    assert span.start == datetime(9999, 12, 30, tzinfo=UTC) and span.end is None
    assert span.bounded and span.last_day == date.max
    assert span.label == "9999-12-30 – 9999-12-31 (UTC)"


@pytest.mark.parametrize("page", ["sessions_page.py", "corpus_page.py", "explore_page.py"])
def test_pages_open_at_the_last_date(
    small_store: Path, monkeypatch: pytest.MonkeyPatch, page: str
) -> None:
    monkeypatch.delenv("TOOLWATCH_MODEL", raising=False)
    monkeypatch.setenv("TOOLWATCH_STORE", str(small_store))
    params = {"range": "custom", "from": "9999-12-31", "to": "9999-12-31"}
    at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=60)
    at.query_params.update(params)
    at.run()
    at.switch_page(page)
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    said = [e.value for e in [*at.caption, *at.info]]
    assert any("9999-12-31 (UTC)" in text for text in said), said
