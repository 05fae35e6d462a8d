"""An HTTP client for the proxy fuzz: one exchange on a fresh connection (read whole, or as
server-sent events until a condition), well-behaved sessions of both eras, and the pool of
victim sessions whose ids the fuzz uses, deletes and resumes. Support code, not collected.
"""

from __future__ import annotations

import http.client
import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from support.proxy_fuzz_cases import BOTH, ENVELOPE, HANDSHAKE, MODERN, encode

SESSION = "Mcp-Session-Id"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    messages: list[Any] = field(default_factory=list)  # JSON-RPC messages read (JSON or SSE)
    left: bool = False  # the client left the stream (``until`` held) before it ended


class Http:
    """Exchanges with ``url`` on fresh connections (a hostile client opens many)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "", parts.port or 80, parts.path

    def connect(self, timeout: float) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def exchange(
        self,
        method: str,
        body: bytes | None,
        headers: dict[str, str],
        *,
        timeout: float = 15,
        until: Callable[[Any], bool] | None = None,
    ) -> Reply:
        """One request and its whole answer (an SSE stream read until it ends, or until a
        message satisfies ``until``, then left). Raises ``TimeoutError`` past ``timeout``
        and ``ConnectionError`` when the connection is dropped."""
        conn = self.connect(timeout)
        deadline = time.monotonic() + timeout
        try:
            conn.request(method, self.path, body=body, headers=headers)
            response = conn.getresponse()
            reply = Reply(response.status, {k.lower(): v for k, v in response.getheaders()})
            if "text/event-stream" not in reply.headers.get("content-type", ""):
                raw = response.read()
                try:
                    reply.messages.append(json.loads(raw)) if raw else None
                except ValueError:
                    reply.messages.append(raw.decode("latin-1"))
                return reply
            while time.monotonic() < deadline:
                line = response.readline()
                if not line:
                    return reply
                if line.startswith(b"data:"):
                    try:
                        reply.messages.append(json.loads(line[5:]))
                    except ValueError:
                        reply.messages.append(line.decode("latin-1"))
                    if until is not None and until(reply.messages[-1]):
                        reply.left = True
                        return reply
            raise TimeoutError(f"{method} answered past {timeout:g} s")
        except TimeoutError as exc:
            raise TimeoutError(str(exc) or "timed out") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            conn.close()


def jsonrpc(method: str, params: dict[str, Any] | None, mid: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if mid is not None:
        message["id"] = mid
    return message


#: A handshake-era client's ``initialize`` (id 1, no capabilities), as a raw probe sends it.
PROBE_INITIALIZE: dict[str, Any] = jsonrpc(
    "initialize",
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
    1,
)


def legacy_headers(session: str | None = None) -> dict[str, str]:
    headers = {"Accept": BOTH, "Content-Type": "application/json"}
    if session is not None:
        headers |= {SESSION: session, "MCP-Protocol-Version": HANDSHAKE}
    return headers


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"Accept": BOTH, "Content-Type": "application/json", "MCP-Protocol-Version": MODERN}
    headers["Mcp-Method"] = method
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def answer_of(reply: Reply, mid: Any) -> Any:
    """The JSON-RPC response to ``mid`` among the messages read, else ``None``."""
    for message in reply.messages:
        if isinstance(message, dict) and message.get("id") == mid and "method" not in message:
            return message
    return None


def text_of(answer: Any) -> str | None:
    """The first text block of a ``tools/call`` result (``None``: no such result)."""
    try:
        return str(answer["result"]["content"][0]["text"])
    except (KeyError, IndexError, TypeError):
        return None


def open_legacy(http_: Http, capabilities: dict[str, Any] | None = None) -> str:
    """A handshake-era session, initialised; its id."""
    params = {
        "protocolVersion": HANDSHAKE,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "fuzz-good", "version": "1"},
    }
    reply = http_.exchange("POST", encode(jsonrpc("initialize", params, 0)), legacy_headers())
    session = reply.headers.get(SESSION.lower())
    if reply.status != 200 or not session or answer_of(reply, 0) is None:
        raise AssertionError(f"initialize answered {reply.status} {reply.messages[:1]!r:.200}")
    done = http_.exchange(
        "POST", encode(jsonrpc("notifications/initialized", None)), legacy_headers(session)
    )
    if done.status != 202:
        raise AssertionError(f"notifications/initialized answered {done.status}")
    return session


def call_legacy(
    http_: Http, session: str, tool: str, arguments: dict[str, Any], mid: int = 1, **kw: Any
) -> Reply:
    params = {"name": tool, "arguments": arguments}
    body = encode(jsonrpc("tools/call", params, mid))
    return http_.exchange("POST", body, legacy_headers(session), **kw)


def call_modern(
    http_: Http,
    tool: str,
    arguments: dict[str, Any],
    *,
    caps: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    **kw: Any,
) -> Reply:
    meta = {**ENVELOPE, "io.modelcontextprotocol/clientCapabilities": caps or {}}
    params = {"name": tool, "arguments": arguments, "_meta": meta, **(extra or {})}
    body = encode(jsonrpc("tools/call", params, 1))
    return http_.exchange("POST", body, modern_headers("tools/call", tool), **kw)


def good_round(http_: Http, modern: bool) -> str | None:
    """A well-behaved client's round trip (a fresh session of its own for the handshake era,
    closed after): ``None`` when its ``echo`` came back right, else what went wrong."""
    token = uuid.uuid4().hex
    try:
        if modern:
            reply = call_modern(http_, "echo", {"text": token})
        else:
            session = open_legacy(http_)
            reply = call_legacy(http_, session, "echo", {"text": token})
            gone = http_.exchange("DELETE", None, legacy_headers(session))
            if gone.status not in (200, 204):
                return f"DELETE of its own session answered {gone.status}"
    except (TimeoutError, ConnectionError, AssertionError) as exc:
        return f"{'modern' if modern else 'legacy'}: {type(exc).__name__}: {exc}"
    got = text_of(answer_of(reply, 1))
    if reply.status != 200 or got != token:
        return f"{'modern' if modern else 'legacy'} echo: {reply.status} {reply.messages!r:.300}"
    return None


class Victims:
    """Handshake-era sessions opened (and used once, so each has its upstream session) for the
    fuzz to send into, delete and resume; deleted ones are kept to be sent to afterwards."""

    def __init__(self, http_: Http, size: int, rng: random.Random) -> None:
        self.http, self.size, self.rng = http_, size, rng
        self.live: list[str] = []
        self.deleted: list[str] = []
        self.opened = 0

    def pick(self) -> str:
        while len(self.live) < self.size:
            session = open_legacy(self.http)
            call_legacy(self.http, session, "echo", {"text": "victim"})
            self.live.append(session)
            self.opened += 1
        return self.rng.choice(self.live)

    def forget(self, session: str) -> None:
        if session in self.live:
            self.live.remove(session)
            self.deleted = [*self.deleted[-15:], session]

    def resolve(self, which: str) -> str | None:
        """The session id a fuzz case names (``none``: no header)."""
        if which == "victim":
            return self.pick()
        if which == "deleted":
            return self.rng.choice(self.deleted) if self.deleted else uuid.uuid4().hex
        if which == "garbage":
            return "zz not a session \t id"
        if which == "long":
            return "s" * 9000
        return None
