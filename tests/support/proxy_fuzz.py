"""Property-based fuzz of a live ``toolwatch proxy`` (hypothesis), over streamable HTTP and
stdio, in front of a real MCP server (:mod:`support.proxy_fuzz_upstream`).

Each example is one hostile action (:mod:`support.proxy_fuzz_cases`); every ``every`` actions a
well-behaved client makes a round trip of its own (both eras in turn) and checks its answer. The
contract checked: no 5xx but a documented 503, no connection dropped by the proxy, every
well-behaved round right, the proxy alive; the caller checks its log (no traceback) and memory.

Used by ``tests/injection/proxy/test_fuzz.py`` (a bounded run in CI) and
``benchmarks/fuzz_proxy.py`` (thousands of requests).
"""

from __future__ import annotations

import collections
import json
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.proxy_fuzz_cases import (
    ENVELOPE,
    Abandon,
    AnswerAsk,
    Delete,
    DeleteMidCall,
    Get,
    Headers,
    LeaveMidCall,
    Post,
    RetryAsk,
    action,
    body,
    encode,
)
from support.proxy_fuzz_http import (
    SESSION,
    Http,
    Reply,
    Victims,
    answer_of,
    call_legacy,
    call_modern,
    good_round,
    jsonrpc,
    legacy_headers,
    open_legacy,
    text_of,
)
from support.proxy_process import ProxyProcess


@dataclass
class FuzzResult:
    actions: collections.Counter[str] = field(default_factory=collections.Counter)
    statuses: collections.Counter[int] = field(default_factory=collections.Counter)
    bad: list[str] = field(default_factory=list)  # 5xx but 503; a dropped connection
    timeouts: collections.Counter[str] = field(default_factory=collections.Counter)
    good: int = 0
    good_failed: list[str] = field(default_factory=list)
    memory: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def examples(self) -> int:
        return sum(self.actions.values())


def _settings(examples: int) -> Callable[[Any], Any]:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )


def _ascii(value: str) -> bool:
    return value.isascii() and value.isprintable()


def _post_headers(case: Headers, data: bytes, victims: Victims) -> dict[str, str]:
    headers = {"Accept": case.accept, "Content-Type": case.content_type}
    headers = {k: v for k, v in headers.items() if v}
    if case.version is not None:
        headers["MCP-Protocol-Version"] = case.version
    session = victims.resolve(case.session)
    if session is not None:
        headers[SESSION] = session
    if case.method_header == "garbage":
        headers["Mcp-Method"] = "no/such"
    elif case.method_header == "match":
        try:
            message = json.loads(data)
        except (ValueError, RecursionError):  # a body nested 3,000 deep
            message = None
        method = message.get("method") if isinstance(message, dict) else None
        if isinstance(method, str) and _ascii(method):
            headers["Mcp-Method"] = method
            params = message.get("params") if isinstance(message, dict) else None
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str) and _ascii(name) and name:
                headers["Mcp-Name"] = name
    return headers


def _server_request(message: Any) -> bool:
    return isinstance(message, dict) and "method" in message and "id" in message


