"""A ``toolwatch collector`` in a child process, for tests and benchmarks that attack it (memory,
descriptors, slow clients): start it (optionally with a descriptor limit), talk to it, sample its
memory, stop it and read its log. Support code, not collected.
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(
        self, tmp: Path, *, fd_limit: int | None = None, extra: Sequence[str] = ()
    ) -> None:
        """``extra``: more ``toolwatch collector`` arguments (``--model M``)."""
        tmp.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
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
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(self.log.read_text())

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
