"""The injection experiment end to end: detection, thresholds, ablation, AUC and latency."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import toolwatch.injection.experiment.metrics as M
import toolwatch.injection.experiment.protocol as protocol
from toolwatch.collector.sources.simulator import simulate
from toolwatch.detection import CUE_SETS, DETECTORS, NormalModel
from toolwatch.injection.experiment.config import VARIANTS, ExperimentConfig
from toolwatch.injection.experiment.protocol import run_experiment
from toolwatch.injection.experiment.results import ExperimentResult
from toolwatch.injection.experiment.runs import build_runs
from toolwatch.injection.experiment.scoring import (
    NOVELTY,
    STUDY_STATISTICS,
    fit_model,
    score_groups,
)
from toolwatch.injection.experiment.split import normal_sessions, split_by_time
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.kinds import CONTROL_KINDS, KINDS
from toolwatch.injection.spans.session_arrays import SessionCalls


def test_burst_and_runaway_are_detected_far_above_the_controls(
    result: ExperimentResult,
) -> None:
    target = result.config.target_fa
    rate = {k: result.cell(k, "all", "cusum").rate for k in KINDS}  # type: ignore[union-attr]
    assert rate["burst"] >= 0.8
    assert rate["runaway_retry"] >= 0.7
    for control in CONTROL_KINDS:
        # a control alarms only when its session would have alarmed anyway: near the target
        assert rate[control] <= target + 0.03
        assert rate["burst"] - rate[control] >= 0.6
        assert rate["runaway_retry"] - rate[control] >= 0.5
    # the study's negative finding: exfiltration and out-of-scope tools are not caught
    for kind in ("key_exfiltration", "exfiltration_2sigma", "out_of_scope_tool"):
        assert rate[kind] <= 0.2
    cell = result.cell("burst", "all", "cusum")
    assert cell is not None and cell.runs == 64 and cell.ci_low <= cell.rate <= cell.ci_high


def test_false_alarm_levels_are_reachable_levels_not_above_the_target(
    result: ExperimentResult,
) -> None:
    n = result.split["test"][0]
    for (variant, cue, det, mode), t in result.thresholds.items():
        assert variant in VARIANTS and (cue, det) in (*STUDY_STATISTICS, *NOVELTY)
        assert 0.0 <= t.fa_reached <= 1.0
        assert abs(t.fa_reached * n - round(t.fa_reached * n)) < 1e-9  # k of n sessions
        if mode == "fa_target":  # (the "largest reachable level" rule: test_metrics.py)
            assert t.fa_reached <= result.config.target_fa
    for c in result.cells:
        assert (
            c.fa_reached == result.thresholds[(c.variant, c.cue_set, c.detector, c.mode)].fa_reached
        )


def test_response_boundary_ablation_shows_what_breaks(result: ExperimentResult) -> None:
    def rate(kind: str, cue: str, det: str, variant: str) -> float:
        c = result.cell(kind, cue, det, variant=variant)
        assert c is not None
        return c.rate

    # with response ids: a different-response burst is caught on its first call, parallel
    # calls (same response) are not
    assert rate("burst", "time", "point", "standard") >= 0.95
    assert rate("control_same_response_burst", "time", "cusum", "standard") <= 0.1
    # without: the single fast gap no longer stands out, and the same-response control now
    # alarms like a burst — the two cannot be told apart
    assert rate("burst", "time", "point", "no_response_ids") <= 0.1
    abl_control = rate("control_same_response_burst", "time", "cusum", "no_response_ids")
    abl_burst = rate("burst", "time", "cusum", "no_response_ids")
    assert abl_control >= 0.5
    assert abs(abl_control - abl_burst) <= 0.25


def test_auc_and_latency_are_in_range(result: ExperimentResult) -> None:
    burst = result.cell("burst", "time", "point")
    assert burst is not None and burst.median_latency == 1.0  # alarm on the first fast gap
    same = result.cell("control_same_response_burst", "all", "cusum")
    assert same is not None and same.auc < 0.5  # parallel calls look *more* normal
    assert result.cell("burst", "all", "cusum").auc > 0.9  # type: ignore[union-attr]
    for c in result.cells:
        assert np.isnan(c.auc) or 0.0 <= c.auc <= 1.0
        assert c.detected == 0 or 1 <= c.median_latency <= 35


def test_experiment_runs_on_an_imported_style_corpus() -> None:
    """Null result sizes, sessions without response ids, re-stamped calls, no seq: the shape
    of imported transcripts. The protocol must still run end to end."""
    calls = simulate(seed=3, scale=0.3)
    n = calls.num_rows
    rng = np.random.default_rng(0)
    sid = calls.column("session_id").to_numpy(zero_copy_only=False)
    no_ids = np.isin(sid, np.unique(sid)[::3])
    out = calls.column("output_bytes").to_numpy(zero_copy_only=False).astype(float)
    out[rng.random(n) < 0.2] = np.nan
    resp = np.where(no_ids, None, calls.column("response_id").to_numpy(zero_copy_only=False))
    restamped = rng.random(n) < 0.02
    calls = (
        calls.set_column(
            calls.schema.get_field_index("output_bytes"),
            "output_bytes",
            pa.array(out, pa.int64(), from_pandas=True),
        )
        .set_column(
            calls.schema.get_field_index("response_id"), "response_id", pa.array(resp, pa.string())
        )
        .set_column(calls.schema.get_field_index("restamped"), "restamped", pa.array(restamped))
        .drop_columns(["seq", "duration_us", "server"])
    )
    config = ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,), bootstrap=20, ablation=False)
    result = run_experiment(calls, config)
    assert result.split["mode"] == "shares"
    for c in result.cells:
        assert 0.0 <= c.rate <= 1.0 and c.runs == result.split["test"][0]
    modes = 3 if result.split["test"][0] < 50 else 2  # a thin split adds the next level
    assert len(result.cells) == len(KINDS) * (len(CUE_SETS) * len(DETECTORS) + len(NOVELTY)) * modes
    # the fast gaps still rank above normal calls, though sessions without response ids now
    # hold fast "different-response" gaps too (the ablation's point)
    burst = result.cell("burst", "time", "point")
    assert burst is not None and burst.auc > 0.7


def test_seeds_are_scored_one_at_a_time_with_the_figures_of_all_at_once(
    corpus: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory stays one seed's (every seed's runs held to the end took 3.5x the one-seed peak
    on a 100,000-call stream): each batch holds one seed's runs, and every cell is what all
    seeds' runs scored in one batch give (rank AUC over every call, detections, runs)."""
    config = ExperimentConfig(
        seeds=(0, 1, 2), kinds=("burst", "sequence_hijack"), bootstrap=50, ablation=True
    )
    batches: list[int] = []

    def recording(model: NormalModel, groups: Sequence[Sequence[SessionCalls]]) -> Any:
        batches.append(sum(len(g) for g in groups))
        return score_groups(model, groups)

    monkeypatch.setattr(protocol, "score_groups", recording)
    result = run_experiment(corpus, config)
    split = split_by_time(normal_sessions(corpus), config)
    n_test = len(split.test)
    artefacts = sum(len(s) for g in split.artefacts.values() for s in g.values())
    assert len(batches) == 3 * 2  # a batch per seed and variant
    assert max(batches) <= n_test + artefacts + 2 * n_test  # one seed's runs of two kinds
    runs = build_runs(split.test, InjectionContext.from_sessions(split.train), config)
    model = fit_model(split.train, split.calibration, config)
    stats = score_groups(model, [r.sessions for r in runs.values()])
    for (kind, kind_runs), kind_stats in zip(runs.items(), stats, strict=True):
        layout = kind_runs.layout
        for cue, det in STUDY_STATISTICS:
            cell = result.cell(kind, cue, det)
            assert cell is not None and cell.runs == len(kind_runs.sessions)
            assert cell.auc == M.auc(kind_stats[f"{cue}_point"], layout.injected_mask())
            detected, _ = M.window_outcomes(kind_stats[f"{cue}_{det}"], layout, cell.threshold)
            assert cell.detected == int(detected.sum())
