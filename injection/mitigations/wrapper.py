"""The contract every mitigation shares: a client wrapper with MCP's call_tool / list_tools, and the
content-free events it reports.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.types import CallToolResult, ListToolsResult

from toolwatch.injection.mitigations.failures import is_call_failure

log = logging.getLogger(__name__)


class ToolClient(Protocol):
    """What every wrapper needs from the object it wraps (``mcp.Client`` satisfies it)."""

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
    ) -> CallToolResult: ...

    async def list_tools(self) -> ListToolsResult: ...


@dataclass(frozen=True)
class MitigationEvent:
    """Something a mitigation did (retried, blocked, flagged); content-free by construction."""

    mitigation: str
    kind: str
    tool: str
    detail: str = ""


EventSink = Callable[[MitigationEvent], None]


#: Forwards one call to the wrapped client, with the given read timeout (seconds).
Send = Callable[[float | None], Awaitable[CallToolResult]]


async def try_call(
    send: Send, timeout: float | None
) -> tuple[CallToolResult | None, BaseException | None]:
    """One call: (result, None), or (None, the exception) when the call itself failed (see
    :func:`is_call_failure`); anything else means the caller is broken and propagates."""
    try:
        return await send(timeout), None
    except Exception as exc:
        if not is_call_failure(exc):
            raise
        return None, exc


class ClientWrapper:
    """Something with ``call_tool`` / ``list_tools`` sitting on another such thing.

    ``call_tool`` is written once, here: it gives :meth:`handle` the call and a
    ``send(timeout)`` that forwards it to the inner client, so a wrapper only says what it does
    around the forwarding (retry it, inspect the result, record it). Every other attribute is
    the inner client's.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)

    async def list_tools(self, *args: Any, **kwargs: Any) -> ListToolsResult:
        result: ListToolsResult = await self.inner.list_tools(*args, **kwargs)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        **kwargs: Any,
    ) -> CallToolResult:
        async def send(timeout: float | None) -> CallToolResult:
            result: CallToolResult = await self.inner.call_tool(
                name, arguments, read_timeout_seconds=timeout, **kwargs
            )
            return result

        return await self.handle(name, dict(arguments or {}), read_timeout_seconds, send)

    async def handle(
        self, name: str, arguments: dict[str, Any], timeout: float | None, send: Send
    ) -> CallToolResult:
        """One call of tool ``name``; the default just forwards it."""
        return await send(timeout)


class Mitigation(ClientWrapper):
    """Base of the mitigations: a wrapper that reports what it did as events."""

    name = "mitigation"

    def __init__(self, inner: Any, *, on_event: EventSink | None = None) -> None:
        super().__init__(inner)
        self._on_event = on_event

    def _emit(self, kind: str, tool: str, detail: str = "") -> None:
        log.debug("%s: %s on %s", self.name, kind, tool)
        if self._on_event is not None:
            self._on_event(MitigationEvent(self.name, kind, tool, detail))
