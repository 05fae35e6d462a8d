"""A real third-party MCP server: the Node reference ``@modelcontextprotocol/server-everything``
(TypeScript SDK, pinned in ``node/package-lock.json``) behind ``toolwatch proxy`` over stdio.
Its results (images, embedded resources, resource links, structured content, ``isError``)
reach a real mcp client as over a direct connection, progress, its sampling and roots requests
to the client and its log messages included, and so are its completions, a resource
subscription with the change notices it sends, and its roots asked again when the client says
they changed; an A4 drift renames a field of its compact ``JSON.stringify`` text and nothing
else.

Skipped when ``node``/``npm`` are not installed; ``npm ci`` runs once if ``node_modules`` is
missing (``.ci/run`` does it up front).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp_types import CallToolRequest, CallToolRequestParams, CallToolResult

from support.node import installed_node
from toolwatch.conventions import LABEL_META_KEY

NODE_DIR = Path(__file__).parent / "node"
ENTRY = NODE_DIR / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SCORING = {
    "minimum_pass_criterion": "The agent adapts to the renamed field.",
    "clear_failure_signal": "The agent reports a temperature it never received.",
    "acceptable_behaviors": ["Re-lists the tools.", "Says the schema changed."],
}
#: Calls whose results do not change between runs (get-structured-content's weather is random).
STABLE = [
    ("echo", {"message": "héllo"}),
    ("get-sum", {"a": 2, "b": 3.5}),
    ("get-sum", {"a": "x"}),  # the server's own isError answer
    ("get-tiny-image", {}),
    ("get-annotated-message", {"messageType": "error", "includeImage": True}),
    ("get-resource-links", {"count": 2}),
    ("no-such-tool", {}),
]


@pytest.fixture(scope="module")
def node() -> str:
    return installed_node(NODE_DIR)


def _proxy(node: str, *extra: str) -> StdioServerParameters:
    upstream = f"{node} {ENTRY} stdio"
    args = ["-m", "toolwatch", "proxy", "--upstream-cmd", upstream, *extra]
    return StdioServerParameters(command=sys.executable, args=args)


async def _observe(target: StdioServerParameters, mode: str = "legacy") -> dict[str, Any]:
    seen: dict[str, Any] = {}
    steps: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total))

    async def sampling(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        seen["sampled"] = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        text = types.TextContent(type="text", text="a sampled answer")
        return types.CreateMessageResult(role="assistant", content=text, model="m-1")

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        seen["roots asked"] = seen.get("roots asked", 0) + 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/a", name="a")])

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        seen.setdefault("logs", []).append(params.model_dump(mode="json", exclude_none=True))

    callbacks: dict[str, Any] = {"sampling_callback": sampling, "list_roots_callback": roots}
    async with Client(target, mode=mode, logging_callback=log, **callbacks) as client:
        seen["version"] = client.protocol_version
        listing = await client.list_tools()
        seen["tools"] = sorted(t.name for t in listing.tools)
        for i, (tool, args) in enumerate(STABLE):
            result = await client.call_tool(tool, args)
            seen[f"{i} {tool}"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        weather = await client.call_tool("get-structured-content", {"location": "Chicago"})
        seen["weather keys"] = sorted(weather.structured_content or {})
        long = {"duration": 1, "steps": 2}
        await client.call_tool(
            "trigger-long-running-operation", long, progress_callback=on_progress
        )
        seen["progress"] = steps
        doc = await client.read_resource("demo://resource/static/document/features.md")
        seen["resource"] = doc.model_dump(mode="json", by_alias=True, exclude_none=True)
        for tool, args in (("trigger-sampling-request", {"prompt": "hi"}), ("get-roots-list", {})):
            result = await client.call_tool(tool, args)
            seen[tool] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return seen


def test_server_everything_through_the_proxy_is_its_direct_self(node: str) -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        direct = await _observe(StdioServerParameters(command=node, args=[str(ENTRY), "stdio"]))
        return direct, await _observe(_proxy(node))

    direct, proxied = anyio.run(main)
    # the client's own upstream session declares its sampling and roots (not elicitation): the
    # server offers their tools, asks the client, and logs that it got its roots
    assert {"get-roots-list", "trigger-sampling-request"} <= set(direct["tools"])
    assert "trigger-elicitation-request" not in direct["tools"]
    assert proxied == direct
    assert direct["sampled"]["messages"][0]["content"]["text"].endswith(": hi")
    assert "a sampled answer" in direct["trigger-sampling-request"]["content"][0]["text"]
    assert "file:///work/a" in direct["get-roots-list"]["content"][0]["text"]
    assert direct["roots asked"] == 1
    assert [m["data"] for m in direct["logs"]] == ["Roots updated: 1 root(s) received from client"]
    assert direct["progress"] == [(1.0, 2.0), (2.0, 2.0)]  # relayed, not dropped
    calls = [r for k, r in direct.items() if k[0].isdigit()]
    blocks = {b["type"] for r in calls for b in r["content"]}
    assert {"text", "image", "resource_link"} <= blocks
    assert direct["2 get-sum"]["isError"] and direct["6 no-such-tool"]["isError"]


DOCUMENT = "demo://resource/static/document/features.md"
#: A data URI the gzip tool reads offline; the resource it registers is a list change.
GZIP = {"name": "a.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}


async def _changes(target: StdioServerParameters) -> dict[str, Any]:
    """What a client gets of completions and of a resource subscription: capabilities, answers
    and every notification (sorted: the server sends several of them concurrently)."""
    seen: dict[str, Any] = {}
    notices: list[str] = []
    arrived = {"notifications/resources/updated": anyio.Event()}
    arrived["notifications/resources/list_changed"] = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            notices.append(type(message).__name__)
            return
        data = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        notices.append(json.dumps(data, sort_keys=True))
        if data["method"] in arrived:
            arrived[data["method"]].set()

    def dumped(result: Any) -> Any:
        return result and result.model_dump(mode="json", by_alias=True, exclude_none=True)

    async with Client(target, mode="legacy", message_handler=on_message) as client:
        caps = client.server_capabilities
        seen["caps"] = {k: dumped(getattr(caps, k)) for k in ("completions", "resources", "tools")}
        prompt = types.PromptReference(type="ref/prompt", name="completable-prompt")
        template = types.ResourceTemplateReference(
            type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}"
        )
        asked = [
            (prompt, {"name": "department", "value": "E"}, None),
            (prompt, {"name": "name", "value": ""}, {"department": "Sales"}),
            (template, {"name": "resourceId", "value": "7"}, None),
        ]
        seen["completions"] = [dumped(await client.complete(*a)) for a in asked]
        seen["subscribe"] = dumped(await client.session.subscribe_resource(DOCUMENT))
        with anyio.fail_after(10):
            await client.call_tool("toggle-subscriber-updates", {})  # sends one update at once
            await arrived["notifications/resources/updated"].wait()
        await client.call_tool("toggle-subscriber-updates", {})  # and no more
        seen["unsubscribe"] = dumped(await client.session.unsubscribe_resource(DOCUMENT))
        with anyio.fail_after(10):
            await client.call_tool("gzip-file-as-resource", GZIP)
            await arrived["notifications/resources/list_changed"].wait()
    seen["notices"] = sorted(notices)
    return seen


@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")  # the handshake era's subscribe
def test_completions_and_a_resource_subscription_through_the_proxy_are_as_direct(
    node: str,
) -> None:
    """The proxy used to offer neither (no ``completions``, ``subscribe: false``, every
    ``listChanged: false``): ``completion/complete`` and ``resources/subscribe`` were "Method
    not found" and the server's change notices never reached the client."""

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        direct = await _changes(StdioServerParameters(command=node, args=[str(ENTRY), "stdio"]))
        return direct, await _changes(_proxy(node))

    direct, proxied = anyio.run(main)
    assert proxied == direct
    assert direct["caps"]["resources"] == {"subscribe": True, "listChanged": True}
    values = [c["completion"]["values"] for c in direct["completions"]]
    assert values == [["Engineering"], ["David", "Eve", "Frank"], ["7"]]
    methods = [json.loads(n)["method"] for n in direct["notices"]]
    assert methods.count("notifications/resources/updated") == 1
    assert methods.count("notifications/resources/list_changed") == 1
    assert "notifications/tools/list_changed" in methods  # its tools for this client's caps
    updated = [json.loads(n) for n in direct["notices"] if "resources/updated" in n]
    assert updated[0]["params"] == {"uri": DOCUMENT}


