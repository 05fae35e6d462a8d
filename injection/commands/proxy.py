"""``toolwatch proxy``: the fault-injection MCP proxy between a client and an upstream server.

    toolwatch proxy --scenario a2-weather-01 --upstream-cmd "python my_server.py"
    toolwatch proxy --scenario s.json --upstream-url http://127.0.0.1:8000/mcp --transport http

Without an upstream, the scenario's own tools are served in process (fully offline). Without a
scenario the proxy is transparent. What is armed is logged at start (stderr); a fault the
upstream's listing says could never act as written (its tool not listed, an A4 rename of an
argument the tool lacks, a silent fault its output schema rejects) is refused, exit 1, as is an
``--injection-log`` it cannot write (before any upstream starts). When it
stops, one line sums up what the armed fault came to: injections made and due calls it could
not act on (a field the real answer lacks), by kind and reason.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import TYPE_CHECKING

from toolwatch.injection.proxy.options import MAX_OPEN, add_session_options
from toolwatch.usage import EXIT_ERROR, EXIT_USAGE, exit_code, non_negative_int, port, positive_int

if TYPE_CHECKING:  # imported when the command runs: `proxy --help` needs no mcp
    from toolwatch.injection.faults.scenario import Scenario
    from toolwatch.injection.proxy.upstream import UpstreamTarget

HELP = "run the MCP fault-injection proxy in front of a server"
logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario",
        metavar="FILE|ID",
        help="scenario file (toolwatch or AgentCheck format) or packaged scenario id; "
        "omit for a transparent proxy",
    )
    upstream = parser.add_mutually_exclusive_group()
    upstream.add_argument(
        "--upstream-cmd", metavar="CMD", help='upstream server command over stdio, e.g. "uvx srv"'
    )
    upstream.add_argument(
        "--upstream-url", metavar="URL", help="upstream streamable-HTTP endpoint (…/mcp)"
    )
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="how clients reach the proxy (default: stdio)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port, default=8000, help="HTTP port (0: any free port; default 8000)"
    )
    add_session_options(parser)
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="seed of probabilistic occurrence rules (default 0)",
    )
    parser.add_argument(
        "--injection-log",
        metavar="FILE",
        help="append one JSON line per injection, and per due call the fault could not act "
        "on, to FILE",
    )
    parser.add_argument(
        "--max-upstream-sessions",
        type=positive_int,
        default=MAX_OPEN,
        metavar="N",
        help="handshake-era clients' own upstream sessions open at once, at most; past it the "
        f"one idle longest is closed (default {MAX_OPEN})",
    )


def run(args: argparse.Namespace) -> int:
    import anyio

    from toolwatch.injection.faults.scenario import ScenarioError, ScenarioNotFound
    from toolwatch.injection.proxy.sdk_logs import content_free_sdk_logs
    from toolwatch.injection.proxy.upstream import UpstreamUnavailable

    _quiet_http_logs()
    content_free_sdk_logs()  # an upstream's bad line: one line naming the error, not its content
    try:
        scenario, target = _resolve(args)
        return anyio.run(_main, args, scenario, target)
    except _Refused as exc:
        print(f"toolwatch proxy: {exc}", file=sys.stderr)
        return exc.code
    except ScenarioNotFound:
        raise  # --scenario names nothing: one line, exit 1 (toolwatch.usage)
    except ScenarioError as exc:  # the upstream's listing says the fault could never act
        print(f"toolwatch proxy: {exc}", file=sys.stderr)  # a line per problem
        return exc.code  # a scenario it cannot use, as every command says: 1
    except (UpstreamUnavailable, OSError) as exc:
        print(f"toolwatch proxy: {exc}", file=sys.stderr)
        return 1


class _Refused(Exception):
    """What the proxy refuses before it starts, said in full (a scenario's problems a line
    each): bad usage, exit 2, unless ``code`` says otherwise (a scenario that does not
    validate: 1, input it cannot use, as ``scenarios validate`` and every command say it)."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def _resolve(args: argparse.Namespace) -> tuple[Scenario | None, UpstreamTarget | None]:
    """The armed scenario (if any) and the upstream (``None``: the scenario's own tools)."""
    from toolwatch.injection.faults.library import find_scenario
    from toolwatch.injection.faults.scenario import ScenarioError, ScenarioNotFound
    from toolwatch.injection.proxy.upstream import upstream_command

    scenario: Scenario | None = None
    if args.scenario:
        try:
            scenario = find_scenario(args.scenario)
        except ScenarioNotFound:
            raise
        except ScenarioError as exc:
            raise _Refused(f"invalid scenario\n{exc}", exc.code) from exc
    if args.injection_log:  # before any upstream starts: not at the first injection
        try:
            with open(args.injection_log, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise _Refused(  # output it cannot use: 1, as every command says it
                f"--injection-log: cannot write {args.injection_log}: {exc.strerror or exc}",
                EXIT_ERROR,
            ) from exc
    if args.upstream_cmd:
        try:
            return scenario, upstream_command(args.upstream_cmd)
        except ValueError as exc:
            raise _Refused(f"--upstream-cmd: {exc}") from exc
    if args.upstream_url:
        return scenario, args.upstream_url
    if scenario is None:
        raise _Refused("give --upstream-cmd or --upstream-url (or a --scenario to serve)")
    logger.info("no upstream given: serving scenario %s's own tools in process", scenario.id)
    return scenario, None


async def _main(
    args: argparse.Namespace, scenario: Scenario | None, target: UpstreamTarget | None
) -> int:
    """Serve until the client leaves or a stop signal; the exit code (130 after Ctrl-C)."""
    from toolwatch.injection.proxy.proxy import run_proxy, serve
    from toolwatch.injection.proxy.stdio_stop import stopped_by_signals

    # over stdio a stop signal stops the upstream processes at once, shutdown included
    # (:mod:`.stdio_stop`); over HTTP the server stops gracefully on it (:mod:`.serving`), and
    # one during the shutdown after it stops (a second Ctrl-C kills) the upstreams
    stopped_by: signal.Signals | None = None
    async with (
        stopped_by_signals() as stop,
        run_proxy(
            scenario,
            target,
            seed=args.seed,
            injection_log=args.injection_log,
            max_client_sessions=args.max_upstream_sessions,
        ) as p,
    ):
        try:
            with stop.around(args.transport):
                stopped_by = await serve(
                    p,
                    args.transport,
                    host=args.host,
                    port=args.port,
                    max_sessions=args.max_sessions,
                    session_idle_timeout=args.session_idle_timeout,
                    on_listening=lambda url: logger.info("fault proxy listening on %s", url),
                )
        finally:  # what the armed fault came to, not applicable included (:mod:`.outcomes`)
            if (summary := p.outcomes.summary()) is not None:
                logger.info("%s", summary)
    stopped_by = stop.signal or stopped_by
    if stopped_by is not None:  # every line of the injection log is out (one write each)
        logger.info("fault proxy stopped by %s", stopped_by.name)
    return exit_code(stopped_by)


def _quiet_http_logs() -> None:
    """The HTTP client logs every request at INFO; the proxy's own lines matter more."""
    for name in ("httpx", "httpx2", "mcp.client.streamable_http"):
        logging.getLogger(name).setLevel(logging.WARNING)
