"""``toolwatch app``: open the Streamlit dashboard on a store.

    toolwatch app [--store PATH] [--port N] [--model FILE] [--refresh S] [--headless]

Runs ``python -m streamlit run <package>/app/main.py -- --store PATH …`` bound to the loopback
address only, with Streamlit's usage statistics and e-mail prompt off. The store and model
are checked first so that a wrong path or a corrupt store file is a one-line error here, not a
stack trace in the browser; a store that does not exist yet or is empty is allowed (the app
explains how to fill it and picks it up once a collector starts writing).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from toolwatch.app.dashboard.settings import DEFAULT_REFRESH_S, MAIN_SCRIPT, MODEL_IN_STORE
from toolwatch.collector.store.location import StoreError, add_store_argument, resolve_store
from toolwatch.usage import UsageError, UserError, port, positive_float

HELP = "open the Streamlit dashboard"
HOST = "127.0.0.1"
DEFAULT_PORT = 8501
log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument(
        "--port",
        type=port,
        default=DEFAULT_PORT,
        help=f"loopback port (default {DEFAULT_PORT}; 0 = any free port)",
    )
    parser.add_argument(
        "--model",
        help="normal model from `toolwatch train` for the Sessions page's scores "
        f"(default: STORE/{MODEL_IN_STORE} when present)",
    )
    parser.add_argument(
        "--refresh",
        type=positive_float,
        default=DEFAULT_REFRESH_S,
        help=f"seconds between refreshes of the Live page (default {DEFAULT_REFRESH_S:g})",
    )
    parser.add_argument(
        "--headless", action="store_true", help="do not open a browser (servers, CI, SSH)"
    )


def streamlit_command(
    store: Path, port: int, *, model: Path | None, refresh: float, headless: bool
) -> list[str]:
    """The ``streamlit run`` command line (loopback only, no usage statistics)."""
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(MAIN_SCRIPT),
        "--server.address",
        HOST,
        "--server.port",
        str(port),
        "--server.headless",
        "true" if headless else "false",
        "--server.showEmailPrompt",
        "false",
        "--server.fileWatcherType",
        "none",
        "--browser.serverAddress",
        HOST,
        "--browser.gatherUsageStats",
        "false",
        "--",
        "--store",
        str(store),
        "--refresh",
        f"{refresh:g}",
    ]
    if model is not None:
        cmd += ["--model", str(model)]
    return cmd


def free_port() -> int:
    """A loopback port that was free a moment ago (for ``--port 0``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def port_in_use(number: int) -> str:
    """Why ``number`` cannot be bound on the loopback address, or ``""`` when it can."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, number))
        except OSError as exc:
            return exc.strerror or str(exc)
    return ""


def check_usage(port: int, refresh: float) -> str | None:
    """Bad usage (exit 2) the argparse types missed (a caller of :func:`run` without them)."""
    if not 0 <= port <= 65535:
        return f"--port {port} is not a TCP port (0-65535)"
    if refresh <= 0:
        return f"--refresh must be a positive number of seconds, not {refresh:g}"
    return None


def check_inputs(store: Path, model: str | None) -> str | None:
    """Why the app cannot serve this store or model (exit 1, as other commands say it), or
    None."""
    from toolwatch.collector.store.parquet_store import Store  # `app --help` needs no DuckDB

    try:
        Store(store).check_path()  # a file, or a name DuckDB would expand as a pattern
    except StoreError as exc:
        return str(exc)
    if store.is_dir() and not os.access(store, os.R_OK | os.X_OK):
        return f"the store {store} is not readable by this user"
    if model is not None:
        from toolwatch.detection import ModelError, NormalModel

        try:
            NormalModel.load(model)
        except (ModelError, OSError, ValueError) as exc:
            return f"--model {model}: {exc}"
    if importlib.util.find_spec("streamlit") is None:
        return "needs 'streamlit', which is not installed (pip install 'toolwatch[app]')"
    return None


def run(args: argparse.Namespace) -> int:
    store = resolve_store(args.store)
    problem = check_usage(args.port, args.refresh)
    if problem:
        raise UsageError(problem)
    problem = check_inputs(store, args.model)
    if problem:
        raise UserError(problem)
    from toolwatch.app.dashboard.queries import store_state

    state = store_state(store)
    if state.status == "unreadable":
        raise UserError(state.error or f"cannot read the store {store}")
    if state.status in ("missing", "empty"):
        what = f"no store at {store} yet" if state.status == "missing" else f"{store} is empty"
        print(f"toolwatch app: {what}; the app will say how to fill it", file=sys.stderr)
    if args.port:
        busy = port_in_use(args.port)
        if busy:  # before printing a URL that another server answers
            raise UserError(
                f"port {args.port} on {HOST} is not available ({busy.lower()}); "
                "pick another with --port N, or --port 0 for any free one"
            )
    port = args.port or free_port()
    model = Path(args.model).expanduser() if args.model else None
    cmd = streamlit_command(store, port, model=model, refresh=args.refresh, headless=args.headless)
    print(f"toolwatch app: http://{HOST}:{port}/ (store {store}); Ctrl-C stops it", flush=True)
    log.debug("running %s", cmd)
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    return _serve(cmd, env)


def _serve(cmd: list[str], env: dict[str, str]) -> int:
    """Run Streamlit until it exits; SIGTERM / Ctrl-C here stop it too (no orphan server)."""
    proc = subprocess.Popen(cmd, env=env)

    def forward(signum: int, _frame: object) -> None:
        proc.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        return proc.wait()
    except KeyboardInterrupt:  # the child got the terminal's SIGINT too
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
