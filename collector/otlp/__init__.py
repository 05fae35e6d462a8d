"""The OTLP/HTTP receiver: ``POST /v1/traces`` decoded (protobuf, JSON), mapped to call records
and written to the store by group commit, with ``on_batch`` after every durable write."""

from toolwatch.collector.otlp.server import DEFAULT_PORT, Collector
from toolwatch.collector.otlp.writer import CollectorStats

__all__ = ["DEFAULT_PORT", "Collector", "CollectorStats"]
