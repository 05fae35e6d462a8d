"""``toolwatch demo``: the whole product in one run, on a fresh store, in about a minute.

Stages (each prints what it did and how long it took; any failure stops the demo with a
:class:`DemoError` naming the stage):

1. **simulate** — the SIMULATED corpus (:mod:`toolwatch.collector.sources.simulator.workload`) into
the store;
2. **train** — the normal model on the study's training days, calibrated on its calibration
   days (:mod:`toolwatch.detection.calls.windows`), saved as ``<store>/models/model.json`` (where
   the app looks for a store's model);
3. **experiment** — the study's full injection protocol
   (:func:`toolwatch.injection.experiment.protocol.run_experiment`), saved in the store; the
   headline
   table is printed beside the published numbers (:mod:`toolwatch.study`);
4. **live** — a collector on a loopback port scores every batch with the trained model
   (:class:`~toolwatch.detection.alerting.live.LiveScorer`); the instrumented demo agent
   (:mod:`toolwatch.app.demo.agent`) runs twice at once against a real MCP server over
   stdio (``toolwatch serve-scenario``), each run through its own fault proxy: a transparent
   one (clean run) and one that answers every ``Grep`` with a 503 (the agent's retry loop
   runs away). Alerts are printed as the collector raises them; the stage fails unless the
   runaway run alarmed and the clean one did not;
5. **dashboard** — the command that opens the Streamlit app on the store.

The store is the demo's own: a new or empty directory, or a previous demo store (recognised
by its :data:`MARKER` file), which is wiped first. Anything else is refused untouched.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch import study
from toolwatch.collector.store.parquet_store import PARTITION_COLUMN, Store
from toolwatch.detection.model.normal_model import MODEL_IN_STORE

log = logging.getLogger(__name__)

#: File that marks a directory as a demo store (so that a later demo may wipe it).
MARKER: Final = "toolwatch-demo.json"
DEFAULT_STORE: Final = "toolwatch-demo"
#: Where the app looks for a store's own model, so ``toolwatch app --store`` finds it.
MODEL_FILE: Final = MODEL_IN_STORE
SCENARIO_FILE: Final = Path("demo") / "scenario.json"
REPORT_FILE: Final = Path("demo") / "experiment.txt"
SERVICE: Final = "toolwatch-demo-agent"
STAGES: Final[tuple[str, ...]] = ("simulate", "train", "experiment", "live", "dashboard")
#: Sizes of a full and of a ``--quick`` demo (explicit options override either).
FULL: Final[dict[str, int]] = {
    "sessions": int(study.CORPUS["sessions"]),
    "seeds": 5,
    "bootstrap": 2000,
    "retries": 15,
}
QUICK: Final[dict[str, int]] = {"sessions": 150, "seeds": 1, "bootstrap": 200, "retries": 8}
_TABLE_DIR: Final = re.compile(r"^[a-z][a-z0-9_]*$")

Emit = Callable[[str], None]


class DemoError(Exception):
    """A stage failed; ``stage`` names it and the message says why."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


@dataclass(frozen=True)
class DemoOptions:
    """Everything that determines a demo run."""

    store: Path = Path(DEFAULT_STORE)
    sessions: int = FULL["sessions"]
    seeds: int = FULL["seeds"]
    bootstrap: int = FULL["bootstrap"]
    seed: int = 0
    retries: int = FULL["retries"]

    def __post_init__(self) -> None:
        for name, low in (("sessions", 4), ("seeds", 1), ("bootstrap", 1), ("retries", 1)):
            if getattr(self, name) < low:
                raise DemoError("options", f"--{name} must be at least {low}")
        if self.seed < 0:
            raise DemoError("options", "--seed must be >= 0")


@dataclass
class LiveOutcome:
    """What the live stage saw: per run its calls, and the alerts the collector raised."""

    runs: dict[str, Any]  # run name -> AgentRun
    alerts: list[dict[str, Any]]
    peaks: dict[str, float]  # session -> peak of the alerting statistic (batch re-score)
    threshold: float
    statistic: str
    collector_url: str


