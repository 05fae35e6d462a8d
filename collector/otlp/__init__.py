"""The OTLP/HTTP receiver: ``POST /v1/traces`` decoded (protobuf, JSON), mapped to call records
(toolwatch's spans and semantic-conventions tool spans of any sender) and written to the store
by group commit, with ``on_batch`` after every durable write; counters on ``GET /metrics``."""

from toolwatch.collector.otlp.server import DEFAULT_PORT, Collector
from toolwatch.collector.otlp.stats import CollectorStats

__all__ = ["DEFAULT_PORT", "Collector", "CollectorStats"]
