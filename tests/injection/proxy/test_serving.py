"""``toolwatch proxy --transport http`` stopped by a service manager (SIGTERM) or Ctrl-C
(SIGINT), as a real process: uvicorn raised the signal again after its graceful shutdown, so the
proxy died of it (exit -15) before closing its upstreams, and their processes were left behind.
Ctrl-C is exit 130, as for every toolwatch command (it was 0, as if nothing had stopped it).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client

from support.mcp_test_server import build_server
from support.proxy_fuzz_http import PROBE_INITIALIZE
from support.proxy_process import ProxyProcess, gone_within, lingering_upstream, noted_pids
from toolwatch.cli import main as cli_main
from toolwatch.injection.proxy.proxy import http_server, run_proxy
from toolwatch.injection.proxy.session_slots import RETRY_AFTER_MAX_S


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_is_a_clean_exit_with_the_upstreams_closed(
    tmp_path: Path, stop: signal.Signals
) -> None:
    proxy = ProxyProcess(tmp_path, "http")

    async def call() -> str:
        async with Client(proxy.url, mode="legacy") as client:  # its own upstream process too
            result = await client.call_tool("echo", {"text": "hi"})
            return result.content[0].text  # type: ignore[union-attr]

    try:
        assert anyio.run(call) == "hi"
        tree = proxy.tree()
        assert len(tree) >= 3  # the proxy, its shared upstream, the client's own
        proxy.proc.send_signal(stop)
        proxy.proc.wait(30)
    finally:
        log = proxy.stop()
    assert proxy.proc.returncode == (130 if stop == signal.SIGINT else 0), log
    assert f"{stop.name} received: stopped serving, shutting down" in log
    assert log.rstrip().splitlines()[-1].endswith(f"fault proxy stopped by {stop.name}")
    assert "Traceback" not in log
    assert gone_within(tree[1:], 10)  # no upstream left behind


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_second_signal_during_the_shutdown_is_noted_and_the_shutdown_finishes(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """uvicorn's handlers are in place only while it serves: a second SIGTERM while the proxy
    then closed its upstreams (one that lingers: 2 s each) met the default handler, exit -15,
    its upstreams left running and the last lines unwritten. Now the proxy's own handler is
    held around the whole run: a SIGTERM then stops the upstreams and the shutdown finishes, a
    second Ctrl-C kills them; the exit code is the first signal's (0, or 130 after Ctrl-C)."""
    with lingering_upstream(tmp_path) as (script, pids):
        proxy = ProxyProcess(tmp_path, "http", upstream=script)
        stopping = f"{stop.name} received: stopped serving, shutting down"
        try:
            assert anyio.run(_echo, proxy.url) == "hi"
            started = noted_pids(pids)
            assert len(started) == 2  # the shared upstream and the client's own
            proxy.proc.send_signal(stop)
            assert _logged(proxy.log, stopping), proxy.log.read_text()
            proxy.proc.send_signal(stop)  # while the upstreams close
            proxy.proc.wait(30)
        finally:
            log = proxy.stop()
        assert proxy.proc.returncode == (130 if stop == signal.SIGINT else 0), log
        what = "killed" if stop == signal.SIGINT else "stopped"
        again = f"{stop.name} received again: {what} [12] upstream process groups?, finishing "
        assert re.search(again + "the shutdown", log), log
        assert log.rstrip().splitlines()[-1].endswith(f"fault proxy stopped by {stop.name}")
        assert "Traceback" not in log
        assert gone_within(started, 10), log


async def _echo(url: str) -> str:
    async with Client(url, mode="legacy") as client:  # its own upstream process too
        result = await client.call_tool("echo", {"text": "hi"})
        return result.content[0].text  # type: ignore[union-attr]