@dataclass
class DemoResult:
    options: DemoOptions
    timings: dict[str, float] = field(default_factory=dict)
    model_path: Path | None = None
    experiment_run: str | None = None
    live: LiveOutcome | None = None


class Console:
    """Thread-safe line output (the collector's callback thread prints alerts)."""

    def __init__(self, emit: Emit | None = None) -> None:
        self._emit = emit or (lambda line: print(line, flush=True))
        self._lock = threading.Lock()

    def __call__(self, line: str = "") -> None:
        with self._lock:
            self._emit(line)


# --------------------------------------------------------------------------------- the run


def run_demo(options: DemoOptions, emit: Emit | None = None) -> DemoResult:
    """Run every stage; raises :class:`DemoError` (naming the stage) when one fails."""
    out = Console(emit)
    result = DemoResult(options)
    began = time.perf_counter()
    out(
        f"toolwatch demo — seed {options.seed}, {options.sessions} simulated sessions, "
        f"{options.seeds} injection seed(s), {options.bootstrap:,} bootstrap resamples"
    )
    with _stage("store", result, out, announce=False):
        store = prepare_store(options.store, options)
    out(f"store: {store.root} (fresh)")
    try:
        with _stage("simulate", result, out):
            simulate_stage(store, options, out)
        with _stage("train", result, out):
            result.model_path = train_stage(store, out)
        with _stage("experiment", result, out):
            result.experiment_run = experiment_stage(store, options, out)
        with _stage("live", result, out):
            result.live = live_stage(store, result.model_path, options, out)
    except DemoError as exc:
        with contextlib.suppress(OSError):
            _write_marker(store.root, options, status=f"failed at {exc.stage}", result=result)
        raise
    total = time.perf_counter() - began
    result.timings["total"] = total
    out()
    out(
        "timings: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in result.timings.items() if k != "total")
        + f" — total {total:.1f} s"
    )
    _write_marker(store.root, options, status="done", result=result)
    # the last thing printed: how to go on
    out()
    out(f"[{len(STAGES)}/{len(STAGES)}] dashboard")
    out(f"  open the dashboard:  toolwatch app --store {shlex.quote(str(options.store))}")
    return result


@contextmanager
def _stage(name: str, result: DemoResult, out: Console, *, announce: bool = True) -> Iterator[None]:
    if announce:
        out()
        out(f"[{STAGES.index(name) + 1}/{len(STAGES)}] {name}")
    t = time.perf_counter()
    try:
        yield
    except DemoError:
        raise
    except Exception as exc:  # the demo reports which stage broke, never a traceback
        log.debug("stage %s failed", name, exc_info=True)
        raise DemoError(name, f"{type(exc).__name__}: {exc}") from exc
    elapsed = time.perf_counter() - t
    result.timings[name] = elapsed
    if announce:
        out(f"  ({name}: {elapsed:.1f} s)")


# --------------------------------------------------------------------------------- the store


def prepare_store(path: Path, options: DemoOptions | None = None) -> Store:
    """A fresh demo store at ``path``: created, or wiped when it is a previous demo store.

    Refuses (nothing deleted) a path that is a file, or a non-empty directory that is not a
    demo store, or a demo store holding anything a demo does not write.
    """
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise DemoError("store", f"{path} exists and is not a directory; give --store a directory")
    if path.is_dir():
        entries = sorted(path.iterdir())
        if entries:
            if not _is_demo_marker(path / MARKER):
                raise DemoError(
                    "store",
                    f"{path} is not empty and is not a previous demo store (no {MARKER}); "
                    "nothing was deleted — give a new or empty directory with --store",
                )
            foreign = [e.name for e in entries if not _demo_entry(e)]
            if foreign:
                raise DemoError(
                    "store",
                    f"{path} is a previous demo store but also holds {', '.join(foreign)}; "
                    "nothing was deleted — move those away or give another --store",
                )
            for entry in entries:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
        _write_marker(path, options or DemoOptions(store=path), status="running")
    except OSError as exc:
        raise DemoError("store", f"cannot create the demo store {path}: {exc}") from exc
    return Store(path)


def _is_demo_marker(path: Path) -> bool:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("toolwatch_demo") == 1


