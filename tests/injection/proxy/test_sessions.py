"""A handshake-era client gets its own upstream session through the fault proxy: the server's
``sampling/createMessage``, ``elicitation/create`` and ``roots/list`` reach the client and its
answers (or errors) go back, tools offered by the client's capabilities are offered, log
messages arrive at the level that client set, and the session closes with the client. (The
proxy used to share one upstream session declaring nothing, so none of this passed.)"""

from __future__ import annotations

import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, get_args

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPDeprecationWarning, MCPError, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from support.paths import SUBSCRIBING_SERVER
from toolwatch.injection.proxy.proxy import run_proxy

#: The 2025 protocol's sampling, roots and logging are deprecated from 2026-07-28: the point here.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
LEVELS = list(get_args(types.LoggingLevel))
#: What each tool needs of the client (the server offers it only to a client declaring it).
NEEDS = {"sample": "sampling", "ask": "elicitation", "roots": "roots", "chatty": None}
SUBSCRIBING = StdioServerParameters(command=sys.executable, args=[str(SUBSCRIBING_SERVER)])


class Asking:
    """A low-level server that asks its client things, as server-everything does; its lifespan
    is one connection's, so it knows how many are open and each one's log level."""

    def __init__(self) -> None:
        self.open = 0
        self.server: Server[Any]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.server = Server(
                "asking",
                lifespan=self._lifespan,
                on_list_tools=self._list,
                on_call_tool=self._call,
                on_set_logging_level=self._set_level,
            )

    @asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        self.open += 1
        try:
            yield {"level": "debug"}
        finally:
            self.open -= 1

    async def _list(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        caps = ctx.session.client_capabilities or types.ClientCapabilities()
        schema = {"type": "object"}
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, input_schema=schema)
                for name, need in NEEDS.items()
                if need is None or getattr(caps, need) is not None
            ]
        )

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        ctx.lifespan_context["level"] = params.level
        return types.EmptyResult()

    async def _call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        session, related = ctx.session, ctx.request_id
        if params.name == "sample":
            text = types.TextContent(type="text", text="what is 2+2?")
            message = types.SamplingMessage(role="user", content=text)
            sampled = await session.create_message([message], max_tokens=7)
            answer = f"{sampled.model}: {sampled.content.text}"  # type: ignore[union-attr]
        elif params.name == "ask":
            schema = {"type": "object", "properties": {"name": {"type": "string"}}}
            elicited = await session.elicit_form("Who are you?", schema, related)
            answer = f"{elicited.action} {elicited.content}"
        elif params.name == "roots":
            listed = await session.list_roots()
            answer = " ".join(str(r.uri) for r in listed.roots)
        else:
            floor = LEVELS.index(ctx.lifespan_context["level"])
            for level in ("debug", "info", "error"):
                if LEVELS.index(level) >= floor:
                    await session.send_log_message(level, f"{level} line", "asking", related)
            answer = "logged"
        return types.CallToolResult(content=[types.TextContent(type="text", text=answer)])


