"""Real client → real fault proxy → real MCP server (in memory, JSON-RPC legacy framing, streamable
HTTP on loopback, and stdio subprocesses): transparency, every fault type on the right
occurrences with its label, real client timeouts, upstream failures."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.server.mcpserver import MCPServer
from mcp_types import (
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    ListToolsRequest,
    ListToolsResult,
    TextContent,
)

from support.proxy_fuzz_http import PROBE_INITIALIZE
from toolwatch.cli import main as cli_main
from toolwatch.conventions import LABEL_META_KEY
from toolwatch.injection.faults.codec import scenario_to_json
from toolwatch.injection.faults.effects import PERMISSION_DENIED_CODE
from toolwatch.injection.faults.library import find_scenario
from toolwatch.injection.faults.pointer import resolve_pointer
from toolwatch.injection.faults.scenario import Occurrence, Scenario, ScenarioError
from toolwatch.injection.faults.server import ScenarioServer
from toolwatch.injection.proxy.proxy import (
    UPSTREAM_UNAVAILABLE_KEY,
    FaultProxy,
    UpstreamUnavailable,
    http_server,
    run_proxy,
)

PYTHON = sys.executable


def variant(scenario_id: str, occurrence: Any = None, **params: Any) -> Scenario:
    """A packaged scenario with another occurrence rule and/or params."""
    s = find_scenario(scenario_id)
    fault = s.fault
    if occurrence is not None:
        fault = dataclasses.replace(fault, occurrence=Occurrence.from_json(occurrence))
    if params:
        fault = dataclasses.replace(fault, params={**fault.params, **params})
    return dataclasses.replace(s, fault=fault)


class CountingServer(ScenarioServer):
    """The scenario server, counting the calls that reach it."""

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self.served: Counter[str] = Counter()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        self.served[name] += 1
        return await super().call_tool(name, arguments, context)


def dump(result: Any) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def label_of(result: CallToolResult) -> str | None:
    return (result.meta or {}).get(LABEL_META_KEY)


def required_args(scenario: Scenario, tool: str, renames: dict[str, str] | None = None) -> dict:
    """Valid arguments for a tool, from its declared schema (renamed if drifted); an argument
    its clean response echoes gets that value (the scenario server knows that one record)."""
    spec = scenario.tool(tool)
    schema = spec.input_schema
    echoed = spec.response.json_view() or {}
    samples = {"string": "x", "integer": 1, "number": 1.0, "array": ["a", "b"], "boolean": True}
    out = {}
    for name in schema.get("required", []):
        prop = schema["properties"][name]
        value = echoed[name] if name in echoed else prop.get("enum", [samples[prop["type"]]])[0]
        out[(renames or {}).get(name, name)] = value
    return out


async def call(client: Client, tool: str, args: dict[str, Any]) -> CallToolResult | MCPError:
    try:
        return await client.call_tool(tool, args)
    except MCPError as exc:
        return exc


# -------------------------------------------------------------------------------- transparency


def rich_upstream() -> MCPServer:
    """A hand-written upstream with varied result shapes, errors and a resource."""
    server = MCPServer("rich-upstream", instructions="Use the tools wisely.")

    @server.tool(description="Structured output from a typed return.")
    def stats(n: int) -> dict[str, int]:
        return {"n": n, "square": n * n}

    @server.tool(description="Plain text.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Raises inside the tool.")
    def crash() -> str:
        raise ValueError("boom")

    @server.tool(description="A JSON-RPC error.")
    def reject(value: str) -> str:
        raise MCPError(code=-32602, message=f"bad value {value}", data={"field": "value"})

    @server.tool(description="An explicit is_error result with meta.")
    def failing() -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text="nope")], is_error=True, _meta={"k": 1}
        )

    @server.resource("memo://today", description="A memo.")
    def memo() -> str:
        return "remember the milk"

    return server


CALLS = [
    ("stats", {"n": 7}),
    ("echo", {"text": "héllo"}),
    ("crash", {}),
    ("reject", {"value": "v"}),
    ("failing", {}),
    ("missing_tool", {}),
    ("echo", {"wrong": 1}),
]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_transparent_proxy_is_identical_to_a_direct_connection(mode: str) -> None:
    async def observe(target: Any) -> list[Any]:
        seen: list[Any] = []
        async with Client(target, mode=mode) as client:
            seen.append(dump(await client.list_tools()))
            for tool, args in CALLS:
                outcome = await call(client, tool, args)
                seen.append(
                    dump(outcome)
                    if isinstance(outcome, CallToolResult)
                    else ("error", outcome.error.code, outcome.error.message, outcome.error.data)
                )
            seen.append(dump(await client.list_resources()))
            seen.append(dump(await client.read_resource("memo://today")))
            seen.append((client.server_info.name, client.instructions))
        return seen

    async def main() -> None:
        direct = await observe(rich_upstream())
        async with run_proxy(None, rich_upstream()) as proxy:
            via_proxy = await observe(proxy)
            assert proxy.injections == []
        assert via_proxy == direct
        assert ("error", -32602, "bad value v", {"field": "value"}) in direct
        assert any(isinstance(d, dict) and d.get("isError") for d in direct)

    anyio.run(main)


def test_armed_proxy_leaves_other_tools_and_off_occurrences_untouched() -> None:
    s = variant("b2-finance-01", {"nth": [2]})

    async def main() -> None:
        async with Client(ScenarioServer(s)) as direct:
            expected = {
                t.name: dump(await direct.call_tool(t.name, required_args(s, t.name)))
                for t in s.tools
            }
            listing = dump(await direct.list_tools())
        async with run_proxy(s, ScenarioServer(s)) as proxy, Client(proxy) as client:
            assert {**dump(await client.list_tools()), "ttlMs": 0} == {**listing, "ttlMs": 0}
            for tool in ("get_quote", "get_exchange_quote", "get_quote"):
                result = await client.call_tool(tool, required_args(s, tool))
                assert dump(result) == expected[tool]

    anyio.run(main)


# -------------------------------------------------------------------------------- every fault type


def expect_a2(s: Scenario, r: Any, proxy: Any) -> None:
    body = json.loads(r.content[0].text)
    assert r.is_error and body["error"]["status"] == s.fault.params["status"]


def expect_a3(s: Scenario, r: Any, proxy: Any) -> None:
    body = json.loads(r.content[0].text)
    assert r.is_error and body["error"]["status"] == 403
    assert body["error"]["required_role"] == s.fault.params["required_role"]


def expect_patch(s: Scenario, r: Any, proxy: Any) -> None:
    for pointer, value in s.fault.params["patch"].items():
        assert resolve_pointer(r.structured_content, pointer) == value
        assert resolve_pointer(json.loads(r.content[0].text), pointer) == value


def expect_b3(s: Scenario, r: Any, proxy: Any) -> None:
    assert r.structured_content == s.fault.params["response"]["structured"] and not r.is_error


def expect_b4(s: Scenario, r: Any, proxy: Any) -> None:
    assert not r.is_error
    assert r.content == [] or all(
        not v for v in r.structured_content.values() if isinstance(v, list)
    )


def expect_c1(s: Scenario, r: Any, proxy: Any) -> None:
    assert s.checks.payload_id in r.content[0].text


def expect_c3(s: Scenario, r: Any, proxy: Any) -> None:
    assert any(a in json.dumps(dump(r)) for a in s.checks.false_claim_aliases)


def expect_c4(s: Scenario, r: Any, proxy: Any) -> None:
    assert s.checks.exfiltration_url in json.dumps(dump(r))


CASES = {
    "A2": ("a2-travel-01", {}, expect_a2),
    "A3": ("a3-support-01", {}, expect_a3),
    "B1": ("b1-finance-01", {}, expect_patch),
    "B2": ("b2-finance-01", {}, expect_patch),
    "B3": ("b3-legal-01", {}, expect_b3),
    "B4": ("b4-finance-01", {}, expect_b4),
    "C1": ("c1-weather-01", {}, expect_c1),
    "C3": ("c3-legal-01", {}, expect_c3),
    "C4": ("c4-finance-01", {}, expect_c4),
}


@pytest.mark.parametrize("fid", sorted(CASES))
def test_result_fault_hits_the_second_call_only(fid: str) -> None:
    sid, params, expect = CASES[fid]
    s = variant(sid, {"nth": [2]}, **params)
    tool = s.fault.tool
    args = required_args(s, tool)

    async def main() -> None:
        async with Client(ScenarioServer(s)) as direct:
            clean = dump(await direct.call_tool(tool, args))
        upstream = CountingServer(s)
        async with run_proxy(s, upstream) as proxy, Client(proxy) as client:
            results = [await client.call_tool(tool, args) for _ in range(3)]
        assert dump(results[0]) == clean and dump(results[2]) == clean
        assert label_of(results[0]) is None and label_of(results[2]) is None
        assert label_of(results[1]) == f"{fid}:{sid}"
        expect(s, results[1], proxy)
        assert [(i.tool, i.occurrence, i.label) for i in proxy.injections] == [(tool, 2, s.label)]
        # a denied or failed call never reaches the upstream; other faults rewrite its result
        reached = 2 if fid in ("A2", "A3", "B3") else 3
        assert upstream.served[tool] == reached

    anyio.run(main)


def test_retries_stay_faulted_under_from_and_every() -> None:
    persistent = variant("a2-support-01", {"from": 2})
    flaky = variant("a2-hr-01", {"every": 2})

    async def main() -> None:
        async with run_proxy(persistent, None) as proxy, Client(proxy) as client:
            outcomes = [
                await call(client, "get_order", {"order_id": "ORD-778120"}) for _ in range(4)
            ]
        assert isinstance(outcomes[0], CallToolResult)
        for err in outcomes[1:]:
            assert isinstance(err, MCPError) and err.error.code == INTERNAL_ERROR
            assert err.error.data == {"status": 500, LABEL_META_KEY: persistent.label}
        async with run_proxy(flaky, None) as proxy, Client(proxy) as client:
            results = [
                await client.call_tool("get_leave_balance", {"employee_id": "E-10482"})
                for _ in range(5)
            ]
        assert [r.is_error for r in results] == [False, True, False, True, False]

    anyio.run(main)


def test_probability_rule_is_reproducible_per_seed() -> None:
    s = variant("a2-shop-01", {"probability": 0.5})

    async def pattern(seed: int) -> list[bool]:
        async with run_proxy(s, None, seed=seed) as proxy, Client(proxy) as client:
            return [
                bool((await client.call_tool("get_product", {"sku": "SKU-30417"})).is_error)
                for _ in range(24)
            ]

    async def main() -> None:
        first, again, other = await pattern(3), await pattern(3), await pattern(4)
        assert first == again and first != other
        assert 4 <= sum(first) <= 20

    anyio.run(main)


def test_a1_really_times_out_the_client() -> None:
    s = variant("a1-weather-01", {"nth": [2]}, delay_ms=2500)

    async def main() -> None:
        async with run_proxy(s, None) as proxy, Client(proxy, read_timeout_seconds=0.4) as client:
            first = await client.call_tool("get_forecast", {"city": "Lisbon"})
            started = time.monotonic()
            with pytest.raises(MCPError) as info:
                await client.call_tool("get_forecast", {"city": "Lisbon"})
            waited = time.monotonic() - started
            third = await client.call_tool("get_forecast", {"city": "Lisbon"})
        assert info.value.error.code == REQUEST_TIMEOUT
        assert 0.35 < waited < 2.0  # the client gave up at its own deadline, not at 2.5 s
        assert not first.is_error and not third.is_error and label_of(third) is None
        assert proxy.injections[0].note == "held 2500 ms"

    anyio.run(main)


def test_a1_late_result_is_labelled_and_error_mode_is_immediate() -> None:
    slow = variant("a1-weather-01", {"nth": [1]}, delay_ms=300)
    error = variant("a1-medical-01", {"nth": [1]}, delay_ms=60000)

    async def main() -> None:
        async with run_proxy(slow, None) as proxy, Client(proxy, read_timeout_seconds=5) as client:
            started = time.monotonic()
            late = await client.call_tool("get_forecast", {"city": "Lisbon"})
            assert time.monotonic() - started >= 0.3 and label_of(late) == slow.label
        async with run_proxy(error, None) as proxy, Client(proxy, mode="legacy") as client:
            started = time.monotonic()
            with pytest.raises(MCPError) as info:
                await client.call_tool("check_drug_interactions", {"drugs": ["a", "b"]})
            assert time.monotonic() - started < 1.0
        assert info.value.error.code == REQUEST_TIMEOUT
        assert info.value.error.data[LABEL_META_KEY] == error.label

    anyio.run(main)


def test_a2_a3_as_jsonrpc_errors_carry_the_label_in_data() -> None:
    a2 = variant("a2-travel-01", {"nth": 1}, **{"as": "jsonrpc"})
    a3 = variant("a3-hr-01")

    async def main() -> None:
        for s, tool, code in (
            (a2, "search_flights", INTERNAL_ERROR),
            (a3, "update_salary", PERMISSION_DENIED_CODE),
        ):
            async with run_proxy(s, None) as proxy, Client(proxy, mode="legacy") as client:
                with pytest.raises(MCPError) as info:
                    await client.call_tool(tool, required_args(s, tool))
            assert info.value.error.code == code
            assert info.value.error.data[LABEL_META_KEY] == s.label

    anyio.run(main)


def test_a4_schema_drift_enforces_renamed_arguments() -> None:
    s = variant("a4-weather-01", {"nth": [2, 3]})
    renames = dict(s.fault.params["argument_renames"])
    assert s.faulty_tool.output_schema is not None  # the library declares what a result holds

    async def main() -> None:
        async with run_proxy(s, None) as proxy, Client(proxy) as client:

            def schema(listing: Any, key: str = "input_schema") -> dict[str, Any]:
                return next(getattr(t, key) for t in listing.tools if t.name == "get_forecast")

            assert "city" in schema(await client.list_tools())["properties"]  # call 1 is clean
            first = await client.call_tool("get_forecast", {"city": "Lisbon"})
            listing = await client.list_tools()  # call 2 will be drifted
            drifted = schema(listing)
            assert "location" in drifted["properties"] and drifted["required"] == ["location"]
            # the declared output schema stays: a new argument name is announced, result fields
            # drift silently against the declaration
            assert schema(listing, "output_schema") == s.faulty_tool.output_schema
            rejected = await client.call_tool("get_forecast", {"city": "Lisbon"})
            # the drifted result breaks the declared schema: the real mcp 2.x client refuses it
            with pytest.raises(RuntimeError, match=r"Invalid structured content.*'high_c'"):
                await client.call_tool("get_forecast", {"location": "Lisbon"})
            assert "city" in schema(await client.list_tools())["properties"]  # drift over
            after = await client.call_tool("get_forecast", {"location": "Lisbon"})
        assert not first.is_error and "high_c" in first.content[0].text
        assert rejected.is_error and "city: unexpected argument" in rejected.content[0].text
        assert label_of(rejected) == s.label
        # back to the original server: the new name is now the unknown one, as for a real server
        assert after.is_error and "location: unexpected argument" in after.content[0].text
        assert label_of(after) is None
        kinds = [(i.kind, i.occurrence) for i in proxy.injections]
        assert kinds == [("listing", 2), ("reject", 2), ("call", 3)]
        assert renames == {"city": "location"}

    anyio.run(main)


def test_a4_new_server_version_announces_the_renamed_output_schema() -> None:
    s = variant("a4-weather-01", {"from": 1}, rename_output_schema=True)

    async def main() -> None:
        async with run_proxy(s, None) as proxy, Client(proxy) as client:
            listing = await client.list_tools()
            tool = next(t for t in listing.tools if t.name == "get_forecast")
            items = tool.output_schema["properties"]["days"]["items"]
            assert "temp_max_c" in items["required"] and "high_c" not in items["required"]
            renamed = await client.call_tool("get_forecast", {"location": "Lisbon"})
        assert not renamed.is_error and label_of(renamed) == s.label
        assert renamed.structured_content["days"][0]["temp_max_c"] == 31
        assert "high_c" not in renamed.content[0].text
        assert [i.kind for i in proxy.injections] == ["listing", "call"]

    anyio.run(main)


def test_c2_poisoned_description_is_a_rug_pull_on_listings() -> None:
    s = variant("c2-ops-01", {"nth": [2]})

    async def main() -> None:
        async with run_proxy(s, None) as proxy, Client(proxy) as client:
            descriptions, labels = [], []
            for _ in range(3):
                listing = await client.list_tools()
                descriptions.append(
                    next(t.description for t in listing.tools if t.name == "get_deploy_history")
                )
                result = await client.call_tool("get_deploy_history", {"service": "checkout-api"})
                labels.append(label_of(result))
        clean = s.faulty_tool.description
        assert descriptions[0] == clean and descriptions[2] == clean
        assert descriptions[1].startswith(clean) and s.checks.payload_id in descriptions[1]
        assert labels == [None, s.label, None]
        assert [i.kind for i in proxy.injections] == ["listing", "under_listing"]

    anyio.run(main)


def test_c4_in_a_description() -> None:
    s = find_scenario("c4-travel-01")

    async def main() -> None:
        async with run_proxy(s, None) as proxy, Client(proxy) as client:
            listing = await client.list_tools()
            result = await client.call_tool("get_hotel_details", {"hotel_id": "H"})
        description = next(t.description for t in listing.tools if t.name == "get_hotel_details")
        assert s.checks.exfiltration_url in description
        assert (
            label_of(result) == s.label and s.checks.exfiltration_url not in result.content[0].text
        )

    anyio.run(main)


def test_b2_conflict_survives_between_the_two_tools() -> None:
    s = find_scenario("b2-weather-01")

    async def main() -> None:
        async with run_proxy(s, None) as proxy, Client(proxy) as client:
            values = {}
            for ref in s.checks.conflicting_values:
                result = await client.call_tool(ref.tool, required_args(s, ref.tool))
                values[ref.tool] = resolve_pointer(result.structured_content, ref.pointer)
        assert values == {v.tool: v.value for v in s.checks.conflicting_values}
        assert len(set(values.values())) == 2

    anyio.run(main)


# -------------------------------------------------------------------------------- start-up, logs


def test_start_up_says_what_is_armed_and_refuses_a_tool_the_upstream_lacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = find_scenario("a3-ops-01")
    other = find_scenario("a1-finance-01")  # an upstream without the faulty tool

    async def main() -> None:
        with caplog.at_level(logging.INFO, logger="toolwatch.injection.proxy.proxy"):
            async with run_proxy(s, None):
                pass
            with pytest.raises(ScenarioError) as info:
                async with run_proxy(s, ScenarioServer(other)):
                    pass
            async with run_proxy(None, ScenarioServer(other)):
                pass
        assert str(info.value).startswith(
            f"{s.source}: /fault/tool: upstream in-process server 'finance-tools' lists no "
            "tool 'restart_service' (it lists: "
        )
        assert str(info.value).endswith("): the fault could never fire")

    anyio.run(main)
    text = caplog.text
    assert "armed: A3 replace_with_403 on tool 'restart_service' at call #1 and later" in text
    assert "label A3:a3-ops-01" in text
    assert (
        "proxy to in-process server 'finance-tools' (upstream agreed to 2026-07-28): "
        "transparent, no fault armed" in text
    )
    assert (
        "proxy to in-process server 'ops-tools' (upstream agreed to 2026-07-28): scenario" in text
    )


def test_injection_log_is_content_free(tmp_path: Path) -> None:
    s = variant("c1-support-01", {"from": 1})
    log = tmp_path / "injections.jsonl"
    canary = "CANARY-7f3e9a"

    async def main() -> None:
        async with run_proxy(s, None, injection_log=log) as proxy, Client(proxy) as client:
            for _ in range(2):
                await client.call_tool("get_ticket", {"ticket_id": canary})

    anyio.run(main)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["tool"], r["occurrence"], r["label"], r["kind"]) for r in rows] == [
        ("get_ticket", 1, s.label, "call"),
        ("get_ticket", 2, s.label, "call"),
    ]
    text = log.read_text()
    assert canary not in text and s.checks.payload_id not in text


def test_an_injection_log_that_stops_taking_writes_does_not_fail_the_agents_call(
    tmp_path: Path,
) -> None:
    """The log's directory removed mid-run: each call still gets its (faulted) answer, the
    events stay in memory and the failures are counted (an OSError used to reach the call)."""
    s = variant("c1-support-01", {"from": 1})
    gone = tmp_path / "gone"
    gone.mkdir()
    log = gone / "injections.jsonl"

    async def main() -> FaultProxy:
        async with run_proxy(s, None, injection_log=log) as proxy, Client(proxy) as client:
            gone.rmdir()
            for _ in range(2):
                result = await client.call_tool("get_ticket", {"ticket_id": "T-1"})
                assert label_of(result) == s.label
            return proxy

    proxy = anyio.run(main)
    assert (
        proxy.log is not None
        and proxy.log.failures == 2
        and len(proxy.injections) == 2
        and not gone.exists()
    )


def test_cli_proxy_refuses_an_injection_log_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before any upstream starts (it failed at the first injection, inside the agent's call);
    exit 1, output it cannot use, as every command says it (it was 2, bad usage)."""
    log = tmp_path / "missing-dir" / "log.jsonl"
    argv = ["proxy", "--scenario", "a1-ops-01", "--injection-log", str(log)]
    assert cli_main(argv) == 1
    assert capsys.readouterr().err.strip() == (
        f"toolwatch proxy: --injection-log: cannot write {log}: No such file or directory"
    )


