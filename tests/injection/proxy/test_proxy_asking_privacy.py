"""Privacy of what the proxy relays between a server and its client besides calls: the server's
``sampling/createMessage``, ``elicitation/create`` and ``roots/list`` to a handshake-era client
on its own upstream session (:mod:`.sessions`) and the client's answers; a 2026-07-28 client's
input rounds (``inputResponses``, ``requestState``: :mod:`.rounds`) and its log lines
(:mod:`.log_lines`). A canary in every argument, sampling message and model answer, elicitation
message and content, root URI (a user's paths: content, unlike a tool name), log line and
request state, and a client answer that is no valid result keyed by it. The canary reaches the
client and the server (positive control) and is in no form in the log (every logger at DEBUG),
the spans the instrumented client exports, the injection log, or the proxy's own error texts.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from support.canary import assert_absent, make_canary
from support.proxy_process import ProxyProcess
from support.workbench import scenario
from toolwatch.injection.proxy.proxy import run_proxy
from toolwatch.instrumentation import model_response

pytestmark = pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")

#: A stdio upstream that asks its client for everything, the canary by environment (the proxy
#: logs the upstream's command line); what it got back is its tools' results.
UPSTREAM = textwrap.dedent(
    """
    import logging, os, warnings
    from typing import Annotated, Any

    import mcp_types as types
    from mcp import MCPError
    from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
    from pydantic import BaseModel

    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    C = os.environ["TW_CANARY"]
    server = MCPServer("asking")


    class Who(BaseModel):
        name: str


    def ask() -> Elicit[Who]:
        return Elicit(f"Who are you, {C}?", Who)


    def sample() -> Sample:
        text = types.TextContent(type="text", text=f"summarise {C}")
        return Sample([types.SamplingMessage(role="user", content=text)], max_tokens=7)


    def roots() -> ListRoots:
        return ListRoots()


    @server.tool()
    async def get_doc(q: str, who: Annotated[Who, Resolve(ask)]) -> str:
        return f"doc {q} for {who.name}"


    @server.tool()
    async def think(q: str, r: Annotated[types.CreateMessageResult, Resolve(sample)]) -> str:
        return f"{q} {r.model}: {r.content.text}"


    @server.tool()
    async def where(q: str, r: Annotated[types.ListRootsResult, Resolve(roots)]) -> str:
        return q + " " + " ".join(str(root.uri) for root in r.roots)


    @server.tool()
    async def chatty(q: str, ctx: Context) -> str:
        for level in ("debug", "info", "error"):
            await ctx.log(level, {"line": C, "q": q}, logger_name=C)
        return q


    @server.tool()
    async def ask_raw(q: str, ctx: Context) -> str:
        try:  # the proxy's error for an invalid answer comes back here
            answer = await ctx.elicit(f"raw {C}", Who)
        except MCPError as exc:
            return f"refused: {exc.error.code} {exc.error.message} {exc.error.data}"
        return f"answered {answer.action}"


    @server.tool()
    async def state(q: str, ctx: Context) -> Any:
        if not ctx.input_responses:
            form = types.ElicitRequestFormParams(
                message=f"state {C}", requested_schema={"type": "object", "properties": {}}
            )
            request = types.ElicitRequest(params=form)
            return types.InputRequiredResult(
                input_requests={"who": request}, request_state=f"{C}|{q}"
            )
        answer = ctx.input_responses["who"]
        return f"state {ctx.request_state} {answer.content}"


    server.run("stdio")
    """
)


async def _client(target: Any, canary: str, *, legacy: bool) -> list[str]:
    """Everything the client sees (results, requests and lines), every answer the canary."""
    seen: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        seen.append(str(params.messages[0].content))
        text = types.TextContent(type="text", text=f"answer {canary}")
        return types.CreateMessageResult(role="assistant", content=text, model=f"m-{canary}")

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> Any:
        seen.append(params.message)
        return types.ElicitResult(action="accept", content={"name": canary})

    async def list_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///home/{canary}/proj")])

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        seen.append(f"{params.logger} {params.data}")

    async with Client(
        target,
        mode="legacy" if legacy else "2026-07-28",
        log_level=None if legacy else "debug",
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        list_roots_callback=list_roots,
        logging_callback=log,
    ) as client:
        tools = ["get_doc", "think", "where", "chatty", "ask_raw"]
        with model_response("resp-asking", conversation_id=f"conv-{legacy}"):
            for tool in [*tools, *([] if legacy else ["state"])]:
                try:
                    result = await client.call_tool(tool, {"q": canary})
                    seen += [getattr(b, "text", "") for b in result.content]
                except MCPError as exc:
                    seen.append(f"{tool} error {exc.error.message}")
    return seen


def test_no_canary_in_what_the_proxy_relays_between_server_and_client(
    tmp_path: Path, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    canary = make_canary()
    script = tmp_path / "asking.py"
    script.write_text(UPSTREAM)
    upstream = StdioServerParameters(
        command=sys.executable, args=[str(script)], env={"TW_CANARY": canary}
    )
    log = tmp_path / "injections.jsonl"

    async def main() -> tuple[list[str], list[str], Any]:
        c1 = scenario("C1", occurrence={"every": 1})  # on get_doc: after its elicitation round
        async with run_proxy(c1, upstream, injection_log=log) as proxy:
            legacy = await _client(proxy, canary, legacy=True)
            modern = await _client(proxy, canary, legacy=False)
            return legacy, modern, proxy

    with caplog.at_level(logging.DEBUG):
        legacy, modern, proxy = anyio.run(main)
    for seen in (legacy, modern):  # positive control: the canary went both ways
        said = "\n".join(seen)
        assert f"Who are you, {canary}?" in said and f"summarise {canary}" in said
        assert f"doc {canary} for {canary}" in said and f"m-{canary}: answer {canary}" in said
        assert f"file:///home/{canary}/proj" in said
        assert said.count(f"'line': '{canary}'") == 3  # debug, info, error
    assert "answered accept" in legacy  # ask_raw: a server-to-client request (handshake era)
    answered = f"state {canary}|{canary} {{'name': '{canary}'}}"
    assert answered in modern  # the requestState and the input responses went back up
    assert proxy.sessions.opened == 1  # the legacy client's own session
    assert_absent(caplog.text, canary, "the log")
    spans = exporter.get_finished_spans()
    assert sum(s.name.startswith("tools/call ") for s in spans) == 11  # 5 legacy, 6 modern
    assert_absent(
        repr([(s.name, dict(s.attributes or {}), s.status) for s in spans]), canary, "spans"
    )
    assert_absent(repr([s.to_json() for s in spans]), canary, "the spans as JSON")
    assert log.read_text().count("\n") >= 2  # the fault fired for both clients
    assert_absent(log.read_bytes(), canary, "the injection log")


def _rpc(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _next(proc: subprocess.Popen[bytes], key: str) -> dict[str, Any]:
    """The next message from the proxy that has ``key`` (notifications passed over)."""
    assert proc.stdout is not None
    while line := proc.stdout.readline():
        message = json.loads(line)
        if key in message:
            return message  # type: ignore[no-any-return]
    raise AssertionError("the proxy closed its stdout")


def test_an_invalid_answer_of_the_client_is_refused_without_its_keys(tmp_path: Path) -> None:
    """``toolwatch -v proxy`` over stdio, a hand-written handshake-era client answering the
    server's elicitation with content no ElicitResult holds, keyed by the canary: the proxy
    answers the server with ``-32603`` naming the fields — not the keys, which are the user's
    (pydantic puts a dict's keys in its error locations) — and its stderr is clean."""
    canary = make_canary()
    script = tmp_path / "asking.py"
    script.write_text(UPSTREAM)
    err = tmp_path / "proxy.log"
    cmd = [sys.executable, "-m", "toolwatch", "-v", "proxy"]
    cmd += ["--upstream-cmd", f"{sys.executable} {script}"]
    env = {**os.environ, "TW_CANARY": canary}
    with open(err, "wb") as fh:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fh, env=env
        )
    try:
        hello = {"name": "raw", "version": "1"}
        caps = {"elicitation": {"form": {}}}
        params = {"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": hello}
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        assert _next(proc, "result")["id"] == 1
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "ask_raw", "arguments": {"q": canary}}
        _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        asked = _next(proc, "method")
        assert asked["method"] == "elicitation/create"
        assert canary in asked["params"]["message"]  # positive control: the server's text
        content = {canary: {canary: [canary]}, "name": {"x": canary}}
        answer = {"action": "accept", "content": content}
        _rpc(proc, {"jsonrpc": "2.0", "id": asked["id"], "result": answer})
        result = _next(proc, "result")
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    said = result["result"]["content"][0]["text"]
    assert said.startswith("refused: -32603 toolwatch proxy: the client answered")
    assert "invalid result (fields: content.*" in said
    assert_absent(said, canary, "the proxy's error to the server")
    assert_absent(err.read_bytes(), canary, "the proxy's stderr")


