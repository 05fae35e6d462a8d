"""The study's injection experiment (BRIEF §3), end to end, on any store's calls.

Protocol, step by step (every choice is in :class:`ExperimentConfig`, saved with the results):

1. **Split by time**, never shuffled: sessions (streams: a subagent is a session of its own)
   are assigned by their first call to train / calibration / test, either by date (the study's
   dates by default) or by shares of sessions ordered by start time.
2. **Fit** the normal model on train; its operating point comes from calibration.
3. **Test sessions** are the test-split sessions with at least ``min_calls`` calls.
4. **Inject**: per seed and test session one insertion point (between call ``head`` and
   ``tail`` calls before the end, at a response boundary) shared by every kind; per kind one
   injected copy of the session. All injected sessions of a kind are scored in one batch; every
   session is its own stream, so its scores depend on that session only.
5. **Thresholds** per cue set × detector, two modes: ``fa_target`` — from one grid (the normal
   test sessions' maxima), the smallest threshold at which at most ``target_fa`` of normal test
   sessions ever alarm (the level actually reached is reported); ``operating_point`` — the
   model's calibration thresholds, with the false-alarm rate they reach on the test sessions.
6. **Metrics** (:mod:`toolwatch.injection.experiment.metrics`): detection within the window,
   latency, bootstrap intervals over sessions, per-call AUC (inserted calls vs the other calls
   of the injected sessions, ranked by the cue set's per-call score).
7. **Ablation** ``no_response_ids``: the same injected sessions with every response id dropped
   (train and calibration too): every gap becomes a different-response gap.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
from tqdm import tqdm

import toolwatch.injection.experiment.metrics as M
from toolwatch.detection import NormalModel
from toolwatch.injection.experiment.config import THIN_TEST, VARIANTS, ExperimentConfig
from toolwatch.injection.experiment.outcomes import evaluate_seed, merge_kind, normal_outcomes
from toolwatch.injection.experiment.pooled_auc import PooledAUC
from toolwatch.injection.experiment.results import (
    CellResult,
    ExperimentResult,
    RunOutcomes,
    Threshold,
)
from toolwatch.injection.experiment.runs import build_runs
from toolwatch.injection.experiment.scoring import (
    NOVELTY,
    STATISTICS,
    STUDY_STATISTICS,
    drop_response_ids,
    fit_model,
    operating_thresholds,
    score_groups,
)
from toolwatch.injection.experiment.split import normal_sessions, split_by_time
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.kinds import PROVENANCE_KINDS
from toolwatch.injection.spans.session_arrays import SessionCalls


def run_experiment(
    calls: pa.Table,
    config: ExperimentConfig | None = None,
    *,
    progress: Callable[[int], Any] | None = None,
    run_id: str | None = None,
) -> ExperimentResult:
    """Run the whole protocol on a call table (e.g. everything in a store)."""
    config = config or ExperimentConfig()
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = timings.get(name, 0.0) + now - clock
        clock = now

    sessions = normal_sessions(calls)
    split = split_by_time(sessions, config)
    measured = _provenance_measured(split.train)
    config = dataclasses.replace(  # the default split resolved: a saved run repeats exactly
        config,
        split_dates=split.spec.dates,
        split_shares=split.spec.shares,
        kinds=config.kinds
        if measured
        else tuple(k for k in config.kinds if k not in PROVENANCE_KINDS),
    )
    statistics = STATISTICS if measured else (*STUDY_STATISTICS, *NOVELTY)
    context = InjectionContext.from_sessions(split.train)
    lap("load_split")

    normal = list(split.test)
    variants = VARIANTS if config.ablation else VARIANTS[:1]
    thresholds: dict[tuple[str, str, str, str], Threshold] = {}
    weights = M.bootstrap_weights(len(split.test), config.bootstrap, config.bootstrap_seed)
    artefacts = [
        (quirk, s) for quirk, groups in split.artefacts.items() for g in groups.values() for s in g
    ]
    summary = split.summary()
    lengths = np.array([len(s) for s in normal], dtype=np.int64)
    cue_sets = tuple(dict.fromkeys(cue for cue, _ in statistics))
    models: dict[str, NormalModel] = {}
    for variant in variants:
        ablate = variant == "no_response_ids"
        train = drop_response_ids(split.train) if ablate else split.train
        calib = drop_response_ids(split.calibration) if ablate else split.calibration
        models[variant] = fit_model(train, calib, config)
    lap("fit")

    # One seed at a time, each variant's runs in one batch (the normal test and artefact streams
    # in the first): only the runs' summaries outlive a seed's injected sessions and scores, so
    # memory stays that of one seed (a 100,000-call stream: 4.2 GB for five seeds, now 1.1).
    kinds = config.kinds
    normal_runs: dict[str, RunOutcomes] = {}
    pieces: dict[tuple[str, str], list[RunOutcomes]] = {(v, k): [] for v in variants for k in kinds}
    aucs: dict[tuple[str, str], dict[str, PooledAUC]] = {}
    notes: dict[str, dict[str, int]] = {k: {} for k in kinds}
    skipped: dict[str, dict[str, int]] = {k: {} for k in kinds}
    for seed in config.seeds:
        one_seed = dataclasses.replace(config, seeds=(seed,))
        seed_runs = list(build_runs(split.test, context, one_seed, progress=progress).values())
        for r in seed_runs:
            _count(notes[r.kind], r.note_counts())
            _count(skipped[r.kind], r.skipped)
        lap("inject")
        for variant in variants:
            first = variant not in normal_runs
            groups = [r.sessions for r in seed_runs]
            if first:
                groups = [normal, [s for _, s in artefacts], *groups]
            if variant == "no_response_ids":
                groups = [drop_response_ids(g) for g in groups]
            kind_stats = score_groups(models[variant], groups)
            del groups
            lap("score")
            if first:
                normal_stats, artefact_stats, *kind_stats = kind_stats
                normal_runs[variant] = _normal_thresholds(
                    variant, models[variant], normal, normal_stats, thresholds, config, statistics
                )
                if variant == "standard" and artefacts:
                    _score_artefacts(summary, artefacts, artefact_stats, thresholds, config)
                reference = {c: M.nan_as_lowest(normal_stats[f"{c}_point"]) for c in cue_sets}
                for k in kinds:
                    aucs[(variant, k)] = {c: PooledAUC(reference[c], lengths) for c in cue_sets}
                del normal_stats, artefact_stats
            for runs, stats in zip(seed_runs, kind_stats, strict=True):
                if runs.sessions:
                    piece = evaluate_seed(
                        variant,
                        runs,
                        stats,
                        thresholds,
                        aucs[(variant, runs.kind)],
                        lengths,
                        statistics,
                    )
                    pieces[(variant, runs.kind)].append(piece)
            del kind_stats
            lap("metrics")
        del seed_runs

    cells: list[CellResult] = []
    outcomes: list[RunOutcomes] = []
    for variant in variants:
        outcomes.append(normal_runs[variant])
        for kind in kinds:
            if pieces[(variant, kind)]:
                new_cells, run_out = merge_kind(
                    pieces[(variant, kind)],
                    aucs[(variant, kind)],
                    thresholds,
                    weights,
                    len(split.test),
                )
                cells.extend(new_cells)
                outcomes.append(run_out)
            if progress:
                progress(1)
        lap("metrics")

    notes = {
        k: {**notes[k], **{f"skipped: {reason}": n for reason, n in skipped[k].items()}}
        for k in kinds
    }
    return ExperimentResult(
        run_id=run_id or uuid.uuid4().hex[:12],
        created=datetime.now(UTC),
        config=config,
        split=summary,
        thresholds=thresholds,
        cells=cells,
        notes=notes,
        timings=timings,
        runs=outcomes,
    )


def _normal_thresholds(
    variant: str,
    model: NormalModel,
    normal: list[SessionCalls],
    stats: dict[str, np.ndarray],
    thresholds: dict[tuple[str, str, str, str], Threshold],
    config: ExperimentConfig,
    statistics: tuple[tuple[str, str], ...],
) -> RunOutcomes:
    """Step 5 for one variant: every statistic's thresholds (added to ``thresholds``) from the
    normal test streams' maxima, and those streams as runs of kind ``normal``."""
    op = operating_thresholds(model)
    lengths = np.array([len(s) for s in normal], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    normal_max: dict[str, np.ndarray] = {}
    for cue, det in statistics:
        col = f"{cue}_{det}"
        normal_max[col] = M.session_max(stats[col], starts)
        choice = M.threshold_for_false_alarm(normal_max[col], config.target_fa)
        thresholds[(variant, cue, det, "fa_target")] = Threshold(choice.threshold, choice.reached)
        if len(normal) < THIN_TEST and config.target_fa < 1:
            above = M.threshold_above_false_alarm(normal_max[col], config.target_fa)
            thresholds[(variant, cue, det, "fa_next")] = Threshold(above.threshold, above.reached)
        thresholds[(variant, cue, det, "operating_point")] = Threshold(
            op[col], M.false_alarm_rate(normal_max[col], op[col])
        )
    return normal_outcomes(variant, normal, normal_max, thresholds, config, statistics)


def _count(total: dict[str, int], more: dict[str, int]) -> None:
    """Adds one seed's counts, keeping the order reasons first appear in."""
    for key, n in more.items():
        total[key] = total.get(key, 0) + n


def _provenance_measured(train: list[SessionCalls]) -> bool:
    """Whether training calls carry provenance. Without it (a store imported without it, the
    simulator) the provenance kinds and the provenance cue are left out: they need measured
    carriers and thresholds, and would measure nothing."""
    return any("egress" in s.columns and any(e is not None for e in s["egress"]) for s in train)


def _score_artefacts(
    summary: dict[str, Any],
    artefacts: list[tuple[str, SessionCalls]],
    stats: dict[str, np.ndarray],
    thresholds: dict[tuple[str, str, str, str], Threshold],
    config: ExperimentConfig,
) -> None:
    """How the flagged client artefacts (kept out of the normal streams) score: per quirk, how
    many of the long ones alarm at the all·CUSUM thresholds, and the largest statistic."""
    lengths = np.array([len(s) for _, s in artefacts], dtype=np.int64)
    maxima = M.session_max(stats["all_cusum"], np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    fa = thresholds[("standard", "all", "cusum", "fa_target")].value
    op = thresholds[("standard", "all", "cusum", "operating_point")].value
    for quirk in sorted({q for q, _ in artefacts}):
        flagged = np.array([q == quirk for q, _ in artefacts])
        mine = flagged & (lengths >= config.min_calls)
        summary["artefacts"][quirk]["scored"] = {
            "long": int(mine.sum()),
            "alarming_fa_target": int((maxima[mine] > fa).sum()),
            "alarming_operating_point": int((maxima[mine] > op).sum()),
            "largest_all_cusum": float(maxima[flagged].max()),
        }


def progress_steps(config: ExperimentConfig) -> int:
    """Steps reported through ``progress``: one per seed injected, one per kind scored."""
    variants = 2 if config.ablation else 1
    return len(config.seeds) + len(config.kinds) * variants


def run_with_progress(
    calls: pa.Table,
    config: ExperimentConfig,
    *,
    run_id: str | None = None,
    leave: bool = True,
) -> ExperimentResult:
    """:func:`run_experiment` with a progress bar on stderr (shared by ``toolwatch experiment``
    and ``toolwatch demo``)."""
    with tqdm(
        total=progress_steps(config),
        desc="experiment",
        unit="step",
        file=sys.stderr,
        disable=None,
        leave=leave,
    ) as bar:
        return run_experiment(calls, config, progress=bar.update, run_id=run_id)