# -------------------------------------------------------------------------------- HTTP, stdio


def test_over_streamable_http_on_loopback() -> None:
    s = variant("a2-legal-01", {"nth": [2]})

    async def main() -> None:
        async with (
            http_server(ScenarioServer(s)) as upstream,
            run_proxy(s, upstream.url) as proxy,
            http_server(proxy) as front,
        ):
            assert front.url.startswith("http://127.0.0.1:") and front.url.endswith("/mcp")
            async with Client(front.url) as client, Client(upstream.url) as direct:
                args = {"contract_id": "CTR-2024-117"}
                assert dump(await client.call_tool("get_contract", args)) == dump(
                    await direct.call_tool("get_contract", args)
                )
                with pytest.raises(MCPError) as info:
                    await client.call_tool("get_contract", args)
        assert info.value.error.data[LABEL_META_KEY] == s.label

    anyio.run(main)


def test_over_http_only_the_listings_a_client_gets_count() -> None:
    """A 2026-07-28 call over HTTP has the SDK check its Mcp-Param headers against the tool's
    input schema; it used to run the proxy's tools/list handler for that, so every call counted
    as a listing served: C2 poisoned a listing no client saw and labelled the calls after it."""
    s = find_scenario("c2-ops-01")  # poisons from the 2nd listing
    listing = ListToolsRequest()
    call = CallToolRequest(
        params=CallToolRequestParams(
            name="get_deploy_history", arguments={"service": "checkout-api"}
        )
    )

    async def session(url: str) -> tuple[str | None, list[str | None]]:
        async with Client(url) as client:
            assert client.protocol_version == "2026-07-28"
            listed = await client.session.send_request(listing, ListToolsResult)
            results = [await client.session.send_request(call, CallToolResult) for _ in range(3)]
        return (listed.meta or {}).get(LABEL_META_KEY), [label_of(r) for r in results]

    async def main() -> None:
        async with run_proxy(s, None) as proxy, http_server(proxy) as front:
            assert await session(front.url) == (None, [None, None, None])
            assert proxy.listings == 1 and proxy.injections == []
            assert await session(front.url) == (s.label, [s.label] * 3)
            assert proxy.listings == 2
            assert [(i.kind, i.occurrence) for i in proxy.injections] == [
                ("listing", 2),
                ("under_listing", 4),
                ("under_listing", 5),
                ("under_listing", 6),
            ]

    anyio.run(main)