def _demo_entry(entry: Path) -> bool:
    """Whether a demo wrote this top-level entry: its marker, models/, demo/, or a store
    table (a directory of ``date=…`` partitions)."""
    if entry.name == MARKER:
        return entry.is_file()
    if entry.is_symlink() or not entry.is_dir():
        return False
    if entry.name in (MODEL_FILE.parent.name, SCENARIO_FILE.parent.name):
        return True
    if not _TABLE_DIR.match(entry.name):
        return False
    return all(
        (child.is_dir() and child.name.startswith("date=")) or child.name == ".compact.lock"
        for child in entry.iterdir()
    )


def _write_marker(
    root: Path, options: DemoOptions, *, status: str, result: DemoResult | None = None
) -> None:
    data: dict[str, Any] = {
        "toolwatch_demo": 1,
        "status": status,
        "updated": datetime.now(UTC).isoformat(),
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()},
    }
    if result is not None:
        data["timings_s"] = {k: round(v, 3) for k, v in result.timings.items()}
        data["model"] = str(result.model_path) if result.model_path else None
        data["experiment_run"] = result.experiment_run
        if result.live is not None:
            data["live"] = {
                "alerts": [
                    {k: v.isoformat() if isinstance(v, datetime) else v for k, v in a.items()}
                    for a in result.live.alerts
                ],
                "peaks": result.live.peaks,
            }
    (root / MARKER).write_text(json.dumps(data, indent=2) + "\n")


# --------------------------------------------------------------------------------- stages 1-3


def simulate_stage(store: Store, options: DemoOptions, out: Emit) -> pa.Table:
    """Generate the SIMULATED corpus and write it (and its configuration) to the store."""
    from toolwatch.collector.sources.simulator import SimulationConfig, generate
    from toolwatch.collector.sources.simulator.report import record_simulation, summary_lines

    config = SimulationConfig(seed=options.seed, sessions=options.sessions)
    t = time.perf_counter()
    table = generate(config)
    for line in summary_lines(config, table, time.perf_counter() - t):
        out("  " + line)
    files = store.append("calls", table)
    record_simulation(store, config, table.num_rows, table.num_rows)
    out(f"  written: {table.num_rows:,} SIMULATED calls in {len(files)} Parquet files")
    return table


def train_stage(store: Store, out: Emit) -> Path:
    """Fit on the study's training days, calibrate on its calibration days, save the model."""
    from toolwatch.collector.sources.simulator import SPLIT_DATES
    from toolwatch.detection import NormalModel
    from toolwatch.detection.calls.windows import load_window, parse_window

    windows = {
        name: parse_window("..".join(SPLIT_DATES[name])) for name in ("train", "calibration")
    }
    train = load_window(store, windows["train"])
    if train.num_rows == 0:
        raise DemoError("train", f"no calls in the training window {windows['train'].text}")
    model = NormalModel.fit(train, window=windows["train"].describe())
    calib = load_window(store, windows["calibration"])
    if calib.num_rows == 0:
        raise DemoError(
            "train", f"no calls in the calibration window {windows['calibration'].text}"
        )
    model.calibrate(calib, window=windows["calibration"].describe())
    path = model.save(store.root / MODEL_FILE)
    for name in ("train", "calibration"):
        d = model.data.get(name, {})
        # a "session" as the study counts it (and the simulate lines above) is a stream:
        # a subagent apart from its parent conversation
        out(
            f"  {name:<12} {windows[name].text}: {d.get('streams', d.get('sessions', 0)):,} "
            f"sessions, {d.get('calls', 0):,} calls"
        )
    stat = model.config.alert_on[0]
    cue, det = stat.rsplit("_", 1)
    out(
        f"  model {model.model_id} saved to {path}; live alerts on {cue}·{det.upper()} > "
        f"{model.threshold(cue, det):.2f} (top {1 - model.config.operating_quantile:.1%} "
        "of calibration calls)"
    )
    return path


