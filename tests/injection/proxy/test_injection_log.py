"""The injection log under concurrent calls: many clients' calls in flight at once through the
proxy over streamable HTTP, each injection one whole JSON line, each call logged once with its
own occurrence number (the log is written from the proxy's one event loop, a line per write)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import anyio
from mcp import Client

from toolwatch.conventions import LABEL_META_KEY
from toolwatch.injection.faults.library import find_scenario
from toolwatch.injection.faults.scenario import Occurrence
from toolwatch.injection.proxy.proxy import http_server, run_proxy

CLIENTS, CALLS = 5, 6  # 30 calls in flight at once


def test_concurrent_calls_over_http_each_log_one_whole_line(tmp_path: Path) -> None:
    s = find_scenario("c1-support-01")  # plants a payload in the upstream's own result
    s = dataclasses.replace(
        s, fault=dataclasses.replace(s.fault, occurrence=Occurrence.from_json({"from": 1}))
    )
    log = tmp_path / "injections.jsonl"
    labels: list[str | None] = []

    async def client(url: str) -> None:
        async with Client(url) as c:

            async def one() -> None:
                result = await c.call_tool("get_ticket", {"ticket_id": "CS-55120"})
                labels.append((result.meta or {}).get(LABEL_META_KEY))

            async with anyio.create_task_group() as calls:
                for _ in range(CALLS):
                    calls.start_soon(one)

    async def main() -> None:
        async with run_proxy(s, None, injection_log=log) as proxy, http_server(proxy) as front:
            async with anyio.create_task_group() as clients:
                for _ in range(CLIENTS):
                    clients.start_soon(client, front.url)
            assert len(proxy.injections) == CLIENTS * CALLS

    anyio.run(main)
    assert labels == [s.label] * (CLIENTS * CALLS)
    lines = log.read_text().splitlines()
    rows = [json.loads(line) for line in lines]  # every line whole JSON
    assert sorted(r["occurrence"] for r in rows) == list(range(1, CLIENTS * CALLS + 1))
    assert {(r["kind"], r["outcome"], r["label"]) for r in rows} == {("call", "injected", s.label)}
