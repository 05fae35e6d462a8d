"""``toolwatch demo``: the whole product in one run, on a fresh store, in about a minute.

Stages (each prints what it did and how long it took; any failure stops the demo with a
:class:`~toolwatch.app.demo.options.DemoError` naming the stage):

1. **simulate** — the SIMULATED corpus (:mod:`toolwatch.collector.sources.simulator`) into the
store; 2. **train** — the normal model on the study's training days, calibrated on its calibration
days (:mod:`toolwatch.detection.calls.windows`), saved as ``<store>/models/model.json`` (where the
app looks for a store's model); 3. **experiment** — the study's full injection protocol
(:func:`toolwatch.injection.experiment.protocol.run_experiment`), saved in the store; the headline
table is printed beside the published numbers (:mod:`toolwatch.study`); 4. **live** — a collector on
a loopback port scores every batch with the trained model
(:class:`~toolwatch.detection.alerting.live.LiveScorer`); the instrumented demo agent
(:mod:`toolwatch.app.demo.agent`) runs twice at once against a real MCP server over stdio
(``toolwatch serve-scenario``), each run through its own fault proxy: a transparent one (clean run)
and one that answers every ``Grep`` with a 503 (the agent's retry loop runs away). Alerts are
printed as the collector raises them; the stage fails unless the runaway run alarmed and the clean
one did not (:mod:`toolwatch.app.demo.live`); 5. **exfiltration** — the same server behind a fault
proxy that plants an order to send the file out in the first ``Read`` result; the agent, now a
stand-in for a model that obeys tool text, sends it with ``WebFetch``, and the live scorer's
provenance cue alerts at that call with the reused bytes and the source tool, never content
(:mod:`toolwatch.app.demo.exfiltration`); 6. **dashboard** — the command that opens the Streamlit
app on the store.

The store is the demo's own (:mod:`toolwatch.app.demo.demo_store`).
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager

from toolwatch.app.demo.demo_store import prepare_store, write_marker
from toolwatch.app.demo.exfiltration import exfiltration_stage
from toolwatch.app.demo.live import live_stage
from toolwatch.app.demo.options import STAGES, Console, DemoError, DemoOptions, DemoResult, Emit
from toolwatch.app.demo.stages import experiment_stage, simulate_stage, train_stage
from toolwatch.words import counted

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------- the run


def run_demo(options: DemoOptions, emit: Emit | None = None) -> DemoResult:
    """Run every stage; raises :class:`DemoError` (naming the stage) when one fails."""
    out = Console(emit)
    result = DemoResult(options)
    began = time.perf_counter()
    out(
        f"toolwatch demo — seed {options.seed}, {counted(options.sessions, 'simulated session')}, "
        f"{counted(options.seeds, 'injection seed')}, "
        f"{counted(options.bootstrap, 'bootstrap resample')}"
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
        with _stage("exfiltration", result, out):
            result.exfiltration = exfiltration_stage(store, result.model_path, options, out)
    except DemoError as exc:
        with contextlib.suppress(OSError):
            write_marker(store.root, options, status=f"failed at {exc.stage}", result=result)
        raise
    total = time.perf_counter() - began
    result.timings["total"] = total
    out()
    out(
        "timings: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in result.timings.items() if k != "total")
        + f" — total {total:.1f} s"
    )
    write_marker(store.root, options, status="done", result=result)
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
