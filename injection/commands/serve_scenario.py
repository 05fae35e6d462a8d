"""``toolwatch serve-scenario SCENARIO``: a scenario's tools as a real MCP server.

The server answers every call with the tool's clean response (after validating the arguments
against the declared input schema), so ``toolwatch proxy --upstream-cmd "toolwatch
serve-scenario X"`` reproduces a scenario fully offline.
"""

from __future__ import annotations

import argparse
import logging
import sys

import anyio

from toolwatch.injection.faults.library import find_scenario
from toolwatch.injection.faults.scenario import ScenarioError
from toolwatch.injection.faults.server import scenario_server
from toolwatch.injection.proxy.proxy import serve
from toolwatch.injection.proxy.sdk_logs import content_free_sdk_logs
from toolwatch.usage import port

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
    parser.add_argument("--name", help="server name announced to clients")


def run(args: argparse.Namespace) -> int:
    content_free_sdk_logs()  # the SDK logs a failed call's message: the caller's arguments
    try:
        scenario = find_scenario(args.scenario)
    except ScenarioError as exc:
        print(f"toolwatch serve-scenario: invalid scenario\n{exc}", file=sys.stderr)
        return 2
    server = scenario_server(scenario, name=args.name)
    logger.info(
        "serving scenario %s (%d tools: %s) over %s",
        scenario.id,
        len(scenario.tools),
        ", ".join(t.name for t in scenario.tools),
        args.transport,
    )
    try:
        anyio.run(
            lambda: serve(
                server,
                args.transport,
                host=args.host,
                port=args.port,
                on_listening=lambda url: logger.info("listening on %s", url),
            )
        )
    except OSError as exc:
        print(f"toolwatch serve-scenario: {exc}", file=sys.stderr)
        return 1
    return 0
