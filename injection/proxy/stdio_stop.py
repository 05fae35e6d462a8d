"""A proxy stopped by a signal (SIGTERM, SIGINT) stops its upstream processes at once.

The upstream commands the proxy starts run in process groups of their own (the SDK starts
each with ``start_new_session``), so a signal to the proxy never reaches them, and the SDK
stops one only when its connection closes: stdin closed, up to 2 s for the server to exit,
then SIGTERM to its group. Over stdio the proxy died of SIGTERM at once, closing nothing; and
an mcp client that leaves closes the proxy's stdin and sends it SIGTERM 2 s later, just when the
proxy, still waiting out those 2 s for its own upstream, would have stopped it: a Node
server-everything was sometimes left running.

:func:`stopped_by_signals` puts a handler in place for the whole run, shutdown included: the
signal sends SIGTERM to every upstream group still running (the SDK's close then finds it gone,
or kills it 2 s later), stops serving, and the proxy's own shutdown runs (upstream sessions
closed, the run summary said) and the command exits as over HTTP (:mod:`.serving`): 0 after
SIGTERM, 130 after Ctrl-C (:func:`toolwatch.usage.exit_code`). A second signal kills the
groups still there. ``toolwatch serve-scenario`` (no upstreams) is stopped the same way, on
either transport: over stdio it died of SIGTERM, exit -15, and over HTTP so did a SIGTERM during
its shutdown (below), the last line unwritten.

Over HTTP uvicorn's own handlers stop serving gracefully, but only while it serves: a signal
during the proxy's shutdown afterwards (upstream sessions closing, 2 s each for one that lingers)
met the default handler, exit -15, upstreams left and the run summary unwritten. The proxy holds
this handler around the whole HTTP run too, :meth:`Stop.deferring` while uvicorn serves (a
signal is only noted while uvicorn's handler is in place; :meth:`Stop.around` puts either
transport's shape around serving): a SIGTERM during the shutdown stops the upstream groups and
the shutdown finishes; a second Ctrl-C (SIGINT after the one that stopped serving), or any
signal after that, kills them, so it ends at once; the exit code is the first signal's, as over
stdio.

The upstream processes are known by the SDK's spawn function (private: mcp's public API hands
a stdio client's process to no one), wrapped here to note each process it starts inside
:func:`noting_upstreams`; an SDK without it is said in a warning when a run starts, and
``test_stdio_stop.py`` fails naming it.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import signal
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import mcp.client.stdio as sdk_stdio

from toolwatch.words import counted

logger = logging.getLogger(__name__)

#: What stops a stdio proxy (a client's or service manager's stop, Ctrl-C).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_noting: ContextVar[bool] = ContextVar("toolwatch_noting_upstreams", default=False)
#: Upstream processes started in this process (``anyio.abc.Process``), while they live.
_UPSTREAMS: weakref.WeakSet[Any] = weakref.WeakSet()


#: The SDK's spawn function, wrapped to note each upstream process: mcp's public API gives a
#: stdio client's process to no one (``stdio_client`` takes parameters only; checked on 2.3.0).
SPAWN_FUNCTION: Final = "_create_platform_compatible_process"


def _wrap_spawn(module: Any = sdk_stdio) -> bool:
    """Note each process ``module``'s stdio client starts while :func:`noting_upstreams` is
    on; whether it could (an SDK without :data:`SPAWN_FUNCTION` gives no hold on them)."""
    spawn = getattr(module, SPAWN_FUNCTION, None)
    if spawn is None or not callable(spawn):
        return False
    if getattr(spawn, "toolwatch_notes", False):
        return True

    async def noted(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        if _noting.get():
            _UPSTREAMS.add(process)
        return process

    noted.toolwatch_notes = True  # type: ignore[attr-defined]
    setattr(module, SPAWN_FUNCTION, noted)
    return True


#: Whether a stop signal can reach the upstream processes (else they stop with their
#: connections, the SDK's close: up to 2 s each, and only if the proxy lives that long).
SPAWN_NOTED = _wrap_spawn()


def _say_unreachable() -> None:
    """Say once a run that a stop signal cannot reach the upstream processes (never silently:
    a new SDK that spawns otherwise would leave them running again)."""
    if not SPAWN_NOTED:
        logger.warning(
            "mcp %s's stdio client does not spawn through mcp.client.stdio.%s: a stop signal "
            "cannot stop the upstream processes at once; each stops when its connection closes",
            _sdk_version(),
            SPAWN_FUNCTION,
        )


def _sdk_version() -> str:
    try:
        return importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return "(unknown version)"


@contextmanager
def noting_upstreams() -> Iterator[None]:
    """Within it, a stdio client's server process is an upstream :func:`signal_upstreams`
    reaches."""
    token = _noting.set(True)
    try:
        yield
    finally:
        _noting.reset(token)


def signal_upstreams(sig: signal.Signals = signal.SIGTERM) -> int:
    """Send ``sig`` to the process group of every upstream still running; how many."""
    sent = 0
    for process in list(_UPSTREAMS):
        if process.returncode is not None:
            continue
        try:
            os.killpg(process.pid, sig)  # its group: the SDK started it as a session leader
        except (ProcessLookupError, PermissionError):
            continue
        sent += 1
    return sent


@dataclass
class Stop:
    """The scope a stop signal cancels (put it around serving), and the first such signal."""

    serving: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    signal: signal.Signals | None = None
    #: a stop signal is only noted (:meth:`deferring`)
    deferred: bool = False
    #: a stop signal came while deferred (the one that stopped serving over HTTP)
    noted: bool = False

    @contextmanager
    def deferring(self) -> Iterator[None]:
        """Within it a stop signal is only noted while the server's own handler is in place
        (uvicorn's, over HTTP, while it serves): that one stops serving gracefully on it; this
        one acts on those after it, the shutdown after uvicorn's included."""
        self.deferred = True
        try:
            yield
        finally:
            self.deferred = False

    @contextmanager
    def around(self, transport: str) -> Iterator[None]:
        """Put around serving: the scope a stop signal cancels, and over HTTP
        :meth:`deferring` (uvicorn stops serving on the signal itself), so the proxy and
        ``serve-scenario`` are stopped alike on either transport."""
        with self.serving, self.deferring() if transport != "stdio" else nullcontext():
            yield


@asynccontextmanager
async def stopped_by_signals(
    enabled: bool = True, *, upstreams: bool = True
) -> AsyncIterator[Stop]:
    """Until the block ends (the proxy's shutdown included), a stop signal stops the upstream
    processes at once (``upstreams``: a scenario server has none) and cancels the yielded
    scope. Not enabled, off the main thread or off asyncio (where no handler can be set), the
    scope is never cancelled.

    The handler is the event loop's (it runs as a callback of the loop, so it may cancel), set
    without a task group: one would wrap the proxy's own errors (an upstream that cannot be
    reached) in an exception group."""
    stopped = Stop()
    loop = _main_loop() if enabled else None
    if loop is None:
        yield stopped
        return
    if upstreams:
        _say_unreachable()
    received = 0

    def stop(sig: signal.Signals) -> None:
        nonlocal received
        stopped.signal = stopped.signal or sig
        if stopped.deferred and signal.getsignal(sig) is not ours[sig]:
            # the server's own handler is in place (uvicorn's, while it serves) and stops
            # serving on it; once restored (the shutdown after), this one acts
            stopped.noted = True
            return
        received += 1
        again = " again" if stopped.noted else ""
        then = "finishing the shutdown" if stopped.noted else "shutting down"
        if not upstreams:
            logger.info("%s received%s: %s", sig.name, again, then)
            stopped.serving.cancel()
            return
        # a second signal kills; after a deferred one, so does a second Ctrl-C
        hard = received > 1 or (stopped.noted and sig == signal.SIGINT)
        sent = signal_upstreams(signal.SIGKILL if hard else signal.SIGTERM)
        groups = counted(sent, "upstream process group")
        what = "killed" if hard else "stopped"
        logger.info("%s received%s: %s %s, %s", sig.name, again, what, groups, then)
        stopped.serving.cancel()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop, sig)
    ours = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}  # the loop's, set just now
    try:
        yield stopped
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)


def _main_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, when it runs on the main thread (only there can it handle
    signals); ``None`` otherwise."""
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # another backend
        return None
