"""Records the OTLP requests OpenLLMetry's MCP instrumentation sends (see README.md).

Run in a venv of its own (the package needs mcp 1.x; toolwatch's own venv has mcp 2.x):
``python record.py OUT_DIR``. A real ``mcp`` client calls a small FastMCP server over stdio and
in memory, instrumented by ``opentelemetry-instrumentation-mcp``, exported by the standard
``opentelemetry-exporter-otlp-proto-http`` to a loopback sink that writes each request body as
received. The only argument text is :data:`PLACEHOLDER` (the tests put a fresh canary there).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import anyio

PLACEHOLDER = "@@CANARY@@"
HERE = Path(__file__).resolve().parent
SERVER = """
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("demo")


@mcp.tool()
def echo(text: str) -> str:
    '''Echo the text back.'''
    return "ECHO:" + text


@mcp.tool()
def fail(text: str) -> str:
    '''Always fails (a tool error naming the text).'''
    raise ValueError("boom " + text)


if __name__ == "__main__":
    mcp.run()
"""


def sink(out: Path, name: str) -> tuple[HTTPServer, list[Path]]:
    """A loopback OTLP/HTTP receiver writing each body to ``out/<name>-<n>.pb``."""
    written: list[Path] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            path = out / f"{name}-{len(written)}.pb"
            path.write_bytes(body)
            written.append(path)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, written


async def calls(session) -> None:  # type: ignore[no-untyped-def]
    await session.initialize()
    await session.list_tools()
    await session.call_tool("echo", {"text": PLACEHOLDER})
    await session.call_tool("fail", {"text": PLACEHOLDER})


def record(out: Path, transport: str) -> None:
    """One transport's run, in a process of its own (the instrumentation patches globally)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.mcp import McpInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    http, written = sink(out, transport)
    resource = Resource.create({"service.name": f"openllmetry-{transport}"})
    provider = TracerProvider(resource=resource)
    endpoint = f"http://127.0.0.1:{http.server_port}/v1/traces"
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    McpInstrumentor().instrument(tracer_provider=provider)
    anyio.run(run, transport, out / "_server.py")
    provider.shutdown()
    http.shutdown()
    print(transport, [p.name for p in written])


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "_server.py").write_text(SERVER)
    try:
        for transport in ("stdio", "memory"):
            command = [sys.executable, __file__, str(out), transport]
            subprocess.run(command, check=True, env={**os.environ, "PYTHONPATH": str(out)})
    finally:
        (out / "_server.py").unlink()


async def run(transport: str, server_py: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    if transport == "stdio":
        params = StdioServerParameters(command=sys.executable, args=[str(server_py)])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await calls(s)
    else:
        from _server import mcp  # type: ignore[import-not-found]
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(mcp._mcp_server) as s:
            await calls(s)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        record(Path(sys.argv[1]), sys.argv[2])
    else:
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