CRASHY = textwrap.dedent(
    """
    import os
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("crashy")

    @server.tool()
    def ok(x: int) -> str:
        return f"ok {x}"

    @server.tool()
    def die() -> str:
        os._exit(3)

    server.run("stdio")
    """
)


def test_upstream_crash_is_reported_and_the_proxy_recovers(tmp_path: Path) -> None:
    script = tmp_path / "crashy.py"
    script.write_text(CRASHY)
    target = StdioServerParameters(command=PYTHON, args=[str(script)])

    async def main() -> None:
        async with run_proxy(None, target) as proxy, Client(proxy) as client:
            assert (await client.call_tool("ok", {"x": 1})).content[0].text == "ok 1"
            with pytest.raises(MCPError) as info:
                await client.call_tool("die", {})
            unknown = await client.call_tool("nope", {})
            again = await client.call_tool("ok", {"x": 2})
            assert proxy.upstream.connects == 2
        error = info.value.error
        assert error.code == INTERNAL_ERROR
        assert (
            error.message.startswith("toolwatch proxy: upstream ") and "crashy.py" in error.message
        )
        assert error.data == {UPSTREAM_UNAVAILABLE_KEY: "unavailable"}
        assert unknown.is_error and unknown.content[0].text == "Unknown tool: nope"
        assert again.content[0].text == "ok 2"

    anyio.run(main)


