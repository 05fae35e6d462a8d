"""``toolwatch serve-scenario`` stopped by a service manager (SIGTERM) or Ctrl-C (SIGINT), as a
real process with a client connected: over stdio SIGTERM killed it (exit -15, no last line),
and Ctrl-C exited as the proxy did; now it shuts down at once and exits 0 after SIGTERM, 130
after Ctrl-C (as every toolwatch command interrupted), with a last "stopped" line, as the proxy
(``tests/injection/proxy/test_stdio_stop.py``, ``test_serving.py``)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from support.proxy_fuzz_http import PROBE_INITIALIZE

CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "get_contract", "arguments": {"contract_id": "CTR-2024-117"}},
}


#: ``toolwatch serve-scenario`` whose shutdown after uvicorn stopped serving takes 30 s (its
#: own is too brief to reach), so a signal sent then finds whatever handler is in place.
SLOW_SHUTDOWN = """
import logging, sys, anyio
import toolwatch.injection.proxy.proxy as serving
from toolwatch.cli import main

served = serving.serve


async def slow(*args, **kwargs):
    stopped_by = await served(*args, **kwargs)
    logging.getLogger("test").info("uvicorn stopped serving; shutting down slowly")
    await anyio.sleep(30)
    return stopped_by


serving.serve = slow  # the command imports it when it runs
sys.exit(main(sys.argv[1:]))
"""


def _start(
    tmp_path: Path, transport: str, *, slow_shutdown: bool = False
) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "serve.err"
    start = ["-c", SLOW_SHUTDOWN] if slow_shutdown else ["-m", "toolwatch"]
    cmd = [sys.executable, *start, "serve-scenario", "a2-legal-01"]
    cmd += ["--transport", transport, "--port", "0"]
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    return proc, log


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_over_stdio_a_stop_signal_is_a_prompt_clean_exit(
    tmp_path: Path, stop: signal.Signals
) -> None:
    proc, log = _start(tmp_path, "stdio")
    assert proc.stdin is not None and proc.stdout is not None
    try:
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        for message in (PROBE_INITIALIZE, initialized, CALL):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
        assert answers[1]["result"]["structuredContent"]["renewal_date"] == "2027-02-28"
        took = _stop_timed(proc, stop)
    finally:
        _kill(proc)
        proc.stdout.close()
        proc.stdin.close()
    text = log.read_text()
    assert proc.returncode == (130 if stop == signal.SIGINT else 0), text
    assert took < 5, text  # the client still connected: not waiting for its next line
    assert f"{stop.name} received: shutting down" in text and "Traceback" not in text
    assert text.rstrip().splitlines()[-1].endswith(f"scenario server stopped by {stop.name}")


def test_over_http_ctrl_c_is_exit_130(tmp_path: Path) -> None:
    proc, log = _start(tmp_path, "http")
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"listening on (\S+)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)

        async def call() -> str:
            async with Client(found.group(1)) as client:
                result = await client.call_tool("get_contract", {"contract_id": "CTR-2024-117"})
                return str(result.structured_content["renewal_date"])  # type: ignore[index]

        assert anyio.run(call) == "2027-02-28"
        _stop_timed(proc, signal.SIGINT)
    finally:
        _kill(proc)
    text = log.read_text()
    assert proc.returncode == 130, text
    assert "SIGINT received: stopped serving, shutting down" in text
    assert text.rstrip().splitlines()[-1].endswith("scenario server stopped by SIGINT")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_over_http_a_signal_during_the_shutdown_finishes_it(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """uvicorn's handlers are in place only while it serves: a second SIGTERM during the
    shutdown after it met the default handler (exit -15, the last line unwritten), a second
    Ctrl-C a KeyboardInterrupt wherever it landed. The proxy's handler (``Stop.around``) is now
    held for the whole run: the shutdown finishes at once and the exit code is the first
    signal's (0, or 130 after Ctrl-C)."""
    proc, log = _start(tmp_path, "http", slow_shutdown=True)
    try:
        _wait_for(proc, log, r"listening on (\S+)")
        proc.send_signal(stop)
        _wait_for(proc, log, "shutting down slowly")
        took = _stop_timed(proc, stop)
    finally:
        _kill(proc)
    text = log.read_text()
    assert proc.returncode == (130 if stop == signal.SIGINT else 0), text
    assert took < 5, text  # not the 30 s shutdown
    assert f"{stop.name} received again: finishing the shutdown" in text, text
    assert "Traceback" not in text
    assert text.rstrip().splitlines()[-1].endswith(f"scenario server stopped by {stop.name}")


def _stop_timed(proc: subprocess.Popen[bytes], stop: signal.Signals) -> float:
    """Send ``stop`` and wait for the exit: the seconds it took."""
    sent = time.monotonic()
    proc.send_signal(stop)
    proc.wait(10)
    return time.monotonic() - sent


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """A process a failed test left running is killed, not leaked."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


def _wait_for(proc: subprocess.Popen[bytes], log: Path, pattern: str) -> re.Match[str]:
    """The first match of ``pattern`` in the server's log, within 60 s while it runs."""
    deadline = time.monotonic() + 60
    while not (found := re.search(pattern, log.read_text())):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    return found
