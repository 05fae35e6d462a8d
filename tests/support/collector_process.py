"""A ``toolwatch collector`` in a child process, for tests and benchmarks that attack it (memory,
descriptors, slow clients): start it (optionally with a descriptor limit), talk to it, sample its
memory, stop it and read its log. A collector that does not answer ``/health`` in time, or
exits first, is stopped (SIGTERM, then SIGKILL) before :class:`CollectorDidNotStart` is raised:
no caller is left with an orphan. Support code, not collected.
"""

from __future__ import annotations

import http.client
import json
import resource
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from toolwatch.usage import one_line

#: seconds a started collector has to answer ``/health`` (a loaded 2-core machine needs some)
START_TIMEOUT = 30.0
#: the log's last lines quoted when it did not start
_LOG_LINES = 3


class CollectorDidNotStart(RuntimeError):
    """The collector did not answer ``/health`` in time or exited first; its process is
    already ended, and the message is one line ending with its log's last lines."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(
        self,
        tmp: Path,
        *,
        fd_limit: int | None = None,
        extra: Sequence[str] = (),
        start_timeout: float = START_TIMEOUT,
        port: int | None = None,
    ) -> None:
        """``extra``: more ``toolwatch collector`` arguments (``--model M``); ``start_timeout``:
        seconds to wait for ``/health``; ``port``: a chosen port (default: a free one)."""
        tmp.mkdir(parents=True, exist_ok=True)
        self.port = free_port() if port is None else port
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp / "collector.log"
        self.store = tmp / "store"

        def limit() -> None:
            if fd_limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "toolwatch",
                    "collector",
                    "--store",
                    str(self.store),
                    "--port",
                    str(self.port),
                    "--compact-interval",
                    "0",
                    *extra,
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
                preexec_fn=limit,
            )
        try:
            why = self._wait_healthy(start_timeout)
        except BaseException:  # Ctrl-C while waiting: still no orphan
            self._end()
            raise
        if why is not None:
            self._end()
            raise CollectorDidNotStart(f"{why}; its log: {self._log_tail()}")

    def _wait_healthy(self, timeout: float) -> str | None:
        """None once ``/health`` answers 200, else why it never did."""
        deadline = time.monotonic() + timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                return f"the collector exited with code {code} before answering /health"
            left = deadline - time.monotonic()
            try:
                if self.get("/health", timeout=max(0.1, min(10, left)))[0] == 200:
                    return None
            except OSError:
                pass
            if time.monotonic() >= deadline:
                return f"the collector did not answer /health within {timeout:g} s"
            time.sleep(0.1)

    def _end(self, grace: float = 10) -> None:
        """SIGTERM, and SIGKILL when it has not exited after ``grace`` seconds."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _log_tail(self) -> str:
        lines = self.log.read_text(errors="replace").strip().splitlines()[-_LOG_LINES:]
        return one_line("\n".join(lines)) if lines else "(empty)"

    def get(self, path: str, timeout: float = 10) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def post(self, body: bytes, *, gz: bool = False, timeout: float = 60) -> tuple[int, str | None]:
        headers = {"Content-Type": "application/json"}
        if gz:
            headers["Content-Encoding"] = "gzip"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("POST", "/v1/traces", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            return response.status, response.getheader("Retry-After")
        finally:
            conn.close()

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self, timeout: float = 120, sig: signal.Signals = signal.SIGTERM) -> str:
        """Send ``sig`` (a service manager's SIGTERM by default), wait for the exit
        (``proc.returncode``), and return the log."""
        self.proc.send_signal(sig)
        self.proc.wait(timeout)
        return self.log.read_text()


def tool_span(session: str, extra: list[dict] | None = None) -> dict:
    now = str(time.time_ns())
    return {
        "traceId": uuid.uuid4().hex,
        "spanId": uuid.uuid4().hex[:16],
        "kind": 3,
        "startTimeUnixNano": now,
        "endTimeUnixNano": now,
        "attributes": [
            {"key": "gen_ai.conversation.id", "value": {"stringValue": session}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "t"}},
            {"key": "toolwatch.tool.call.arguments.size", "value": {"intValue": 1}},
            *(extra or []),
        ],
    }


def request(spans: list[dict]) -> bytes:
    scope = {"scope": {"name": "limits"}, "spans": spans}
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [scope]}]}).encode()
