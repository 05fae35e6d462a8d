"""The OTLP/HTTP receiver: ``POST /v1/traces`` decoded (protobuf, JSON), mapped to call records
(toolwatch's spans and semantic-conventions tool spans of any sender) and written to the store
by group commit, with ``on_batch`` after every durable write; counters on ``GET /metrics``.

The names below load on first use (:mod:`toolwatch.lazy`): ``defaults`` (the receiver's
defaults an option shows) needs neither uvicorn nor Arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.collector.otlp.defaults import DEFAULT_PORT
    from toolwatch.collector.otlp.server import Collector
    from toolwatch.collector.otlp.stats import CollectorStats

__all__ = ["DEFAULT_PORT", "Collector", "CollectorStats"]
__getattr__ = lazy_names(
    __name__,
    {
        "DEFAULT_PORT": "toolwatch.collector.otlp.defaults",
        "Collector": "toolwatch.collector.otlp.server",
        "CollectorStats": "toolwatch.collector.otlp.stats",
    },
)