async def _observe(target: Any, *, capable: bool, level: str | None = None) -> dict[str, Any]:
    """What a handshake-era client sees: listing, each tool's result or error, what the server
    asked it and the log lines it got."""
    seen: dict[str, Any] = {"asked": [], "logs": []}

    async def sampling(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        seen["asked"].append(("sampling", params.max_tokens, params.messages[0].content.text))  # type: ignore[union-attr]
        text = types.TextContent(type="text", text="4")
        return types.CreateMessageResult(role="assistant", content=text, model="m-1")

    async def elicitation(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        seen["asked"].append(("elicitation", params.message))
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        seen["asked"].append(("roots",))
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/a")])

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        seen["logs"].append((params.level, params.data))

    callbacks: dict[str, Any] = {}
    if capable:
        callbacks = {
            "sampling_callback": sampling,
            "elicitation_callback": elicitation,
            "list_roots_callback": roots,
        }
    async with Client(target, mode="legacy", logging_callback=log, **callbacks) as client:
        if level is not None:
            await client.session.set_logging_level(level)  # type: ignore[arg-type]
        seen["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        for name in NEEDS:
            try:
                result = await client.call_tool(name, {})
                seen[name] = result.content[0].text  # type: ignore[union-attr]
            except MCPError as exc:
                seen[name] = (exc.error.code, exc.error.message)
    return seen


def test_the_servers_requests_reach_a_capable_client_as_directly() -> None:
    upstream = Asking()

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        direct = await _observe(upstream.server, capable=True)
        async with run_proxy(None, upstream.server) as proxy:
            return direct, await _observe(proxy, capable=True)

    direct, proxied = anyio.run(main)
    assert proxied == direct
    assert proxied["tools"] == ["ask", "chatty", "roots", "sample"]
    assert proxied["sample"] == "m-1: 4" and proxied["roots"] == "file:///work/a"
    assert proxied["ask"] == "accept {'name': 'Ada'}"
    assert proxied["asked"] == [
        ("sampling", 7, "what is 2+2?"),
        ("elicitation", "Who are you?"),
        ("roots",),
    ]
    lines = [(level, f"{level} line") for level in ("debug", "info", "error")]
    assert proxied["logs"] == lines  # every level: none was set


def test_a_client_without_the_capabilities_gets_the_same_errors_as_directly() -> None:
    upstream = Asking()

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        direct = await _observe(upstream.server, capable=False)
        async with run_proxy(None, upstream.server) as proxy:
            return direct, await _observe(proxy, capable=False)

    direct, proxied = anyio.run(main)
    assert proxied == direct
    assert proxied["tools"] == ["chatty"] and proxied["asked"] == []
    assert proxied["sample"] == (types.INVALID_REQUEST, "Sampling not supported")
    assert proxied["roots"] == (types.INVALID_REQUEST, "List roots not supported")


def test_each_client_has_its_own_session_and_log_level_closed_when_it_leaves() -> None:
    upstream = Asking()

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with run_proxy(None, upstream.server) as proxy:
            assert upstream.open == 1  # the proxy's shared session

            async def client(level: str) -> None:
                out[level] = await _observe(proxy, capable=False, level=level)
                out[f"open during {level}"] = upstream.open

            async with anyio.create_task_group() as tg:
                tg.start_soon(client, "error")
                tg.start_soon(client, "debug")
            with anyio.fail_after(5):
                while upstream.open > 1:
                    await anyio.sleep(0.01)
            out["opened"] = proxy.sessions.opened if proxy.sessions else 0
        out["open after"] = upstream.open
        return out

    out = anyio.run(main)
    assert out["error"]["logs"] == [("error", "error line")]
    assert [level for level, _ in out["debug"]["logs"]] == ["debug", "info", "error"]
    assert out["open during error"] >= 2 and out["open during debug"] >= 2
    assert out["opened"] == 2 and out["open after"] == 0


def test_past_the_bound_the_session_idle_longest_closes_and_comes_back_at_its_level() -> None:
    # One line: three clients that never leave, at most two upstream sessions of their own.
    upstream = Asking()

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {"logs": []}

        async def log(params: types.LoggingMessageNotificationParams) -> None:
            out["logs"].append(params.level)

        async with run_proxy(None, upstream.server, max_client_sessions=2) as proxy:
            assert proxy.sessions is not None
            async with (
                Client(proxy, mode="legacy", logging_callback=log) as first,
                Client(proxy, mode="legacy") as second,
                Client(proxy, mode="legacy") as third,
            ):
                await first.session.set_logging_level("error")
                await second.list_tools()
                out["open with two"] = upstream.open  # the shared session and two own
                await third.list_tools()  # the first, idle longest, is closed for it
                with anyio.fail_after(5):
                    while upstream.open > 3:
                        await anyio.sleep(0.01)
                out["closed first"] = proxy.sessions.closed_idle
                result = await first.call_tool("chatty", {})  # a new session, level "error"
                out["first again"] = result.content[0].text  # type: ignore[union-attr]
                out["open at most"] = upstream.open
                out["opened"] = proxy.sessions.opened
                out["closed"] = proxy.sessions.closed_idle
        return out

    out = anyio.run(main)
    assert out["open with two"] == 3 and out["open at most"] == 3
    assert out["closed first"] == 1 and out["closed"] == 2  # then the second for the first
    assert out["first again"] == "logged" and out["logs"] == ["error"]
    assert out["opened"] == 4


def test_when_every_open_session_has_a_call_in_flight_a_new_client_is_refused() -> None:
    upstream = Asking()

    async def main() -> tuple[int, str, str]:
        asked, answer = anyio.Event(), anyio.Event()

        async def elicitation(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult:
            asked.set()
            await answer.wait()
            return types.ElicitResult(action="decline")

        async with run_proxy(None, upstream.server, max_client_sessions=1) as proxy:
            async with (
                Client(proxy, mode="legacy", elicitation_callback=elicitation) as busy,
                Client(proxy, mode="legacy") as late,
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(busy.call_tool, "ask", {})
                await asked.wait()
                with pytest.raises(MCPError) as refused:
                    await late.list_tools()
                answer.set()
            after = await _observe(proxy, capable=False)  # room again once the call ended
        return refused.value.error.code, refused.value.error.message, after["chatty"]

    code, message, chatty = anyio.run(main)
    assert code == types.INTERNAL_ERROR
    assert "each with a call in flight (at most 1 at once)" in message
    assert chatty == "logged"


async def _touched(client: Client, notices: list[str]) -> list[str]:
    """The notices a ``touch`` brings the client (they may come just after its answer)."""
    before = len(notices)
    await client.call_tool("touch", {})
    with anyio.fail_after(5):
        while "notifications/tools/list_changed" not in notices[before:]:
            await anyio.sleep(0.01)
    return notices[before:]


def test_completions_subscriptions_and_change_notices_pass_as_directly() -> None:
    """The proxy offered neither completions nor subscriptions, and relayed no change notice
    of a client's own upstream session (``listChanged: false`` whatever the server said)."""

    async def observe(target: Any) -> dict[str, Any]:
        notices: list[str] = []

        async def on_message(message: Any) -> None:
            notices.append(getattr(message, "method", type(message).__name__))

        seen: dict[str, Any] = {}
        async with Client(target, mode="legacy", message_handler=on_message) as client:
            caps = client.server_capabilities
            seen["caps"] = caps.model_dump(exclude_none=True, include={"completions", "resources"})
            ref = types.PromptReference(type="ref/prompt", name="p")
            completed = await client.complete(ref, {"name": "a", "value": "x"})
            seen["completed"] = completed.completion.values
            await client.session.subscribe_resource("memo://a")
            seen["subscribed"] = await _touched(client, notices)
            await client.session.unsubscribe_resource("memo://a")
            seen["unsubscribed"] = await _touched(client, notices)
        return seen

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        direct = await observe(SUBSCRIBING)
        async with run_proxy(None, SUBSCRIBING) as proxy:
            return direct, await observe(proxy)

    direct, proxied = anyio.run(main)
    assert proxied == direct
    resources = {"subscribe": True, "list_changed": False}
    assert direct["caps"] == {"completions": {}, "resources": resources}
    assert direct["completed"] == ["x1", "x2"]
    updated, changed = "notifications/resources/updated", "notifications/tools/list_changed"
    assert direct["subscribed"] == [updated, changed] and direct["unsubscribed"] == [changed]


def test_a_session_closed_past_the_bound_comes_back_subscribed() -> None:

    async def main() -> dict[str, Any]:
        notices: list[str] = []
        out: dict[str, Any] = {}

        async def on_message(message: Any) -> None:
            notices.append(getattr(message, "method", type(message).__name__))

        async with run_proxy(None, SUBSCRIBING, max_client_sessions=1) as proxy:
            assert proxy.sessions is not None
            async with (
                Client(proxy, mode="legacy", message_handler=on_message) as first,
                Client(proxy, mode="legacy") as second,
            ):
                await first.session.subscribe_resource("memo://a")
                await second.list_tools()  # the first's session is closed for it
                out["closed"] = proxy.sessions.closed_idle
                out["touched"] = await _touched(first, notices)  # a new one, subscribed again
        return out

    out = anyio.run(main)
    assert out["closed"] == 1
    assert out["touched"] == ["notifications/resources/updated", "notifications/tools/list_changed"]
