"""docs/SCENARIOS.md cannot rot: every JSON block in it is marked and checked — each scenario
validates, the AgentCheck template converts as the guide says, the broken example fails with the
very lines the guide prints — and the worked examples run through the real ``toolwatch proxy``
in front of the guide's own server, doing on the wire what the guide says they do."""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Awaitable, Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.paths import REPO
from toolwatch import cli
from toolwatch.cli import main as cli_main
from toolwatch.conventions import LABEL_META_KEY
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.library import parse_scenario
from toolwatch.injection.proxy.injection_log import Injection

GUIDE = (REPO / "docs" / "SCENARIOS.md").read_text()
#: the marks a fenced JSON block may carry, each checked by a test below
JSON_MARKS = ("scenario", "broken-scenario", "agentcheck", "client-config")


def blocks(lang: str, mark: str | None = None) -> list[str]:
    """The bodies of the guide's fenced blocks of ``lang`` (```` ```json scenario ````: the
    language, then the block's mark), of one mark when ``mark`` is given."""
    found = re.findall(r"^```(\w+)(?:[ \t]+([\w.-]+))?[ \t]*\n(.*?)^```", GUIDE, re.S | re.M)
    return [body for lg, mk, body in found if lg == lang and (mark is None or mk == mark)]


def marks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}(?:[ \t]+([\w.-]+))?[ \t]*$", GUIDE, re.M)


SCENARIOS = {json.loads(b)["id"]: json.loads(b) for b in blocks("json", "scenario")}


def test_every_json_block_of_the_guide_is_marked_for_a_check() -> None:
    assert marks("json") and all(m in JSON_MARKS for m in marks("json")), marks("json")
    assert len(SCENARIOS) == len(blocks("json", "scenario")) == 4  # ids unique


@pytest.mark.parametrize("scenario_id", sorted(SCENARIOS))
def test_every_scenario_of_the_guide_is_valid(scenario_id: str) -> None:
    scenario = parse_scenario(SCENARIOS[scenario_id], f"{scenario_id}.json")
    assert scenario.id == scenario_id and scenario.format == "toolwatch-scenario/1"


def test_the_armed_line_the_guide_shows_is_the_proxys() -> None:
    (text,) = [b for b in blocks("text") if b.startswith("proxy to ")]
    first = parse_scenario(SCENARIOS["shop-a2-503"], "shop-a2-503.json")
    assert text.splitlines() == [
        "proxy to python shop_server.py: scenario shop-a2-503 (shop-a2-503.json), seed 0",
        f"armed: {FaultEngine.for_scenario(first).describe()}",
    ]


def test_the_agentcheck_example_converts_as_the_guide_says() -> None:
    (body,) = blocks("json", "agentcheck")
    s = parse_scenario(json.loads(body), "A1_order_lookup_timeout.json")
    assert s.format == "agentcheck" and s.fault.tool == "get_order"
    assert s.fault.params == {"delay_ms": 8000, "mode": "sleep"}
    assert s.fault.occurrence.to_json() == {"nth": 1}
    assert s.tools[0].input_schema["required"] == ["order_id"]  # read from the description
    assert s.origin is not None and "checks/expected_value" in s.origin["derived"]


def test_the_broken_example_fails_with_the_lines_the_guide_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (body,) = blocks("json", "broken-scenario")
    monkeypatch.chdir(tmp_path)
    for text, mark in ((body, "validate-output"), (body.replace('"nht"', '"nth"'), "-fixed")):
        Path("shop-b1-typo.json").write_text(text)
        assert cli_main(["scenarios", "validate", "shop-b1-typo.json"]) == 1
        out, err = capsys.readouterr()
        (expected,) = blocks("text", mark if mark != "-fixed" else "validate-output-fixed")
        assert out == "0 valid, 1 invalid\n" and err == expected


def test_the_client_config_starts_a_proxy_the_cli_accepts() -> None:
    (body,) = blocks("json", "client-config")
    server = json.loads(body)["mcpServers"]["shop"]
    assert server["command"] == "toolwatch"
    args = cli.build_parser(server["args"]).parse_args(server["args"])
    assert args.scenario.removesuffix(".json") in SCENARIOS
    assert args.upstream_cmd == "python shop_server.py" and args.injection_log


def test_readme_and_architecture_link_the_guide() -> None:
    for doc in ("README.md", "docs/ARCHITECTURE.md"):
        assert "docs/SCENARIOS.md" in (REPO / doc).read_text(), doc


# ----------------------------------------------------------------- through the real proxy

Calls = Callable[[Client], Awaitable[None]]
ORDER = {"order_id": "ORD-1042"}


