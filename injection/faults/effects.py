"""What the fault engine decides for one call — a plan before the upstream is asked, then an effect
(a result, a JSON-RPC error, a real hold) — and how a server delivers it.

:meth:`FaultEffect.deliver` is the one place a server (the proxy, the workbench's replay server)
turns an effect into its answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, cast

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.context import ServerRequestContext

from toolwatch.conventions import (
    INJECTION_NOTIFICATION,
    LABEL_META_KEY,
    REQUEST_META_KEY,
    TOOL_META_KEY,
)

logger = logging.getLogger(__name__)

#: JSON-RPC code of a permission-denied error (implementation-defined server error range).
PERMISSION_DENIED_CODE: Final = -32003


@dataclass(frozen=True, slots=True)
class RpcError:
    """A JSON-RPC error to answer with instead of a result."""

    code: int
    message: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CallPlan:
    """What to do with one call before the upstream is asked."""

    tool: str
    occurrence: int
    due: bool
    arguments: dict[str, Any]
    call_upstream: bool = True
    reject: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class FaultEffect:
    """The outcome of a call: deliver ``result`` (or raise ``error``) after ``delay_s``."""

    applied: bool
    result: dict[str, Any] | None = None
    error: RpcError | None = None
    delay_s: float = 0.0
    note: str = ""

    async def deliver(
        self, announce: Callable[[], Awaitable[None]] | None = None
    ) -> types.CallToolResult:
        """Answer the call the way a server does: hold ``delay_s`` (a real wait, so the
        client's own deadline can expire), then raise the JSON-RPC error or return the
        result. The proxy and the workbench's replay server both answer through this.
        ``announce`` runs before a hold (see :func:`announce_injection`): a client that
        gives up first never sees the labelled answer."""
        if self.delay_s > 0:
            if announce is not None:
                await announce()
            await anyio.sleep(self.delay_s)
        if self.error is not None:
            raise MCPError(self.error.code, self.error.message, self.error.data)
        assert self.result is not None
        return types.CallToolResult.model_validate(self.result)


async def announce_injection(ctx: ServerRequestContext[Any, Any], tool: str, label: str) -> None:
    """Tell the client, on this request's own stream, that the call is injected with ``label``.

    A vendor notification (:data:`~toolwatch.record.INJECTION_NOTIFICATION`) whose ``_meta``
    holds the label, the call's JSON-RPC id and the tool name, never content: the
    instrumentation puts the label on the call's span even when the client times out before
    the (labelled) answer arrives; other clients drop the unknown method. Best effort: a
    transport that cannot carry it costs the label, never the call.
    """
    meta = {LABEL_META_KEY: label, REQUEST_META_KEY: ctx.request_id, TOOL_META_KEY: tool}
    note = types.Notification[types.NotificationParams, str](
        method=INJECTION_NOTIFICATION, params=types.NotificationParams(_meta=meta)
    )
    try:
        await ctx.session.send_notification(
            cast(types.ServerNotification, note), related_request_id=ctx.request_id
        )
    except Exception as exc:  # the fault must still be served
        logger.warning("could not announce injection %s on %r: %s", label, tool, exc)


@dataclass(frozen=True, slots=True)
class ListingEffect:
    """The ``tools/list`` a client sees. ``due`` and not ``applied``: the fault was due on this
    listing but could not act on it (``note`` says why), so a server can record it as not
    applicable rather than let it pass as a listing the fault never fell due on."""

    tools: list[dict[str, Any]]
    applied: bool
    note: str = ""
    due: bool = False

    @property
    def not_applicable(self) -> bool:
        return self.due and not self.applied


class FaultContext(Protocol):
    """What an action reads from the engine: the fault's params and its ground-truth label."""

    @property
    def params(self) -> Mapping[str, Any]: ...

    @property
    def label(self) -> str: ...


Action = Callable[[FaultContext, CallPlan, "dict[str, Any] | None"], FaultEffect]