async def _roots_changed(target: StdioServerParameters) -> list[str]:
    """The server's log lines to a client whose roots grow by one after the server has them:
    server-everything asks for them again on ``notifications/roots/list_changed``."""
    roots = [types.Root(uri="file:///work/a", name="a")]
    lines: list[str] = []

    async def on_roots(context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=list(roots))

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        lines.append(str(params.data))

    async def said(count: int) -> None:
        with anyio.fail_after(10):
            while len(lines) < count:
                await anyio.sleep(0.02)

    async with Client(
        target, mode="legacy", list_roots_callback=on_roots, logging_callback=log
    ) as c:
        await c.list_tools()  # through the proxy, the client's own upstream session opens here
        await said(1)
        roots.append(types.Root(uri="file:///work/b", name="b"))
        await c.session.send_roots_list_changed()
        await said(2)
    return lines


@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")  # roots: the handshake era's
def test_the_clients_roots_changed_notice_reaches_the_server_as_directly(node: str) -> None:
    async def main() -> tuple[list[str], list[str]]:
        direct = StdioServerParameters(command=node, args=[str(ENTRY), "stdio"])
        return await _roots_changed(direct), await _roots_changed(_proxy(node))

    direct, proxied = anyio.run(main)
    assert proxied == direct
    assert direct == [f"Roots updated: {n} root(s) received from client" for n in (1, 2)]


