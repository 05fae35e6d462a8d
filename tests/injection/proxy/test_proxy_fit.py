"""The proxy checks the armed scenario against the upstream's whole listing at start: a fault
that could never act there (its tool not listed, an A4 rename of an argument the tool lacks) is
refused with the scenario field named, not proxied unchanged while the user believes a fault is
armed; a tool listed on a later page counts."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from support.paged_server import paged_upstream
from toolwatch.cli import main as cli_main
from toolwatch.conventions import LABEL_META_KEY
from toolwatch.injection.faults.library import find_scenario
from toolwatch.injection.faults.scenario import ScenarioError
from toolwatch.injection.proxy.proxy import run_proxy


def test_a_faulty_tool_on_a_later_page_is_found_and_faulted() -> None:
    s = find_scenario("a3-ops-01")  # restart_service, denied from the first call

    async def main() -> None:
        upstream = paged_upstream(["a", "b", "restart_service", "c"])
        async with run_proxy(s, upstream) as proxy, Client(proxy) as client:
            result = await client.call_tool("restart_service", {})
        assert result.is_error and (result.meta or {}).get(LABEL_META_KEY) == s.label

    anyio.run(main)


def test_cli_refuses_a_fault_the_upstream_cannot_serve_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    upstream = f"{sys.executable} -m toolwatch serve-scenario a1-finance-01"
    code = cli_main(["proxy", "--scenario", "a3-ops-01", "--upstream-cmd", upstream])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1  # a scenario it cannot use here: input, as every command says it
    assert len(err) == 1 and "Traceback" not in err[0]
    assert err[0].startswith(
        "toolwatch proxy: scenarios/a3-ops-01.json: /fault/tool: upstream "
    ) and err[0].endswith(
        "lists no tool 'restart_service' (it lists: get_fx_rate, get_quote): "
        "the fault could never fire"
    )


def test_a4_renaming_an_argument_the_upstream_lacks_is_refused() -> None:
    s = find_scenario("a4-finance-01")  # renames get_company_financials' fiscal_year -> year
    upstream = MCPServer("filings")

    @upstream.tool()
    def get_company_financials(symbol: str, fy: int) -> str:
        """The upstream's own version: its argument is ``fy``."""
        return f"{symbol} {fy}"

    async def main() -> None:
        with pytest.raises(ScenarioError) as info:
            async with run_proxy(s, upstream):
                pass
        assert str(info.value) == (
            f"{s.source}: /fault/params/argument_renames/fiscal_year: tool "
            "'get_company_financials' of upstream in-process server 'filings' has no argument "
            "'fiscal_year' (it has: symbol, fy): the rename could never apply"
        )

    anyio.run(main)
