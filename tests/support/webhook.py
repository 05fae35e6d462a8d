"""A real HTTP webhook receiver for the live-alert tests: scripted answers (a status per POST,
200 once the script is used up), an optional delay, the bodies it took. Support code, not
collected.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar


class Hook(BaseHTTPRequestHandler):
    script: ClassVar[list[int]] = []
    received: ClassVar[list[dict[str, Any]]] = []
    delay = 0.0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(self.delay)
        status = self.script.pop(0) if self.script else 200
        if status == 200:
            self.received.append(json.loads(body))
        self.send_response(status)
        if status == 503:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def webhook_receiver() -> Iterator[tuple[str, type[Hook]]]:
    """A receiver on a free loopback port: (its URL, its handler class to script and read)."""
    handler = type("Hook", (Hook,), {"script": [], "received": [], "delay": 0.0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/alerts", handler
    finally:
        server.shutdown()
        server.server_close()
