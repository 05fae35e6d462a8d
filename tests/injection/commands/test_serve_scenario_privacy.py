"""Privacy of the scenario servers' logs: ``toolwatch serve-scenario`` and ``toolwatch proxy``
without an upstream (the scenario's tools in process), as real processes over stdio and over
streamable HTTP (a legacy session's answers are SSE frames, a 2026-07-28 one's JSON).

Every call carries a canary in every argument (and in an argument the schema does not know);
the scenario server answers "no record for <argument>" — the canary is in the result the client
gets (positive control) and in no form in the process's stderr, at the default level and with
``-v``: the SDK logs a failed call's message at INFO (``Tool 'x' failed: '…'``).
"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.canary import assert_absent, make_canary

PYTHON = sys.executable
SCENARIO = "b4-finance-01"  # its tools answer an unknown id with "no record for <id>"


async def _call_every_tool(
    params: StdioServerParameters | str, canary: str, mode: str = "auto"
) -> str:
    """Every listed tool, every property set to the canary; the results' text."""
    seen: list[str] = []
    async with Client(params, read_timeout_seconds=30, mode=mode) as client:
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


def _listening(proc: subprocess.Popen[bytes], log: Path) -> str:
    """The URL the process says it serves (its stderr line), within 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"listening on (http://\S+/mcp)", log.read_text())
        if found:
            return found.group(1)
        assert proc.poll() is None, log.read_text()
        time.sleep(0.05)
    raise AssertionError(f"no 'listening on' line: {log.read_text()}")


@pytest.mark.parametrize("verbose", [False, True], ids=["default", "verbose"])
@pytest.mark.parametrize("command", ["serve-scenario", "proxy"])
def test_no_argument_canary_in_the_stderr_over_streamable_http(
    tmp_path: Path, command: str, verbose: bool
) -> None:
    """Over HTTP the SDK writes SSE frames with sse_starlette, which logged every frame (a
    result quoting the argument) at DEBUG: under ``-v`` the canary was in stderr."""
    canary = make_canary()
    log = tmp_path / "stderr.log"
    line = [PYTHON, "-m", "toolwatch", *(["-v"] if verbose else []), command]
    line += [SCENARIO] if command == "serve-scenario" else ["--scenario", SCENARIO]
    line += ["--transport", "http", "--port", "0"]
    with log.open("wb") as err:
        proc = subprocess.Popen(
            line, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        url = _listening(proc, log)
        results = [anyio.run(_call_every_tool, url, canary, mode) for mode in ("legacy", "auto")]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert all(canary in text for text in results)  # both sessions got the argument back
    err_text = log.read_text()
    assert "failed" in err_text
    assert_absent(err_text, canary, f"{command} stderr over HTTP")
    if verbose:
        assert "chunk: (text withheld)" in err_text  # the SSE frames were logged, without text
