"""The demo's live stage: a collector on a loopback port scores every batch with the trained model
while the instrumented agent runs twice at once through two fault proxies (transparent, and one
that answers every Grep with a 503); it fails unless the runaway run alarmed and the clean one
did not.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.app.demo.options import (
    SCENARIO_FILE,
    SERVICE,
    DemoError,
    DemoOptions,
    Emit,
    LiveOutcome,
)
from toolwatch.collector.store.parquet_store import PARTITION_COLUMN, Store
from toolwatch.usage import ENV_LOG_LEVEL
from toolwatch.words import counted

if TYPE_CHECKING:
    from toolwatch.detection.alerting.live import LiveScorer

# --------------------------------------------------------------------------------- stage 4


class AlertWatcher:
    """The collector's ``on_batch``: score with the live scorer, print alerts as they come."""

    def __init__(self, scorer: Any, out: Emit, began: float) -> None:
        self.scorer = scorer
        self.out = out
        self.began = began
        self.alerts: list[dict[str, Any]] = []
        self.calls: dict[tuple[str, int], Any] = {}  # (session, index) -> CallEvent

    def __call__(self, table: pa.Table) -> None:
        for alert in self.scorer.process(table):
            self.alerts.append(alert)
            self.out(self.describe(alert))

    def describe(self, alert: Mapping[str, Any]) -> str:
        if alert["cue"] == "provenance":  # numbers of bytes, the egress class, the source tool
            return (
                f"  {time.monotonic() - self.began:5.1f}s  ALERT    session "
                f"{alert['session_id']} call #{alert['call_index']} ({alert['tool']}): "
                f"provenance·POINT {alert['score']:,.0f} B > {alert['threshold']:,.0f} B — "
                f"{alert['explanation']}"
            )
        event = self.calls.get((alert["session_id"], alert["call_index"]))
        what = alert["tool"]
        if event is not None and event.retry:
            what += f", retry {event.retry}"
        return (
            f"  {time.monotonic() - self.began:5.1f}s  ALERT    session {alert['session_id']} "
            f"call #{alert['call_index']} ({what}): {alert['cue_set']}·"
            f"{alert['detector'].upper()} {alert['score']:.2f} > {alert['threshold']:.2f}, "
            f"cue {alert['cue']}"
        )


def live_stage(
    store: Store, model_path: Path | None, options: DemoOptions, out: Emit
) -> LiveOutcome:
    """Collector + live scorer + the demo agent, clean and runaway, through the proxy."""
    from toolwatch.app.demo.agent import SERVER_NAME, demo_scenario
    from toolwatch.injection.faults.library import load_scenario

    if model_path is None:
        raise DemoError("live", "no trained model")
    scenario_path = store.root / SCENARIO_FILE
    scenario_path.parent.mkdir(parents=True, exist_ok=True)
    scenario_path.write_text(json.dumps(demo_scenario(), indent=2) + "\n")
    scenario = load_scenario(scenario_path)
    scorer = demo_scorer(model_path, store)
    statistic = scorer.watch[0][0]
    threshold = scorer.watch[0][3]
    began = time.monotonic()
    watcher = AlertWatcher(scorer, out, began)
    with live_telemetry(store, scorer, watcher, out) as (collector, provider):
        server_cmd = [sys.executable, "-m", "toolwatch", "serve-scenario", str(scenario_path)]
        out(f"  collector on {collector.url}, scoring every batch with {model_path.name}")
        shown = shlex.join(["python", *server_cmd[1:]])
        out(f"  MCP server over stdio: {shown} (server {SERVER_NAME!r})")
        out(
            f"  the same agent twice, at once — clean: through a transparent proxy; "
            f"runaway: through the fault proxy armed with A2 on every {scenario.fault.tool} "
            f"(retries a failed call at once, up to {options.retries}×)"
        )
        runs = anyio.run(_run_agents, scenario, server_cmd, options, provider, watcher, out, began)
    return _verify(store, model_path, runs, watcher, statistic, threshold, collector.url, out)