class HttpFuzz:
    """The actions against one proxy, and what came back."""

    def __init__(self, proxy: ProxyProcess, result: FuzzResult, seed: int) -> None:
        self.proxy, self.result = proxy, result
        self.http = Http(proxy.url)
        self.rng = random.Random(seed)
        self.victims = Victims(self.http, 4, self.rng)

    def note(self, what: str, status: int, reply: Reply | None = None) -> None:
        self.result.statuses[status] += 1
        if status >= 500 and status != 503:
            shown = reply.messages[:1] if reply else ""
            self.result.bad.append(f"{what}: {status} {shown!r:.200}")

    def guarded(self, what: str, step: Callable[[], None]) -> None:
        try:
            step()
        except TimeoutError:
            self.result.timeouts[what] += 1
        except ConnectionError as exc:
            self.result.bad.append(f"{what}: connection dropped ({exc})")

    def run(self, case: Any) -> None:
        kind = type(case).__name__
        self.result.actions[kind] += 1
        self.guarded(kind, lambda: getattr(self, f"_{kind}")(case))

    def _Post(self, case: Post) -> None:
        headers = _post_headers(case.headers, case.body, self.victims)
        reply = self.http.exchange("POST", case.body, headers, timeout=8, until=_server_request)
        self.note("POST", reply.status, reply)

    def _Get(self, case: Get) -> None:
        headers = {"Accept": case.headers.accept or "text/event-stream"}
        session = self.victims.resolve(case.headers.session)
        if session is not None:
            headers[SESSION] = session
        if case.headers.version is not None:
            headers["MCP-Protocol-Version"] = case.headers.version
        try:  # a stream left open: read for a moment, then leave
            reply = self.http.exchange("GET", None, headers, timeout=0.5)
            self.note("GET", reply.status, reply)
        except TimeoutError:
            self.result.statuses[200] += 1

    def _Delete(self, case: Delete) -> None:
        session = self.victims.resolve(case.session)
        headers = legacy_headers(session) if session else legacy_headers()
        reply = self.http.exchange("DELETE", None, headers)
        self.note("DELETE", reply.status, reply)
        if session is not None and reply.status in (200, 204):
            self.victims.forget(session)

    def _LeaveMidCall(self, case: LeaveMidCall) -> None:
        if case.modern:
            slow = {"seconds": case.seconds, "text": "x"}
            params = {"name": "slow", "arguments": slow, "_meta": ENVELOPE}
            data = encode(jsonrpc("tools/call", params, 7))
            headers = {**legacy_headers(), "MCP-Protocol-Version": "2026-07-28"}
            headers |= {"Mcp-Method": "tools/call", "Mcp-Name": "slow"}
        else:
            session = self.victims.pick()
            slow = {"seconds": case.seconds, "text": "x"}
            data = encode(jsonrpc("tools/call", {"name": "slow", "arguments": slow}, 7))
            headers = legacy_headers(session)
        conn = self.http.connect(8)
        try:
            conn.request("POST", self.http.path, body=data, headers=headers)
            if case.after_headers:
                self.note("POST left mid-call", conn.getresponse().status)
        finally:
            conn.close()

    def _DeleteMidCall(self, case: DeleteMidCall) -> None:
        session = self.victims.pick()
        answers: list[Any] = []

        def call() -> None:
            try:
                slow = {"seconds": case.seconds, "text": "x"}
                answers.append(call_legacy(self.http, session, "slow", slow))
            except (TimeoutError, ConnectionError) as exc:
                answers.append(exc)

        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        time.sleep(0.3)
        reply = self.http.exchange("DELETE", None, legacy_headers(session))
        self.note("DELETE mid-call", reply.status, reply)
        self.victims.forget(session)
        worker.join(15)
        if worker.is_alive() or isinstance(answers[0], TimeoutError):
            self.result.timeouts["call whose session was deleted"] += 1
        elif isinstance(answers[0], Reply):
            self.note("call whose session was deleted", answers[0].status, answers[0])

    def _Abandon(self, case: Abandon) -> None:
        session = open_legacy(self.http)
        reply = call_legacy(self.http, session, "echo", {"text": case.text})
        self.note("abandoned client's call", reply.status, reply)

    def _AnswerAsk(self, case: AnswerAsk) -> None:
        session = open_legacy(self.http, {"elicitation": {}})
        try:
            asked = call_legacy(
                self.http, session, "ask", {}, mid=5, timeout=10, until=_server_request
            )
            request = next((m for m in asked.messages if _server_request(m)), None)
            if request is None:
                self.result.bad.append(f"ask: no elicitation came ({asked.messages!r:.200})")
                return
            answered = {"jsonrpc": "2.0", "id": request["id"], **case.answer}
            if case.raw:  # an answer to a request never sent
                answered["id"] = [request["id"]] if isinstance(request["id"], int) else 10**12
            reply = self.http.exchange("POST", encode(answered), legacy_headers(session))
            self.note("answer to the server", reply.status, reply)
        finally:
            reply = self.http.exchange("DELETE", None, legacy_headers(session))
            self.note("DELETE", reply.status, reply)

    def _RetryAsk(self, case: RetryAsk) -> None:
        caps: dict[str, Any] = {"elicitation": {}}
        first = call_modern(self.http, "ask", {}, caps=caps)
        self.note("modern ask", first.status, first)
        state = (answer_of(first, 1) or {}).get("result", {}).get("requestState")
        extra = {"requestState": state, **{k: v for k, v in case.params.items() if k != "name"}}
        arguments = extra.pop("arguments", {})
        reply = call_modern(self.http, "ask", arguments, caps=caps, extra=extra)
        self.note("modern ask retried", reply.status, reply)

    def good(self, modern: bool) -> None:
        problem = good_round(self.http, modern)
        self.result.good += 1
        if problem is not None:
            self.result.good_failed.append(problem)


