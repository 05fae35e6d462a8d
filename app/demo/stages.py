"""The demo's offline stages: simulate the corpus into the store, train and calibrate the normal
model on the study's windows, run the study's experiment and print its headline beside the
published numbers.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from toolwatch.app.demo.options import MODEL_FILE, REPORT_FILE, DemoError, DemoOptions, Emit
from toolwatch.collector.store.parquet_store import Store
from toolwatch.words import counted

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
    from toolwatch.injection.experiment.formats import pct

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
        f"{model.threshold(cue, det):.2f} (top {pct(1 - model.config.operating_quantile, 1)} "
        "of calibration calls)"
    )
    scan_stage(store, model, out)
    return path


def scan_stage(store: Store, model: Any, out: Emit) -> None:
    """What ``toolwatch scan`` stores: every stream's peak, for the app's Sessions page."""
    from toolwatch.detection.calls.windows import bounded, load_window
    from toolwatch.detection.scoring.batch import score_calls
    from toolwatch.detection.scoring.stream_scores import STREAM_SCORES_TABLE, stream_scores

    every = load_window(store, bounded(None, None), normal_only=False)
    scores = stream_scores(model, score_calls(model, every))
    store.append(STREAM_SCORES_TABLE, scores)
    flagged = sum(scores.column("flagged").to_pylist())
    out(
        f"  scan: {flagged:,} of {counted(scores.num_rows, 'stream')} above the operating point "
        "(scores stored for the app's Sessions page)"
    )


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