async def _run_agents(
    scenario: Any,
    server_cmd: list[str],
    options: DemoOptions,
    provider: Any,
    watcher: AlertWatcher,
    out: Emit,
    began: float,
) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    from toolwatch.app.demo.agent import CallEvent, DemoAgent, Pacing
    from toolwatch.injection.proxy.proxy import run_proxy

    upstream = StdioServerParameters(command=server_cmd[0], args=server_cmd[1:], env=server_env())
    pacing = Pacing(max_retries=options.retries)
    runs: dict[str, Any] = {}

    def on_call(event: CallEvent) -> None:
        watcher.calls[(event.session_id, event.index)] = event
        outcome = "FAILED" if event.failed else "ok"
        size = f"{event.output_bytes:,} B" if event.output_bytes is not None else ""
        retry = f"retry {event.retry}" if event.retry else ""
        out(
            f"  {time.monotonic() - began:5.1f}s  {event.run:<8} #{event.index:<3}"
            f"{event.tool:<5} {outcome:<6} {size:>8}  {event.response_id}  {retry}".rstrip()
        )

    async def flush() -> None:
        await anyio.to_thread.run_sync(provider.force_flush)

    async def one(name: str, armed: Any) -> None:
        agent = DemoAgent(
            name,
            f"demo-{name}-s{options.seed}",
            seed=options.seed,
            pacing=pacing,
            on_call=on_call,
            after_response=flush,
        )
        async with run_proxy(armed, upstream, seed=options.seed) as proxy, Client(proxy) as c:
            runs[name] = await agent.run(c)

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, "clean", None)
        tg.start_soon(one, "runaway", scenario)
    return runs


def _verify(
    store: Store,
    model_path: Path,
    runs: Mapping[str, Any],
    watcher: AlertWatcher,
    statistic: str,
    threshold: float,
    url: str,
    out: Emit,
) -> LiveOutcome:
    """Read the alerts back from the store and check the demo's claim."""
    from toolwatch.detection import NormalModel, score_calls
    from toolwatch.detection.alerting.alerts import ALERTS_TABLE

    clean, runaway = runs["clean"], runs["runaway"]
    sessions = [clean.session_id, runaway.session_id]
    stored = store.query(
        f"SELECT * EXCLUDE ({PARTITION_COLUMN}) FROM calls WHERE session_id IN (?, ?)", sessions
    )
    alerts: list[dict[str, Any]] = []
    if ALERTS_TABLE in store.tables():
        alerts = store.query(
            f"SELECT * EXCLUDE ({PARTITION_COLUMN}) FROM {ALERTS_TABLE} WHERE session_id IN (?, ?) "
            "ORDER BY alert_time, call_index",
            sessions,
        ).to_pylist()
    scores = score_calls(NormalModel.load(model_path), stored)
    peaks: dict[str, float] = {}
    for sid in sessions:
        mine = scores.filter(pc.equal(scores.column("session_id"), sid))
        values = mine.column(statistic).to_pylist()
        peaks[sid] = max(values) if values else float("nan")
    by_session = {sid: [a for a in alerts if a["session_id"] == sid] for sid in sessions}
    expected = len(clean.calls) + len(runaway.calls)
    out(
        f"  stored: {stored.num_rows} of {counted(expected, 'call')} in the store, "
        f"{counted(len(alerts), 'alert')} in its alerts table"
    )
    cue, det = statistic.rsplit("_", 1)
    stat = f"{cue}·{det.upper()}"
    first_fail = next((c for c in runaway.calls if c.failed), None)
    if by_session[runaway.session_id]:
        a = by_session[runaway.session_id][0]
        event = watcher.calls.get((a["session_id"], a["call_index"]))
        delay = (
            f", {event.at_s - first_fail.at_s:.1f} s after the first failure"
            if event is not None and first_fail is not None
            else ""
        )
        nth = f" = retry {event.retry}" if event is not None and event.retry else ""
        out(
            f"  runaway: {counted(len(runaway.calls), 'call')}, {runaway.failures} failed, "
            f"{counted(runaway.retries, 'retry', 'retries')} in "
            f"{counted(runaway.responses, 'response')}"
            + (f", gave up on {runaway.gave_up_on}" if runaway.gave_up_on else "")
            + f" — ALERT at call #{a['call_index']}{nth}{delay} "
            f"(peak {stat} {peaks[runaway.session_id]:.2f}, threshold {threshold:.2f})"
        )
    out(
        f"  clean:   {counted(len(clean.calls), 'call')} in "
        f"{counted(clean.responses, 'response')}, task "
        f"{'finished' if clean.finished else 'NOT finished'} — "
        f"{counted(len(by_session[clean.session_id]), 'alert')} "
        f"(peak {stat} {peaks[clean.session_id]:.2f}, threshold {threshold:.2f})"
    )
    if stored.num_rows != expected:
        raise DemoError(
            "live",
            f"the collector stored {stored.num_rows} of the agent's {counted(expected, 'call')}",
        )
    if not by_session[runaway.session_id]:
        raise DemoError(
            "live",
            f"the runaway run raised no alert (peak {stat} {peaks[runaway.session_id]:.2f} "
            f"<= threshold {threshold:.2f})",
        )
    if by_session[clean.session_id]:
        raise DemoError("live", "the clean run raised an alert (a false alarm)")
    if not clean.finished:
        raise DemoError("live", "the clean run did not finish its task")
    return LiveOutcome(dict(runs), alerts, peaks, threshold, statistic, url)


