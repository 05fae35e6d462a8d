"""The dashboard's test store, built the way a user builds one (see tests/app/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from support.paths import REPO
from toolwatch.app.dashboard.settings import MODEL_IN_STORE
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import ModelConfig, NormalModel
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.calls.windows import bounded, default_windows, load_window
from toolwatch.detection.scoring.batch import score_calls
from toolwatch.detection.scoring.stream_scores import STREAM_SCORES_TABLE, stream_scores
from toolwatch.injection.experiment import (
    ExperimentConfig,
    load_calls,
    run_experiment,
    save_result,
)

SCENARIOS = REPO / "scenarios"
WB_SCENARIOS = ("c1-support-01", "a2-hr-01")
KINDS = ("burst", "runaway_retry", "sequence_hijack", "control_same_response_burst")


def build_store(root: Path, sessions: int = 80) -> dict[str, Any]:
    """A store with calls, a model at the store's convention, experiment results, live alerts
    and a workbench suite (see the module docstring)."""
    store = Store(root)
    store.append("calls", simulate(seed=3, sessions=sessions))
    train_w, cal_w = default_windows(store)
    model = NormalModel.fit(load_window(store, train_w), ModelConfig(), window=train_w.describe())
    model.calibrate(load_window(store, cal_w), window=cal_w.describe())
    model_path = model.save(root / MODEL_IN_STORE)
    config = ExperimentConfig(
        split_shares=(0.5, 0.15), seeds=(0, 1), bootstrap=200, kinds=KINDS, ablation=True
    )
    result = run_experiment(load_calls(store), config)
    save_result(store, result)
    later = store.query(
        "SELECT * EXCLUDE (date) FROM calls WHERE start_time >= ? ORDER BY start_time",
        [cal_w.end],
    )
    with LiveScorer(model_path, store) as live:
        alerts = live.process(later)
    assert alerts, "the fixture needs live alerts"
    suite = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolwatch",
            "workbench",
            "suite",
            "--store",
            str(root),
            "--agents",
            "naive,careful",
            "--mitigations",
            "scan,all",
            "--scenarios",
            *(str(SCENARIOS / f"{s}.json") for s in WB_SCENARIOS),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert suite.returncode == 0, suite.stderr[-2000:]
    # what `toolwatch scan` stores for the Sessions page: every stream's peak
    every = load_window(store, bounded(None, None), normal_only=False)
    store.append(STREAM_SCORES_TABLE, stream_scores(model, score_calls(model, every)))
    return {"root": root, "model": model, "model_path": model_path, "run_id": result.run_id}


def rows(root: Path, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    return Store(root).query(sql, params).to_pylist()


def pct0(x: float) -> str:
    return f"{100 * x:.0f}%"


def interval(rate: float, lo: float, hi: float) -> str:
    return f"{pct0(rate)} ({100 * lo:.0f}–{100 * hi:.0f})"