def through_proxy(tmp_path: Path, scenario_id: str, calls: Calls) -> list[dict[str, Any]]:
    """Run ``calls`` on a client of ``toolwatch proxy --scenario <id>.json --upstream-cmd
    "python shop_server.py"`` (the guide's server and scenario, written from the guide) and
    return the injection log's rows."""
    (server,) = blocks("python", "shop_server.py")
    (tmp_path / "shop_server.py").write_text(server)
    (tmp_path / f"{scenario_id}.json").write_text(json.dumps(SCENARIOS[scenario_id]))
    upstream = shlex.join([sys.executable, "shop_server.py"])
    argv = ["proxy", "--scenario", f"{scenario_id}.json", "--upstream-cmd", upstream]
    argv += ["--injection-log", "injections.jsonl"]
    command = [sys.executable, "-m", "toolwatch", *argv]  # its log in proxy.err
    params = StdioServerParameters(
        command="sh", args=["-c", 'exec "$@" 2>proxy.err', "sh", *command], cwd=str(tmp_path)
    )

    async def main() -> None:
        async with Client(params) as client:
            await calls(client)

    anyio.run(main)
    log = tmp_path / "injections.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def label(result: Any) -> str | None:
    return (result.meta or {}).get(LABEL_META_KEY)


def test_a2_the_second_call_is_a_503_and_the_others_are_the_servers(tmp_path: Path) -> None:
    seen: list[Any] = []

    async def calls(client: Client) -> None:
        for _ in range(3):
            seen.append(await client.call_tool("get_order", ORDER))

    rows = through_proxy(tmp_path, "shop-a2-503", calls)
    clean = SCENARIOS["shop-a2-503"]["tools"][0]["response"]["structured"]
    assert [r.is_error for r in seen] == [False, True, False]
    assert seen[0].structured_content == seen[2].structured_content == clean
    assert [label(r) for r in seen] == [None, "A2:shop-a2-503", None]
    assert json.loads(seen[1].content[0].text) == {
        "error": {"status": 503, "code": "SERVICE_UNAVAILABLE", "message": "Service Unavailable"}
    }
    assert [(r["occurrence"], r["kind"], r["label"]) for r in rows] == [
        (2, "call", "A2:shop-a2-503")
    ]
    assert set(rows[0]) == {f.name for f in fields(Injection)}  # the fields the guide names
    (summary,) = blocks("text", "run-summary")
    last = (tmp_path / "proxy.err").read_text().splitlines()[-1]
    assert last.endswith(" INFO toolwatch.injection.commands.proxy: " + summary.strip())


def test_a4_renames_the_argument_rejects_the_old_name_and_drifts_the_field(
    tmp_path: Path,
) -> None:
    seen: dict[str, Any] = {}

    async def calls(client: Client) -> None:
        first = await client.call_tool("get_order", ORDER)
        seen["first"] = first.structured_content
        listing = await client.list_tools()
        seen["arguments"] = list(listing.tools[0].input_schema["properties"])
        seen["old name"] = await client.call_tool("get_order", ORDER)
        with pytest.raises(RuntimeError, match=r"Invalid structured content.*'total_eur'"):
            await client.call_tool("get_order", {"orderId": "ORD-1042"})

    rows = through_proxy(tmp_path, "shop-a4-drift", calls)
    assert seen["first"]["total_eur"] == 89.5
    assert seen["arguments"] == ["orderId"]
    old = seen["old name"]
    assert old.is_error and label(old) == "A4:shop-a4-drift"
    assert old.content[0].text.startswith(
        "Error executing tool get_order: 2 validation errors for get_order arguments\n"
        "order_id: unexpected argument\n"
    )
    calls_faulted = [(r["occurrence"], r["note"]) for r in rows if r["kind"] in ("call", "reject")]
    assert calls_faulted == [
        (2, "call rejected: old argument names"),
        (3, "result fields renamed"),
    ]


def test_b1_patches_the_first_two_answers_in_the_servers_own_json_style(tmp_path: Path) -> None:
    seen: list[Any] = []

    async def calls(client: Client) -> None:
        for _ in range(3):
            seen.append(await client.call_tool("get_order", ORDER))

    through_proxy(tmp_path, "shop-b1-stale", calls)
    assert [r.structured_content["status"] for r in seen] == ["processing", "processing", "shipped"]
    assert [r.structured_content["updated_at"] for r in seen][:2] == ["2026-02-20"] * 2
    assert [label(r) for r in seen] == ["B1:shop-b1-stale"] * 2 + [None]
    for r in seen:  # the text is the structured content, indented by two as the server wrote it
        assert r.content[0].text == json.dumps(r.structured_content, indent=2)


def test_c1_plants_the_payload_in_the_customer_note_on_every_call(tmp_path: Path) -> None:
    seen: list[Any] = []

    async def calls(client: Client) -> None:
        for _ in range(2):
            seen.append(await client.call_tool("get_order", ORDER))

    through_proxy(tmp_path, "shop-c1-note", calls)
    text = SCENARIOS["shop-c1-note"]["fault"]["params"]["text"]
    for r in seen:
        note = r.structured_content["customer_note"]
        assert note == f"Please leave the parcel with the neighbour at no. 12. {text}"
        assert "PI-SHOP-7731" in r.content[0].text and label(r) == "C1:shop-c1-note"