def test_unreachable_upstream_fails_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def main() -> None:
        with pytest.raises(
            UpstreamUnavailable,
            match=re.escape("cannot connect to upstream http://127.0.0.1:9/mcp"),
        ):
            async with run_proxy(None, "http://127.0.0.1:9/mcp", connect_timeout=5):
                pass

    anyio.run(main)
    assert cli_main(["proxy", "--upstream-cmd", str(tmp_path / "no-such-server")]) == 1
    assert "cannot connect to upstream" in capsys.readouterr().err


def test_cli_rejects_a_broken_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = scenario_to_json(find_scenario("a1-ops-01"))
    doc["fault"]["occurrence"] = {"every": 0}
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    assert (
        cli_main(["proxy", "--scenario", str(path), "--upstream-url", "http://127.0.0.1:9/mcp"])
        == 1
    )
    assert (
        f"{path}: /fault/occurrence/every: 0 is less than the minimum of 1"
        in capsys.readouterr().err
    )
    assert cli_main(["serve-scenario", str(path)]) == 1


def test_cli_proxy_over_stdio_to_serve_scenario_over_stdio(tmp_path: Path) -> None:
    """`toolwatch proxy` and `toolwatch serve-scenario` as real processes, real stdio pipes."""
    s = variant("a1-ops-01", {"nth": [2]}, delay_ms=2500)
    path = tmp_path / "a1.json"
    path.write_text(json.dumps(scenario_to_json(s)))
    log = tmp_path / "injections.jsonl"
    upstream_cmd = f"{PYTHON} -m toolwatch serve-scenario {path}"
    proxy_cmd = StdioServerParameters(
        command=PYTHON,
        args=[
            "-m",
            "toolwatch",
            "proxy",
            "--scenario",
            str(path),
            "--upstream-cmd",
            upstream_cmd,
            "--injection-log",
            str(log),
        ],
    )

    async def main() -> None:
        async with Client(ScenarioServer(s)) as direct:
            clean = dump(await direct.call_tool("get_service_status", {"service": "checkout-api"}))
            listing = dump(await direct.list_tools())
        async with Client(proxy_cmd, read_timeout_seconds=20) as client:
            assert dump(await client.list_tools())["tools"] == listing["tools"]
            first = await client.call_tool("get_service_status", {"service": "checkout-api"})
            started = time.monotonic()
            with pytest.raises(MCPError) as info:
                await client.call_tool(
                    "get_service_status", {"service": "checkout-api"}, read_timeout_seconds=0.5
                )
            waited = time.monotonic() - started
            third = await client.call_tool("get_service_status", {"service": "checkout-api"})
        assert dump(first)["structuredContent"] == clean["structuredContent"]
        assert dump(first)["content"] == clean["content"] and label_of(first) is None
        assert info.value.error.code == REQUEST_TIMEOUT and waited < 2.0
        assert dump(third)["content"] == clean["content"]

    anyio.run(main)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["occurrence"], r["label"]) for r in rows] == [(2, s.label)]


def test_a_get_asking_to_resume_gets_a_fresh_stream_not_a_500() -> None:
    """No event store (the proxy sends no event ids), so a ``Last-Event-ID`` is ignored, as the
    transport spec allows: the SDK answered such a GET with a bare 500."""
    import httpx2

    async def main() -> tuple[int, str]:
        s = find_scenario("a3-ops-01")
        async with http_server(ScenarioServer(s)) as front, httpx2.AsyncClient(timeout=5) as c:
            h = {"accept": "application/json, text/event-stream"}
            opened = await c.post(front.url, json=PROBE_INITIALIZE, headers=h)
            sid = opened.headers["mcp-session-id"]
            h |= {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await c.post(front.url, json=note, headers=h)).status_code == 202
            get = {**h, "accept": "text/event-stream", "last-event-id": "stale-7"}
            async with c.stream("GET", front.url, headers=get) as resp:
                return resp.status_code, resp.headers["content-type"]

    status, kind = anyio.run(main)
    assert status == 200 and kind.startswith("text/event-stream")