def test_no_canary_on_the_http_proxys_stderr_at_debug(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    """The same clients over streamable HTTP to ``toolwatch -v proxy --transport http`` (every
    logger at DEBUG, as a user runs it): the server's requests and the log lines ride SSE
    frames, which the SDK and its SSE library log at DEBUG; none of it is on stderr."""
    canary = make_canary()
    script = tmp_path / "asking.py"
    script.write_text(UPSTREAM)
    env = {**os.environ, "TW_CANARY": canary}
    proxy = ProxyProcess(tmp_path, "http", upstream=script, verbose=True, env=env)
    try:

        async def main() -> tuple[list[str], list[str]]:
            legacy = await _client(proxy.url, canary, legacy=True)
            return legacy, await _client(proxy.url, canary, legacy=False)

        legacy, modern = anyio.run(main)
    finally:
        log = proxy.stop(30).encode()
    said = "\n".join(legacy + modern)
    assert said.count(f"file:///home/{canary}/proj") == 2 and "answered accept" in legacy
    assert f"state {canary}|{canary} {{'name': '{canary}'}}" in modern
    assert said.count(f"'line': '{canary}'") == 6  # each client's three lines
    assert b"DEBUG" in log and b"sse_starlette" in log  # -v: the SSE frames were logged
    assert_absent(log, canary, "the HTTP proxy's stderr")
    spans = exporter.get_finished_spans()
    assert_absent(repr([s.to_json() for s in spans]), canary, "the spans as JSON")
