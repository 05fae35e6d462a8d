"""Privacy of the scenario servers' logs: ``toolwatch serve-scenario`` and ``toolwatch proxy``
without an upstream (the scenario's tools in process), as real processes over stdio.

Every call carries a canary in every argument (and in an argument the schema does not know);
the scenario server answers "no record for <argument>" — the canary is in the result the client
gets (positive control) and in no form in the process's stderr, at the default level and with
``-v``: the SDK logs a failed call's message at INFO (``Tool 'x' failed: '…'``).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.canary import assert_absent, make_canary

PYTHON = sys.executable
SCENARIO = "b4-finance-01"  # its tools answer an unknown id with "no record for <id>"


async def _call_every_tool(params: StdioServerParameters, canary: str) -> str:
    """Every listed tool, every property set to the canary; the results' text."""
    seen: list[str] = []
    async with Client(params, read_timeout_seconds=30) as client:
        for tool in (await client.list_tools()).tools:
            props = list((tool.input_schema or {}).get("properties", {}))
            for args in ({p: canary for p in props}, {"unknown": canary}):
                result = await client.call_tool(tool.name, args)
                seen += [getattr(block, "text", "") for block in result.content]
    return "\n".join(seen)


@pytest.mark.parametrize("verbose", [False, True], ids=["default", "verbose"])
@pytest.mark.parametrize("command", ["serve-scenario", "proxy"])
def test_no_argument_canary_in_the_scenario_servers_stderr(
    tmp_path: Path, command: str, verbose: bool
) -> None:
    canary = make_canary()
    log = tmp_path / "stderr.log"
    line = [PYTHON, "-m", "toolwatch", *(["-v"] if verbose else []), command]
    line += [SCENARIO] if command == "serve-scenario" else ["--scenario", SCENARIO]
    params = StdioServerParameters(
        command="/bin/sh", args=["-c", f"exec {shlex.join(line)} 2>{shlex.quote(str(log))}"]
    )
    results = anyio.run(_call_every_tool, params, canary)
    assert canary in results  # the server did answer with the argument
    err = log.read_text()
    assert "failed" in err  # the SDK's line is there, without its text
    assert_absent(err, canary, f"{command} stderr")
