"""``toolwatch collector``: receive OTLP/HTTP spans into the store until SIGINT/SIGTERM.

The bearer token comes from ``--token-file`` (one line; kept out of ``/proc/<pid>/cmdline``) or
``$TOOLWATCH_TOKEN``; ``--token`` still works but warns that other users can read it. A token
variable that is set but empty is bad usage, like an empty ``--token`` (exit 2): it is refused,
never taken as unset, because an empty value is what a failed secret injection leaves
(``TOOLWATCH_TOKEN=$(cat /run/secrets/missing)``) and reading it as "no token" would open a
collector meant to be authenticated to anyone who reaches it. Listening on a non-loopback
address without a token starts with a warning.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwatch.collector.otlp.defaults import (
    DEFAULT_BODY_DEADLINE,
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_COMPACT_INTERVAL,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_PORT,
    DEFAULT_QUEUE_BYTES,
    DEFAULT_QUEUE_LIMIT,
)
from toolwatch.collector.store.location import StoreError, add_store_argument
from toolwatch.detection.alerting import CLOCK_AHEAD_S  # the future-clock guard
from toolwatch.usage import (
    UsageError,
    UserError,
    exit_code,
    non_negative_float,
    port,
    positive_int,
    unmet_line,
)
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `collector --help` needs no server
    # (uvicorn, Arrow), store (DuckDB) or rules
    from toolwatch.collector.otlp.metrics import ExtraMetrics
    from toolwatch.collector.store.parquet_store import Store
    from toolwatch.detection.alerting.listings import ListingWatcher
    from toolwatch.detection.alerting.rules import RuleEvaluator
    from toolwatch.detection.alerting.webhook import WebhookPoster

log = logging.getLogger(__name__)

HELP = "receive OTLP/HTTP spans into the store"
ENV_TOKEN = "TOOLWATCH_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=port, default=DEFAULT_PORT, help="port (0 = any free port; default 4318)"
    )
    add_store_argument(parser)
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help=f"require 'Authorization: Bearer TOKEN', TOKEN read from this file "
        f"(default ${ENV_TOKEN}; neither = no token)",
    )
    parser.add_argument(
        "--token",
        help="the token itself (deprecated: visible to every user in the process list; use "
        f"--token-file or ${ENV_TOKEN})",
    )
    parser.add_argument(
        "--model",
        type=Path,
        help="score every batch live with this model file (trained with --adaptive: it keeps "
        "up with drift); its open streams (and adaptive state) resume across restarts from "
        "STORE/models/live-state.json, and calls stored after its last save are re-scored",
    )
    parser.add_argument(
        "--fade-from-first-call",
        action="store_true",
        help="with an adaptive --model: old behaviour fades from the first live call, the time "
        "since the model's newest call skipped (default: it counts, and a model many "
        "half-lives old is warned of: it has faded to nothing and normal streams alarm)",
    )
    parser.add_argument(
        "--max-open-streams",
        type=positive_int,
        help="with --model: streams the live scorer holds open at most (≈ 1.6 KB each); one "
        "more closes the least recently active early, as if idle (default 100,000: ≈ 160 MB)",
    )
    parser.add_argument(
        "--webhook", help="POST live alerts to this URL (model, rule and listing alerts)"
    )
    parser.add_argument(
        "--no-listing-alerts",
        action="store_true",
        help="do not watch tools/list for changed or new tools (rug pulls; `toolwatch pins`)",
    )
    parser.add_argument(
        "--rules",
        type=Path,
        help="alert rules to evaluate on their schedule (TOML; default STORE/rules.toml when "
        "present; `toolwatch rules check` validates a file)",
    )
    parser.add_argument(
        "--max-body",
        type=positive_int,
        default=DEFAULT_MAX_BODY,
        help="largest accepted body in bytes, compressed or not (default 16 MiB)",
    )
    parser.add_argument(
        "--queue-limit",
        type=positive_int,
        default=DEFAULT_QUEUE_LIMIT,
        help="spans waiting for the disk before requests get 503 + Retry-After "
        f"(default {DEFAULT_QUEUE_LIMIT:,})",
    )
    parser.add_argument(
        "--queue-bytes",
        type=positive_int,
        default=DEFAULT_QUEUE_BYTES,
        help="bytes held by requests being read, decoded and written before requests get 503 "
        "+ Retry-After (default 128 MiB)",
    )
    parser.add_argument(
        "--header-timeout",
        type=non_negative_float,
        default=DEFAULT_HEADER_TIMEOUT,
        help="seconds a connection may take to send a request's headers (default 10)",
    )
    parser.add_argument(
        "--body-timeout",
        type=non_negative_float,
        default=DEFAULT_BODY_TIMEOUT,
        help="seconds without body bytes before a request gets 408 (default 30)",
    )
    parser.add_argument(
        "--body-deadline",
        type=non_negative_float,
        default=DEFAULT_BODY_DEADLINE,
        help="seconds for a request's whole body before it gets 408, however steadily its "
        f"bytes trickle in (default {DEFAULT_BODY_DEADLINE:g})",
    )
    parser.add_argument(
        "--max-connections",
        type=positive_int,
        help="open connections at most (default: below the file-descriptor limit, <= 4096)",
    )
    parser.add_argument(
        "--compact-interval",
        type=non_negative_float,
        default=DEFAULT_COMPACT_INTERVAL,
        help=f"seconds between compactions of small files (default {DEFAULT_COMPACT_INTERVAL:g}; "
        "0 = only at shutdown)",
    )


def _check_usage(args: argparse.Namespace) -> None:
    """Option combinations that cannot be meant, refused before any work (UsageError, exit 2;
    the one that needs the store to decide is in :func:`_scorer`)."""
    if args.token_file is not None and args.token is not None:
        raise UsageError("give --token-file or --token, not both")
    if args.token is not None and not args.token.strip():
        raise UsageError("--token is empty (leave it out to run without a token)")
    env = os.environ.get(ENV_TOKEN)
    if args.token_file is None and args.token is None and env is not None and not env.strip():
        raise UsageError(
            f"${ENV_TOKEN} is set but empty; unset it to run without a token, or set the token"
        )
    for flag in ("max_open_streams", "fade_from_first_call"):
        if args.model is None and getattr(args, flag) not in (None, False):
            raise UsageError(f"--{flag.replace('_', '-')} needs --model")


def _poster(args: argparse.Namespace) -> WebhookPoster | None:
    """The one webhook poster of every alert kind (model, rule, listing), so its counts in
    ``/metrics`` and the shutdown line are all of them; a URL it cannot post to is bad usage."""
    if not args.webhook:
        return None
    from toolwatch.detection.alerting.webhook import WebhookPoster

    try:
        return WebhookPoster(args.webhook)
    except ValueError as exc:
        raise UsageError(f"--webhook: {exc}") from None


def _scorer(args: argparse.Namespace, store: Store, poster: WebhookPoster | None) -> Any:
    """The live scorer (its ``process`` is ``on_batch``), or None. A --webhook nothing would
    alert through is bad usage (exit 2); a model that is missing or cannot be loaded is a
    UserError (exit 1)."""
    if args.model is None:
        if args.webhook and args.no_listing_alerts and not _rules_file(args, store):
            raise UsageError(
                "--webhook needs --model, --rules or listing alerts (alerts come from them)"
            )
        return None
    if not args.model.is_file():
        raise UserError(f"model file {args.model} not found")
    unmet = unmet_line("detection")  # the collector runs on its own extra
    if unmet:
        raise UserError(f"live scoring (--model) {unmet}")
    from toolwatch.detection.alerting.live import LiveScorer
    from toolwatch.detection.alerting.model_age import stale_line

    cap = args.max_open_streams
    fade = bool(getattr(args, "fade_from_first_call", False))  # a Namespace made in code
    try:
        scorer = LiveScorer(
            args.model,
            store,
            poster=poster,
            clock_ahead_s=CLOCK_AHEAD_S,
            catch_up=True,  # the calls stored after the last save of its state, re-scored
            fade_from_first_call=fade,
            **({} if cap is None else {"max_open_streams": cap}),
        )
    except Exception as exc:
        raise UserError(f"cannot load model {args.model}: {exc}") from exc
    log.info(
        "live scoring with %s%s", args.model, f", alerts to {args.webhook}" * bool(args.webhook)
    )
    stale = None if fade else stale_line(scorer.scorer, time.time(), "now")
    if stale:
        log.warning(stale)
        scorer.age_checked = True  # said once: not again at the first live call
    return scorer


def _rules_file(args: argparse.Namespace, store: Store) -> Path | None:
    if args.rules is not None:
        return Path(args.rules)
    from toolwatch.detection.alerting.rules import default_rules_path

    default = default_rules_path(store)
    return default if default.is_file() else None


def _rules(
    args: argparse.Namespace, store: Store, poster: WebhookPoster | None
) -> RuleEvaluator | None:
    """The alert-rule evaluator (a hook the main loop ticks), or None; RuleError names a bad
    file before the collector starts."""
    path = _rules_file(args, store)
    if path is None:
        return None
    from toolwatch.detection.alerting.rules import RuleEvaluator, load_rules

    rules = load_rules(path, store)
    log.info("alert rules: %d from %s", len(rules), path)
    return RuleEvaluator(rules, store, poster=poster)


def _listings(
    args: argparse.Namespace, store: Store, poster: WebhookPoster | None
) -> ListingWatcher | None:
    """The listing watcher (rug pulls, new tools), unless --no-listing-alerts."""
    if args.no_listing_alerts:
        return None
    from toolwatch.detection.alerting.listings import ListingWatcher

    watcher = ListingWatcher(store, poster=poster)
    log.info("listing alerts: on (%s; `toolwatch pins`)", counted(len(watcher.pins), "pinned tool"))
    return watcher


def _token(args: argparse.Namespace) -> str | None:
    """The bearer token from --token-file, $TOOLWATCH_TOKEN or --token (options checked by
    :func:`_check_usage`, which refuses an empty variable); a file that holds no usable token
    is a UserError."""
    if args.token_file is not None:
        try:
            text = args.token_file.read_text()
        except OSError as exc:
            raise UserError(
                f"cannot read --token-file {args.token_file}: {exc.strerror or exc}"
            ) from None
        token = text.rstrip("\r\n")
        if not token.strip():
            raise UserError(f"--token-file {args.token_file} is empty")
        if "\n" in token:
            raise UserError(f"--token-file {args.token_file} has more than one line")
        return token.strip()
    if args.token is not None:
        log.warning(
            "--token is visible to every user of this machine in the process list; use "
            "--token-file or $%s",
            ENV_TOKEN,
        )
        return args.token.strip()
    env = os.environ.get(ENV_TOKEN)
    return None if env is None else env.strip()


def _is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) only reaches this machine."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def _extra_metrics(scorer: Any, poster: WebhookPoster | None) -> ExtraMetrics | None:
    """The live scorer's metrics (the webhook's among them), or the webhook's alone."""
    if scorer is not None:
        return scorer.metrics
    if poster is None:
        return None
    from toolwatch.detection.alerting.webhook import webhook_metrics

    return lambda: webhook_metrics(poster)


