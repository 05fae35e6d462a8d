"""Content-free OpenTelemetry instrumentation of MCP clients (placeholder until issue 2 lands)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def instrument() -> None:  # replaced by the real instrumentor
    raise NotImplementedError


@contextmanager
def model_response(response_id: str, conversation_id: str | None = None) -> Iterator[None]:
    raise NotImplementedError
    yield


class ToolwatchMCPInstrumentor:  # replaced by the real BaseInstrumentor
    pass