@contextlib.contextmanager
def live_telemetry(
    store: Store,
    scorer: Any,
    on_batch: Callable[[Any], Any],
    out: Emit,
    *,
    provenance: bool | None = None,
) -> Iterator[tuple[Any, Any]]:
    """The live stages' pipeline: a collector on a free port whose every batch goes to
    ``on_batch``, and this process's MCP client instrumented to send it spans (``provenance``
    as ``instrument`` takes it; None = the default). On a normal exit the spans are flushed
    and emitted == stored is checked (a warning line if not); then the agent side, the
    collector and the scorer are closed in that order, so the last batches reach the scorer
    before it closes."""
    from toolwatch.collector.otlp.server import Collector
    from toolwatch.instrumentation import configure_otlp, delivery, instrument, uninstrument

    collector = Collector(store, port=0, on_batch=on_batch, compact_interval=None)
    quiet = quiet_logs()
    try:
        collector.start()
        provider = configure_otlp(collector.url, service_name=SERVICE, block=True)
        instrument(tracer_provider=provider, provenance=provenance)
        try:
            yield collector, provider
            provider.force_flush()
            problem = collector.check_delivery(delivery(provider))  # emitted == stored?
            if problem is not None:
                out(f"  WARNING telemetry incomplete: {problem}")
        finally:
            uninstrument()
            provider.shutdown()
    finally:
        collector.stop()
        scorer.close()
        quiet()


def demo_scorer(model_path: Path, store: Store) -> LiveScorer:
    """The live scorer, built with the demo's logs quiet too: the last stage's resumes the
    state the live stage saved and said so at INFO ("live scoring resumed from ...")."""
    from toolwatch.detection.alerting.live import LiveScorer

    restore = quiet_logs()
    try:
        return LiveScorer(model_path, store)
    finally:
        restore()


def server_env() -> dict[str, str]:
    """The environment of a demo's stdio MCP server (``toolwatch serve-scenario``, a child
    process): warnings only, so its "serving scenario" start line stays off the demo's stderr
    as the proxy's lines do (all of it with ``toolwatch -v demo``)."""
    env = dict(os.environ)
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        env[ENV_LOG_LEVEL] = "WARNING"
    return env


def quiet_logs() -> Callable[[], None]:
    """The demo prints its own lines; keep INFO chatter and the scorer's duplicate alert
    warnings off stderr while it runs (``toolwatch -v demo`` shows everything)."""
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        return lambda: None
    names = (
        "toolwatch.detection.alerting.live",
        "toolwatch.detection.alerting.live_alerts",
        "toolwatch.detection.alerting.live_batch",
        "toolwatch.detection.alerting.live_state",
        "toolwatch.injection.proxy",  # the proxy and its injected-fault lines (outcomes)
        "toolwatch.collector",
        "mcp",
        "httpx",
        "uvicorn",
    )
    saved = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.ERROR)

    def restore() -> None:
        for n, level in saved.items():
            logging.getLogger(n).setLevel(level)

    return restore