def run(args: argparse.Namespace) -> int:
    _check_usage(args)
    token = _token(args)
    if token is None and not _is_loopback(args.host):
        log.warning(
            "listening on %s WITHOUT a token: anyone who can reach this address can write "
            "spans into the store; set --token-file or $%s",
            args.host,
            ENV_TOKEN,
        )
    from toolwatch.collector.otlp.server import Collector
    from toolwatch.collector.store.parquet_store import Store

    store = Store(args.store)
    store.check_path()  # a file or a glob name is refused before anything listens
    scorer = _scorer(args, store, poster := _poster(args))
    rules = _rules(args, store, poster)
    listings = _listings(args, store, poster)
    collector = Collector(
        store,
        host=args.host,
        port=args.port,
        token=token,
        on_batch=scorer.process if scorer is not None else None,
        max_body=args.max_body,
        queue_limit=args.queue_limit,
        queue_bytes=args.queue_bytes,
        compact_interval=args.compact_interval or None,
        on_listings=listings.process if listings is not None else None,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        body_deadline=args.body_deadline,
        max_connections=args.max_connections,
        extra_metrics=_extra_metrics(scorer, poster),
    )
    try:
        collector.start()
    except (OSError, RuntimeError, StoreError) as exc:
        print(f"toolwatch collector: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    stopped_by: list[signal.Signals] = []

    def on_signal(signum: int, _frame: object) -> None:
        log.info("received %s", signal.Signals(signum).name)
        stopped_by.append(signal.Signals(signum))
        stop.set()
        if rules is not None:
            rules.interrupt()  # a long rule query must not hold off the shutdown

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(0.5):
            if rules is not None:
                rules.tick()
    finally:
        collector.stop()  # flushes; the last batches reach the scorer before it closes
        if scorer is not None:
            scorer.close()  # delivers webhook alerts still queued
        if listings is not None:
            listings.close()
        if rules is not None:
            rules.close()
        if scorer is None and poster is not None:  # the scorer's line carries them otherwise
            from toolwatch.detection.alerting.webhook import metrics_line, webhook_metrics

            log.info("live alerts stopped: %s", metrics_line(webhook_metrics(poster)))
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return exit_code(stopped_by[0] if stopped_by else None)