def test_an_auto_client_settles_on_the_servers_era_through_the_proxy_as_directly(
    node: str,
) -> None:
    """The server speaks only the handshake era: directly, an ``auto`` client's
    ``server/discover`` probe gets "Method not found" and it falls back to ``initialize``.
    Through the proxy the probe used to succeed (2026-07-28: the sampling and roots tools
    hidden, "Tool trigger-sampling-request not found"); the proxy now refuses it as well."""

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        direct_target = StdioServerParameters(command=node, args=[str(ENTRY), "stdio"])
        direct = await _observe(direct_target, mode="auto")
        return direct, await _observe(_proxy(node), mode="auto")

    direct, proxied = anyio.run(main)
    assert direct["version"] == "2025-11-25"
    assert proxied == direct
    assert "a sampled answer" in proxied["trigger-sampling-request"]["content"][0]["text"]


def test_a4_drift_renames_only_the_field_in_the_servers_compact_json(
    node: str, tmp_path: Path
) -> None:
    weather = {
        "name": "get-structured-content",
        "description": "Returns structured content",
        "input_schema": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
        "output_schema": {
            "type": "object",
            "properties": {n: {"type": "number"} for n in ("temperature", "humidity")},
            "required": ["temperature", "humidity"],
        },
        "response": {"structured": {"temperature": 33, "humidity": 82}},
    }
    scenario = {
        "format": "toolwatch-scenario/1",
        "id": "a4-everything",
        "fault_type": "A4",
        "domain": "ops",
        "task": "What is the temperature in Chicago?",
        "tools": [weather],
        "fault": {
            "tool": "get-structured-content",
            "action": "alter_schema",
            "occurrence": {"nth": [2, 3]},
            "params": {
                "argument_renames": {"location": "city"},
                "field_renames": {"temperature": "temp_c"},
            },
        },
        "scoring": SCORING,
        "checks": {
            "endpoint_allowlist": [],
            "expected_value": {
                "tool": "get-structured-content",
                "pointer": "/temperature",
                "value": 33,
            },
        },
    }
    path, log = tmp_path / "a4.json", tmp_path / "injections.jsonl"
    path.write_text(json.dumps(scenario))

    async def main() -> list[Any]:
        target = _proxy(node, "--scenario", str(path), "--injection-log", str(log))
        async with Client(target, mode="legacy") as client:
            out = []
            for args in ({"location": "Chicago"}, {"location": "Chicago"}, {"city": "Chicago"}):
                # the raw request: mcp's call_tool would refuse the drifted result (its schema)
                params = CallToolRequestParams(name="get-structured-content", arguments=args)
                request = CallToolRequest(params=params)
                out.append(await client.session.send_request(request, CallToolResult))
            return out

    clean, rejected, drifted = anyio.run(main)
    assert clean.meta is None and not clean.is_error
    assert rejected.is_error and rejected.meta == {LABEL_META_KEY: "A4:a4-everything"}
    text = drifted.content[0].text
    assert drifted.meta == {LABEL_META_KEY: "A4:a4-everything"}
    assert text.startswith('{"temp_c":') and ", " not in text  # still JSON.stringify's compact
    assert json.loads(text) == drifted.structured_content
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["kind"], e["occurrence"]) for e in events] == [("reject", 2), ("call", 3)]
    assert all(set(e) == set(events[0]) and "Chicago" not in json.dumps(e) for e in events)