def run_http(proxy: ProxyProcess, examples: int, *, every: int = 20, seed: int = 32) -> FuzzResult:
    """``examples`` hypothesis-generated actions against ``proxy`` (HTTP), a well-behaved round
    every ``every`` of them, memory sampled every ``10 * every``."""
    result = FuzzResult()
    fuzz = HttpFuzz(proxy, result, seed)
    for modern in (False, True):
        fuzz.good(modern)
    result.memory.append(proxy.memory_mib())

    @_settings(examples)
    @given(action)
    def one(case: Any) -> None:
        fuzz.run(case)
        n = result.examples
        if n % every == 0:
            fuzz.good(modern=(n // every) % 2 == 1)
        if n % (every * 10) == 0:
            result.memory.append(proxy.memory_mib())

    random.seed(seed)
    began = time.perf_counter()
    one()
    result.seconds = time.perf_counter() - began
    for modern in (False, True):
        fuzz.good(modern)
    result.memory.append(proxy.memory_mib())
    return result


class _StdioPeer:
    """The client end of a stdio proxy: lines written, answers to ``good-*`` ids collected,
    every line the proxy writes checked to be one JSON object."""

    def __init__(self, proxy: ProxyProcess) -> None:
        assert proxy.proc.stdin is not None and proxy.proc.stdout is not None
        self.stdin, self.stdout = proxy.proc.stdin, proxy.proc.stdout
        self.answers: queue.Queue[Any] = queue.Queue()
        self.not_json = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                self.not_json += 1
                continue
            if not isinstance(message, dict):
                self.not_json += 1
            elif str(message.get("id", "")).startswith("good-") and "method" not in message:
                self.answers.put(message)

    def send(self, data: bytes) -> None:
        self.stdin.write(data.replace(b"\n", b" ").replace(b"\r", b" ") + b"\n")
        self.stdin.flush()

    def ask(self, message: dict[str, Any], timeout: float = 15) -> Any:
        self.send(encode(message))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                answer = self.answers.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if answer.get("id") == message["id"]:
                return answer
        return None


def run_stdio(
    proxy: ProxyProcess, examples: int, *, modern: bool, every: int = 20, seed: int = 32
) -> tuple[FuzzResult, int]:
    """``examples`` hypothesis-generated lines into a stdio proxy (after an ``initialize`` in
    the handshake era), a well-behaved ``echo`` every ``every``; then a slow call and its
    client gone mid-call (stdin closed). Returns the result and the lines that were no JSON."""
    result = FuzzResult()
    peer = _StdioPeer(proxy)
    counter = iter(range(10**9))

    def good() -> None:
        token, mid = f"t{next(counter)}", f"good-{next(counter)}"
        params: dict[str, Any] = {"name": "echo", "arguments": {"text": token}}
        if modern:
            params["_meta"] = ENVELOPE
        answer = peer.ask(jsonrpc("tools/call", params, mid))
        result.good += 1
        if text_of(answer) != token:
            result.good_failed.append(f"stdio echo: {answer!r:.300}")

    if not modern:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "f", "version": "1"},
        }
        if peer.ask(jsonrpc("initialize", init, "good-init")) is None:
            result.good_failed.append("stdio initialize unanswered")
        peer.send(encode(jsonrpc("notifications/initialized", None)))
    good()
    result.memory.append(proxy.memory_mib())

    @_settings(examples)
    @given(body | st.binary(max_size=80))
    def one(line: bytes) -> None:
        result.actions["line"] += 1
        peer.send(line)
        if result.examples % every == 0:
            good()
        if result.examples % (every * 10) == 0:
            result.memory.append(proxy.memory_mib())

    random.seed(seed)
    began = time.perf_counter()
    one()
    result.seconds = time.perf_counter() - began
    good()
    result.memory.append(proxy.memory_mib())
    slow = {"name": "slow", "arguments": {"seconds": 2, "text": "x"}}
    peer.send(encode(jsonrpc("tools/call", slow | ({"_meta": ENVELOPE} if modern else {}), "left")))
    return result, peer.not_json


__all__ = ["FuzzResult", "run_http", "run_stdio"]
