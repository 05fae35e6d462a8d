"""A rug pull, live: a real MCP server whose description changes after approval, seen through the
real fault proxy (C2 ``poison_description``), the instrumented client and the real collector.

The first listing is clean and the user approves it (``toolwatch pins approve``). From the second
listing on, the proxy swaps the tool's description: the listing watcher, hooked into the
collector, raises one alert at once with the old and the new digest — never the text — and
approving the new digest (benign churn, e.g. an upgrade) makes the next listing silent.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from support.collector import wait_until
from toolwatch.cli import main
from toolwatch.collector.otlp.server import Collector
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection.alerting.listings import ListingWatcher
from toolwatch.injection.faults.library import find_scenario
from toolwatch.injection.faults.scenario import Occurrence
from toolwatch.injection.proxy.proxy import run_proxy
from toolwatch.instrumentation import configure_otlp, conversation, instrument, uninstrument
from toolwatch.record import tool_digest

SCENARIO = "c2-finance-01"


def test_a_swapped_description_alerts_with_digests_and_approval_clears_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    base = find_scenario(SCENARIO)
    fault = dataclasses.replace(base.fault, occurrence=Occurrence.from_json({"from": 2}))
    scenario = dataclasses.replace(base, fault=fault)
    target, poison = fault.tool, fault.params["append"]
    store = Store(tmp_path / "store")
    watcher = ListingWatcher(store)
    collector = Collector(store, on_listings=watcher.process)
    collector.start()
    provider = configure_otlp(collector.url, "rug-pull-agent")
    instrument(tracer_provider=provider)
    seen: list[dict[str, str]] = []

    async def listing(session: str) -> None:
        with conversation(session):
            result = await client.list_tools()
        seen.append(
            {t.name: tool_digest(t.name, t.description, t.input_schema) for t in result.tools}
        )
        descriptions.append({t.name: t.description or "" for t in result.tools})
        provider.force_flush()  # delivered = durably written
        rows = sum(len(s) for s in seen)
        wait_until(lambda: watcher.rows_seen >= rows, timeout=20.0)

    async def agent() -> None:
        nonlocal client
        async with run_proxy(scenario, None) as proxy, Client(proxy) as c:
            client = c
            await listing("s1")  # clean
            assert main(["pins", "approve", "--all", "--store", str(store.root)]) == 0
            await listing("s1")  # poisoned from here on: within the session
            await listing("s2")  # another session: the same change, already said
            assert main(["pins", "approve", "--tool", target, "--store", str(store.root)]) == 0
            await listing("s3")  # approved: benign churn

    client: Any = None
    descriptions: list[dict[str, str]] = []
    try:
        anyio.run(agent)
    finally:
        uninstrument()
        provider.shutdown()
        collector.stop()

    assert poison in descriptions[1][target] and poison not in descriptions[0][target]
    clean, poisoned = seen[0][target], seen[1][target]
    assert clean != poisoned
    alerts = store.query(
        "SELECT kind, server, tool, old_digest, new_digest, session_id FROM listing_alerts"
    ).to_pylist()
    assert [
        (a["kind"], a["tool"], a["old_digest"], a["new_digest"], a["session_id"]) for a in alerts
    ] == [("changed_in_session", target, clean, poisoned, "s1")]
    assert alerts[0]["server"]  # the proxy named itself
    assert watcher.alerts_raised == 1

    capsys.readouterr()
    assert main(["pins", "list", "--json", "--store", str(store.root)]) == 0
    status = {r["tool"]: r["status"] for r in json.loads(capsys.readouterr().out)}
    assert status[target] == "approved" and set(status.values()) == {"approved"}

    # the description text is nowhere: not in any store file, decoded or not, nor in the log
    needle = poison.encode()
    for path in store.root.rglob("*"):
        if path.is_file():
            assert needle not in path.read_bytes(), path
    for name in ("tool_lists", "listing_alerts", "tool_pins"):
        assert poison not in repr(store.query(f"SELECT * FROM {name}").to_pylist())
    assert poison not in caplog.text
