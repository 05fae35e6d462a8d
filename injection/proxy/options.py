"""The serving commands' options whose defaults belong to the serving code (the session idle
timeout, the cap on handshake-era clients' own upstream sessions), apart from it (mcp, uvicorn):
``toolwatch proxy|serve-scenario --help`` builds them without the SDK. Standard library only
(and :mod:`toolwatch.usage`)."""

from __future__ import annotations

import argparse
from typing import Final

from toolwatch.usage import positive_float, positive_int

#: The SDK's own session idle timeout (``mcp.server.streamable_http_manager``'s
#: ``DEFAULT_SESSION_IDLE_TIMEOUT``, 30 min; a test holds the two equal), the option's default.
SESSION_IDLE_TIMEOUT: Final = 1800
#: The SDK's own cap on sessions open at once (``DEFAULT_MAX_SESSIONS``; a test holds the two
#: equal), the ``--max-sessions`` default.
MAX_SESSIONS: Final = 10_000
#: Handshake-era clients' own upstream sessions open at once, at most (by default).
MAX_OPEN: Final = 32


def add_session_options(parser: argparse.ArgumentParser) -> None:
    """``--max-sessions`` and ``--session-idle-timeout``, for a command that serves HTTP: how
    many sessions are open at once, at most (the SDK's 10,000 had no flag), and how long a
    session no request is in flight on stays open, which also sets the ``Retry-After`` a full
    server sends (:mod:`.session_slots`); the SDK's 30 min was fixed before."""
    parser.add_argument(
        "--max-sessions",
        type=positive_int,
        default=MAX_SESSIONS,
        metavar="N",
        help="over HTTP, clients' sessions open at once, at most; past it a new one is refused "
        f"with 503 and Retry-After (default {MAX_SESSIONS})",
    )
    default = SESSION_IDLE_TIMEOUT
    parser.add_argument(
        "--session-idle-timeout",
        type=positive_float,
        default=default,
        metavar="SECONDS",
        help="over HTTP, close a client's session after this many seconds with no request on "
        f"it; a full server's 503 says when the oldest idle one expires (default {default:g}: "
        f"{default / 60:g} min)",
    )