def experiment_stage(store: Store, options: DemoOptions, out: Emit) -> str:
    """The study's full protocol on the stored corpus; prints the headline table."""
    from toolwatch.injection.experiment import (
        ExperimentConfig,
        load_calls,
        run_with_progress,
        save_result,
    )
    from toolwatch.injection.experiment.report import headline, render

    config = ExperimentConfig(seeds=tuple(range(options.seeds)), bootstrap=options.bootstrap)
    calls = load_calls(store)
    result = run_with_progress(calls, config, run_id=f"demo-s{options.seed}", leave=False)
    save_result(store, result)
    report = store.root / REPORT_FILE
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(render(result))
    for line in headline(result).splitlines():
        out("  " + line)
    out(
        f"  saved as run {result.run_id}; every table of the study: {report} "
        f"(re-run: toolwatch experiment --store {shlex.quote(str(store.root))} "
        f"--rerun {result.run_id})"
    )
    return result.run_id


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
    from toolwatch.collector.otlp.server import Collector
    from toolwatch.detection.alerting.live import LiveScorer
    from toolwatch.injection.faults.library import load_scenario
    from toolwatch.instrumentation import configure_otlp, instrument, uninstrument

    if model_path is None:
        raise DemoError("live", "no trained model")
    scenario_path = store.root / SCENARIO_FILE
    scenario_path.parent.mkdir(parents=True, exist_ok=True)
    scenario_path.write_text(json.dumps(demo_scenario(), indent=2) + "\n")
    scenario = load_scenario(scenario_path)
    scorer = LiveScorer(model_path, store)
    statistic = scorer.watch[0][0]
    threshold = scorer.watch[0][3]
    began = time.monotonic()
    watcher = AlertWatcher(scorer, out, began)
    collector = Collector(store, port=0, on_batch=watcher, compact_interval=None)
    quiet = _quiet_logs()
    try:
        collector.start()
        provider = configure_otlp(collector.url, service_name=SERVICE)
        instrument(tracer_provider=provider)
        try:
            server_cmd = [sys.executable, "-m", "toolwatch", "serve-scenario", str(scenario_path)]
            out(f"  collector on {collector.url}, scoring every batch with {model_path.name}")
            shown = shlex.join(["python", *server_cmd[1:]])
            out(f"  MCP server over stdio: {shown} (server {SERVER_NAME!r})")
            out(
                f"  the same agent twice, at once — clean: through a transparent proxy; "
                f"runaway: through the fault proxy armed with A2 on every {scenario.fault.tool} "
                f"(retries a failed call at once, up to {options.retries}×)"
            )
            runs = anyio.run(
                _run_agents, scenario, server_cmd, options, provider, watcher, out, began
            )
            provider.force_flush()
        finally:
            uninstrument()
            provider.shutdown()
    finally:
        collector.stop()
        scorer.close()
        quiet()
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

    upstream = StdioServerParameters(
        command=server_cmd[0], args=server_cmd[1:], env=dict(os.environ)
    )
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
        f"  stored: {stored.num_rows} of {expected} calls in the store, "
        f"{len(alerts)} alert(s) in its alerts table"
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
            f"  runaway: {len(runaway.calls)} calls, {runaway.failures} failed, "
            f"{runaway.retries} retries in {runaway.responses} responses"
            + (f", gave up on {runaway.gave_up_on}" if runaway.gave_up_on else "")
            + f" — ALERT at call #{a['call_index']}{nth}{delay} "
            f"(peak {stat} {peaks[runaway.session_id]:.2f}, threshold {threshold:.2f})"
        )
    out(
        f"  clean:   {len(clean.calls)} calls in {clean.responses} responses, task "
        f"{'finished' if clean.finished else 'NOT finished'} — "
        f"{len(by_session[clean.session_id])} alert(s) "
        f"(peak {stat} {peaks[clean.session_id]:.2f}, threshold {threshold:.2f})"
    )
    if stored.num_rows != expected:
        raise DemoError(
            "live", f"the collector stored {stored.num_rows} of the agent's {expected} calls"
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


def _quiet_logs() -> Callable[[], None]:
    """The demo prints its own lines; keep INFO chatter and the scorer's duplicate alert
    warnings off stderr while it runs (``toolwatch -v demo`` shows everything)."""
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        return lambda: None
    names = (
        "toolwatch.detection.alerting.live",
        "toolwatch.injection.proxy.proxy",
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