def _logged(log: Path, line: str, timeout: float = 30.0) -> bool:
    """Whether ``line`` is in the ``log`` file within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while line not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_session_past_the_bound_is_503_with_retry_after() -> None:
    """The SDK refuses a session past ``max_sessions`` with a bare 503; a client told nothing
    of when to come back retried at once or gave up. Those open are served as before. The
    only open session has 30 idle minutes ahead (the SDK's default): a minute, the bound (a
    fixed 5 s sent a client back 360 times before an idle slot could free)."""
    both = {"accept": "application/json, text/event-stream"}

    async def main() -> tuple[list[httpx2.Response], int]:
        async with (
            run_proxy(None, build_server()) as proxy,
            http_server(proxy, max_sessions=1) as front,
            httpx2.AsyncClient(timeout=10) as http,
        ):
            opened = [await http.post(front.url, json=PROBE_INITIALIZE, headers=both)]
            opened.append(await http.post(front.url, json=PROBE_INITIALIZE, headers=both))
            session = {**both, "mcp-session-id": opened[0].headers["mcp-session-id"]}
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            still = await http.post(front.url, json=listing, headers=session)
            return opened, still.status_code

    (first, refused), still = anyio.run(main)
    assert first.status_code == 200 and "retry-after" not in first.headers
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == str(RETRY_AFTER_MAX_S) == "60"
    assert refused.json()["error"]["message"] == "Too many open sessions"
    assert still == 200


def test_retry_after_is_when_the_oldest_idle_session_expires() -> None:
    """With a 20 s idle timeout, a full server's 503 says the seconds left to its idle
    session; while a request holds that session (an open GET stream) a slot is a whole
    timeout away; once the client ends it (DELETE) the next client gets in."""
    both = {"accept": "application/json, text/event-stream"}

    async def main() -> tuple[list[str], int]:
        said: list[str] = []
        async with (
            run_proxy(None, build_server()) as proxy,
            http_server(proxy, max_sessions=1, session_idle_timeout=20) as front,
            httpx2.AsyncClient(timeout=10) as http,
        ):
            opened = await http.post(front.url, json=PROBE_INITIALIZE, headers=both)
            session = {"mcp-session-id": opened.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(front.url, json=initialized, headers={**both, **session})
            await anyio.sleep(2.2)
            refused = await http.post(front.url, json=PROBE_INITIALIZE, headers=both)
            said.append(refused.headers["retry-after"])
            sse = {"accept": "text/event-stream", **session}
            async with http.stream("GET", front.url, headers=sse) as stream:
                assert stream.status_code == 200
                refused = await http.post(front.url, json=PROBE_INITIALIZE, headers=both)
                said.append(refused.headers["retry-after"])
            await http.delete(front.url, headers=session)
            after = await http.post(front.url, json=PROBE_INITIALIZE, headers=both)
            return said, after.status_code

    said, after = anyio.run(main)
    assert said[0] in {"16", "17", "18"}, said  # 20 s less the 2.2 s idle and the requests
    assert said[1] == "20"
    assert after == 200


#: What each HTTP-serving command serves offline: a packaged scenario's own tools.
target = {"proxy": ["--scenario", "a2-legal-01"], "serve-scenario": ["a2-legal-01"]}


@contextmanager
def _serving(tmp_path: Path, command: str, *flags: str) -> Iterator[tuple[str, Path]]:
    """``toolwatch COMMAND`` over HTTP on any free port, as a real process: its URL and
    stderr log; stopped by SIGTERM after the block, which must be a clean exit (0)."""
    log = tmp_path / "serve.err"
    cmd = [sys.executable, "-m", "toolwatch", command, *target[command]]
    cmd += ["--transport", "http", "--port", "0", *flags]
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"listening on (\S+)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield found.group(1), log
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, log.read_text()


@pytest.mark.parametrize("command", ["proxy", "serve-scenario"])
def test_session_idle_timeout_closes_an_idle_session(tmp_path: Path, command: str) -> None:
    """``--session-idle-timeout`` (there was no flag: the SDK's 30 min, which a full server's
    ``Retry-After`` counts down from) closes a session idle that long: its id then answers
    404, as the transport spec says of an expired session; a session in use stays open."""
    both = {"accept": "application/json, text/event-stream"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}

    async def main(url: str) -> list[int]:
        async with httpx2.AsyncClient(timeout=10) as http:
            opened = await http.post(url, json=PROBE_INITIALIZE, headers=both)
            session = {**both, "mcp-session-id": opened.headers["mcp-session-id"]}
            await http.post(url, json=initialized, headers=session)
            statuses = []
            for _ in range(3):  # in use: 0.5 s apart, never idle 1.5 s
                await anyio.sleep(0.5)
                statuses.append((await http.post(url, json=listing, headers=session)).status_code)
            await anyio.sleep(2.5)
            statuses.append((await http.post(url, json=listing, headers=session)).status_code)
            return statuses

    with _serving(tmp_path, command, "--session-idle-timeout", "1.5") as (url, log):
        statuses = anyio.run(main, url)
    assert statuses == [200, 200, 200, 404], log.read_text()


@pytest.mark.parametrize("command", ["proxy", "serve-scenario"])
def test_max_sessions_refuses_the_next_session_with_503(tmp_path: Path, command: str) -> None:
    """``--max-sessions N`` (there was no flag: the SDK's 10,000, fixed) bounds the sessions
    open at once: the N+1th is refused with 503 and a ``Retry-After`` (the seconds until the
    oldest idle one idles out: 20 s here, so 1-20), while the N open are served as before."""
    both = {"accept": "application/json, text/event-stream"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

    async def main(url: str) -> tuple[list[int], httpx2.Response, int]:
        async with httpx2.AsyncClient(timeout=10) as http:
            opened = [await http.post(url, json=PROBE_INITIALIZE, headers=both) for _ in "ab"]
            refused = await http.post(url, json=PROBE_INITIALIZE, headers=both)
            session = {**both, "mcp-session-id": opened[0].headers["mcp-session-id"]}
            still = await http.post(url, json=listing, headers=session)
            return [o.status_code for o in opened], refused, still.status_code

    flags = ("--max-sessions", "2", "--session-idle-timeout", "20")
    with _serving(tmp_path, command, *flags) as (url, log):
        opened, refused, still = anyio.run(main, url)
    assert opened == [200, 200], log.read_text()
    assert refused.status_code == 503, log.read_text()
    assert 1 <= int(refused.headers["retry-after"]) <= 20
    assert refused.json()["error"]["message"] == "Too many open sessions"
    assert still == 200


#: Each session flag, a value it refuses and the words saying why.
_REFUSED = [
    ("--max-sessions", v, ("at least 1", "not a whole number")) for v in ["0", "-1", "abc", "1.5"]
]
_REFUSED += [
    ("--session-idle-timeout", v, ("positive number", "not a number"))
    for v in ["0", "-1", "abc", "inf", "nan"]
]


@pytest.mark.parametrize("command", ["proxy", "serve-scenario"])
@pytest.mark.parametrize(("flag", "value", "why"), _REFUSED)
def test_a_session_flags_bad_value_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], command: str, flag: str, value: str, why: tuple[str, str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli_main([command, *target[command], flag, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err, err
    assert value in err and any(words in err for words in why), err


def test_the_session_options_default_to_the_sdks_own() -> None:
    """``--session-idle-timeout``'s and ``--max-sessions``' defaults are written in
    ``options.py`` (``--help`` needs no mcp); they are the SDK's own, which the HTTP server
    takes when none is given."""
    from mcp.server.streamable_http_manager import (
        DEFAULT_MAX_SESSIONS,
        DEFAULT_SESSION_IDLE_TIMEOUT,
    )

    from toolwatch.injection.proxy.options import MAX_SESSIONS, SESSION_IDLE_TIMEOUT

    assert SESSION_IDLE_TIMEOUT == DEFAULT_SESSION_IDLE_TIMEOUT
    assert MAX_SESSIONS == DEFAULT_MAX_SESSIONS
