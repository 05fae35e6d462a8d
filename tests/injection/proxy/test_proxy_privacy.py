"""Privacy through the fault proxy: an instrumented client talks to ``run_proxy`` in front of a
real MCP server over stdio (transparent, and with a fault armed), spans through the real
collector into a store. A canary in every argument, in a tool's description, and the server's
results, tool errors and JSON-RPC errors all quote the arguments: the canary reaches the client
(positive control) and is in no form in the store (files, decoded Parquet, every table), the
injection log or the log (every logger at DEBUG).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from support.canary import assert_absent, assert_store_clean, make_canary
from support.paths import MCP_TEST_SERVER as SERVER
from toolwatch.collector.otlp.server import Collector
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.faults.library import find_scenario
from toolwatch.injection.proxy.proxy import run_proxy
from toolwatch.instrumentation import configure_otlp, instrument, model_response, uninstrument

LAUNCH = (
    "import os, runpy, sys; "
    "sys.argv = [sys.argv[1], 'proxied-server', os.environ['TW_DESCRIPTION']]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


async def _calls(proxy: object, canary: str) -> list[str]:
    seen: list[str] = []
    async with Client(proxy) as client:  # type: ignore[arg-type]
        listing = await client.list_tools()
        seen += [t.description or "" for t in listing.tools]
        with model_response("resp-proxy-privacy", conversation_id="conv-proxy-privacy"):
            for tool, args in (
                ("echo", {"text": canary}),
                ("fail", {"reason": canary}),
                ("crash", {"note": canary}),
                ("structured", {"n": 1, "text": canary}),
                ("described", {"text": canary}),
                ("echo", {"text": 5, "extra": canary}),
            ):
                result = await client.call_tool(tool, args)
                seen += [getattr(b, "text", "") for b in result.content]
                seen.append(str(result.structured_content))
            with pytest.raises(MCPError) as info:
                await client.call_tool("reject", {"value": canary})
            seen.append(info.value.error.message)
    return seen


@pytest.mark.parametrize("armed", [False, True], ids=["transparent", "fault-armed"])
def test_no_canary_through_the_proxy(
    tmp_path: Path, armed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    canary = make_canary()
    upstream = StdioServerParameters(  # the description by environment: the proxy logs argv
        command=sys.executable,
        args=["-c", LAUNCH, str(SERVER)],
        env={"TW_DESCRIPTION": f"tool for {canary}"},
    )
    scenario = None
    if armed:  # a 503 in place of the server's own failure, which would quote the canary
        a2 = find_scenario("a2-travel-01")
        scenario = dataclasses.replace(a2, fault=dataclasses.replace(a2.fault, tool="fail"))
    log = tmp_path / "injections.jsonl"
    store = Store(tmp_path / "store")
    collector = Collector(store)
    collector.start()
    provider = configure_otlp(collector.url, "proxy-privacy")
    instrument(tracer_provider=provider)

    async def main() -> list[str]:
        async with run_proxy(scenario, upstream, injection_log=log) as proxy:
            return await _calls(proxy, canary)

    try:
        with caplog.at_level(logging.DEBUG):
            seen = anyio.run(main)
    finally:
        uninstrument()
        provider.shutdown()
        collector.stop()
    text = "\n".join(seen)
    assert text.count(canary) >= 6  # description, results, errors: the canary travelled
    assert_absent(caplog.text, canary, "the log")
    assert log.exists() == armed  # the armed fault fired
    if log.exists():
        assert_absent(log.read_bytes(), canary, "the injection log")
    assert_store_clean(store, canary)
    con = store.connect()
    try:
        calls = con.execute(
            "SELECT count(*) FROM calls WHERE session_id = 'conv-proxy-privacy'"
        ).fetchone()
    finally:
        con.close()
    assert calls == (7,)  # the rows are there, only their content is not
