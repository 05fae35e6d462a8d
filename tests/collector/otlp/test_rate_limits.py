"""Log lines an attacker can repeat at will are rate-limited: one per key per interval, and the
next one says how many were held back — for toolwatch's own lines and for third-party loggers
(uvicorn, asyncio) alike."""

from __future__ import annotations

import logging
import time

import pytest

from toolwatch.collector.otlp.connections import _RateLimitFilter
from toolwatch.log_limits import RateLimiter


def test_one_line_per_key_per_interval_then_the_count_held_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="tw.test.limits")
    limiter = RateLimiter(logging.getLogger("tw.test.limits"), interval=0.2)
    for _ in range(5):
        limiter.log(logging.INFO, "bad", "bad request from %s", "a")
    limiter.log(logging.INFO, "other", "another kind")
    time.sleep(0.25)
    limiter.log(logging.INFO, "bad", "bad request from %s", "b")
    assert [r.getMessage() for r in caplog.records] == [
        "bad request from a",
        "another kind",
        "bad request from b (4 more like it in the last 0.2 s)",
    ]


def test_the_third_party_filter_counts_the_same_way(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("tw.test.thirdparty")
    caplog.set_level(logging.WARNING, logger=logger.name)
    limit = _RateLimitFilter(interval=0.2)
    logger.addFilter(limit)
    try:
        for _ in range(3):
            logger.warning("Invalid HTTP request received.")
        time.sleep(0.25)
        logger.warning("Invalid HTTP request received.")
    finally:
        logger.removeFilter(limit)
    assert [r.getMessage() for r in caplog.records] == [
        "Invalid HTTP request received.",
        "Invalid HTTP request received. (2 more like it in the last 0.2 s)",
    ]
