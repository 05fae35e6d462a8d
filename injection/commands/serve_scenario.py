"""``toolwatch serve-scenario SCENARIO``: a scenario's tools as a real MCP server.

The server answers every call with the tool's clean response (after validating the arguments
against the declared input schema), so ``toolwatch proxy --upstream-cmd "toolwatch
serve-scenario X"`` reproduces a scenario fully offline.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import TYPE_CHECKING

from toolwatch.injection.proxy.options import add_session_options
from toolwatch.usage import exit_code, port
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `serve-scenario --help` needs no mcp
    from mcp.server.mcpserver import MCPServer

HELP = "serve a scenario's tools as an MCP server"
logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", help="scenario file or packaged id")
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio: speak MCP on stdin/stdout (for a client that starts the server, e.g. "
        "`toolwatch proxy --upstream-cmd`); http: streamable HTTP on --host/--port "
        "(default stdio)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port, default=8000, help="HTTP port (0: any free port; default 8000)"
    )
    add_session_options(parser)
    parser.add_argument("--name", help="server name announced to clients")


def run(args: argparse.Namespace) -> int:
    import anyio

    from toolwatch.injection.faults.library import find_scenario
    from toolwatch.injection.faults.scenario import ScenarioError, ScenarioNotFound
    from toolwatch.injection.faults.server import scenario_server
    from toolwatch.injection.proxy.sdk_logs import content_free_sdk_logs

    content_free_sdk_logs()  # the SDK logs a failed call's message: the caller's arguments
    try:
        scenario = find_scenario(args.scenario)
    except ScenarioNotFound:
        raise  # nothing to serve: one line, exit 1 (toolwatch.usage), not an invalid scenario
    except ScenarioError as exc:
        print(f"toolwatch serve-scenario: invalid scenario\n{exc}", file=sys.stderr)
        return exc.code  # input it cannot use: 1, as `scenarios validate` and every command
    server = scenario_server(scenario, name=args.name)
    logger.info(
        "serving scenario %s (%s: %s) over %s",
        scenario.id,
        counted(len(scenario.tools), "tool"),
        ", ".join(t.name for t in scenario.tools),
        args.transport,
    )
    try:
        return anyio.run(_serve, server, args)
    except OSError as exc:
        print(f"toolwatch serve-scenario: {exc}", file=sys.stderr)
        return 1


async def _serve(server: MCPServer, args: argparse.Namespace) -> int:
    """Serve until the client leaves or a stop signal; the exit code (130 after Ctrl-C). Over
    stdio SIGTERM and Ctrl-C stop it gracefully too (:mod:`.stdio_stop`; SIGTERM killed it, exit
    -15, with the SDK's session torn down mid-answer), as over HTTP (:mod:`.serving`); over
    HTTP the handler is held for the whole run too, so a signal during the shutdown after
    uvicorn stopped serving (its handlers gone) no longer meets the default one (exit -15)."""
    from toolwatch.injection.proxy.proxy import serve
    from toolwatch.injection.proxy.stdio_stop import stopped_by_signals

    stopped_by: signal.Signals | None = None
    async with stopped_by_signals(upstreams=False) as stop:
        with stop.around(args.transport):
            stopped_by = await serve(
                server,
                args.transport,
                host=args.host,
                port=args.port,
                max_sessions=args.max_sessions,
                session_idle_timeout=args.session_idle_timeout,
                on_listening=lambda url: logger.info("listening on %s", url),
            )
    stopped_by = stop.signal or stopped_by
    if stopped_by is not None:
        logger.info("scenario server stopped by %s", stopped_by.name)
    return exit_code(stopped_by)
