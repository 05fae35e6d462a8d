"""Detection results at any false-alarm target, and the detection-vs-false-alarm (ROC) curves.

The experiment stores, per injected run and per normal test stream, the largest detector
statistic inside the run's detection window (``experiment_runs.window_max``; for a normal
stream its maximum). A threshold ``h`` detects a run when that value is above ``h`` and makes a
normal stream alarm when its maximum is, so every target and the whole ROC curve follow from
the stored rows with the experiment's own functions (:mod:`toolwatch.injection.experiment.metrics`):
the threshold is ``threshold_for_false_alarm`` over the normal maxima, the rates and intervals
``stream_rates`` with the run's resample count and seed over the streams in the experiment's
own order (``experiment_runs.stream_index``), so any target gives what ``toolwatch experiment
--rerun RUN --target-fa TARGET`` prints; the area under a curve is ``auc`` of runs against
normal streams. A run saved before ``stream_index`` is resampled in stream-name order: its
intervals are approximate, and the page says so.

Also: the study's published figure beside a cell (:mod:`toolwatch.study`), as display text.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pandas as pd

from toolwatch import study
from toolwatch.injection.experiment import metrics as M
from toolwatch.injection.experiment.formats import pct, rate_ci
from toolwatch.injection.spans.kinds import ALL_KINDS

NORMAL: Final = "normal"
CELL_COLUMNS: Final[tuple[str, ...]] = (
    "cue_set",
    "detector",
    "kind",
    "threshold",
    "fa_target",
    "fa_reached",
    "normal_sessions",
    "runs",
    "detected",
    "rate",
    "ci_low",
    "ci_high",
    "ci_exact",
)


def cells_at_target(
    maxima: pd.DataFrame,
    target: float,
    resamples: int = 2000,
    seed: int = 0,
    *,
    above: bool = False,
) -> pd.DataFrame:
    """Detection per cue set × detector × kind at the smallest threshold that keeps the share
    of alarming normal streams within ``target``: what ``toolwatch experiment --rerun RUN
    --target-fa TARGET`` prints, rates and intervals alike.

    ``maxima``: rows of ``cue_set, detector, kind, session_id, stream_index, window_max`` (kind
    ``normal`` = the uninjected test streams), as
    :func:`toolwatch.app.dashboard.queries.experiment_run_maxima`. The bootstrap resamples the
    streams in the experiment's own order (``stream_index``); a run saved before that column
    has only the stream names, so its streams are taken in name order and its intervals are
    approximate (``ci_exact`` false).

    ``above``: at the smallest reachable level *above* ``target`` instead (the report's
    ``fa_next`` column on a thin test split), as the experiment picks it.
    """
    pick = M.threshold_above_false_alarm if above else M.threshold_for_false_alarm
    rows: list[dict[str, object]] = []
    if maxima.empty:
        return pd.DataFrame(columns=list(CELL_COLUMNS))
    exact = "stream_index" in maxima and bool(maxima["stream_index"].notna().all())
    # numpy arrays once: pandas indexing per cell costs more than the statistics
    combo_codes, combos = pd.factorize(
        maxima["cue_set"].astype(str) + "\x00" + maxima["detector"].astype(str), sort=True
    )
    kind_codes, kinds = pd.factorize(maxima["kind"], sort=True)
    if exact:  # the experiment's own stream order, whatever the streams are called
        stream_codes = maxima["stream_index"].to_numpy(np.int64)
    else:
        stream_codes = pd.factorize(maxima["session_id"], sort=True)[0]
    values = np.nan_to_num(maxima["window_max"].to_numpy(float), nan=-np.inf)
    normal_code = list(kinds).index(NORMAL) if NORMAL in set(kinds) else -1
    weights_cache: dict[int, np.ndarray] = {}
    for c, combo in enumerate(combos):
        cue_set, detector = str(combo).split("\x00")
        in_combo = combo_codes == c
        is_normal = in_combo & (kind_codes == normal_code)
        if not is_normal.any():
            continue
        # the normal test streams index the bootstrap, in the order above
        streams = np.unique(stream_codes[is_normal])
        position = np.full(int(stream_codes.max()) + 1, -1, dtype=np.int64)
        position[streams] = np.arange(streams.size)
        normal_max = np.full(streams.size, -np.inf)
        np.maximum.at(normal_max, position[stream_codes[is_normal]], values[is_normal])
        choice = pick(normal_max, target)
        detected, stream, names = [], [], []
        for k, kind in enumerate(kinds):
            if k == normal_code:
                continue
            sel = in_combo & (kind_codes == k)
            index = position[stream_codes[sel]]
            keep = index >= 0
            detected.append(values[sel][keep] > choice.threshold)
            stream.append(index[keep])
            names.append(str(kind))
        if not names:
            continue
        if streams.size not in weights_cache:
            weights_cache[streams.size] = M.bootstrap_weights(streams.size, resamples, seed)
        rates, lo, hi = M.stream_rates(detected, stream, streams.size, weights_cache[streams.size])
        for j, kind in enumerate(names):
            rows.append(
                {
                    "cue_set": cue_set,
                    "detector": detector,
                    "kind": kind,
                    "threshold": choice.threshold,
                    "fa_target": float(target),
                    "fa_reached": choice.reached,
                    "normal_sessions": int(streams.size),
                    "runs": int(detected[j].size),
                    "detected": int(detected[j].sum()),
                    "rate": float(rates[j]),
                    "ci_low": float(lo[j]),
                    "ci_high": float(hi[j]),
                    "ci_exact": exact,
                }
            )
    return pd.DataFrame(rows, columns=list(CELL_COLUMNS))


def roc_curves(maxima: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per kind, the (false-alarm rate, detection rate) pairs over every threshold (``step``:
    threshold rank, lowest first, so the curve runs from (1, 1) to (0, 0)), and the
    area under each curve (probability that a run's window maximum exceeds a normal session's
    maximum, ties half). ``maxima``: one cue set × detector (kind, session_id, window_max)."""
    points: list[pd.DataFrame] = []
    areas: list[dict[str, object]] = []
    normal = maxima.loc[maxima["kind"] == NORMAL, "window_max"].to_numpy(float)
    normal = np.nan_to_num(normal, nan=-np.inf)
    if normal.size == 0:
        return (
            pd.DataFrame(columns=["kind", "step", "false_alarm", "detection"]),
            pd.DataFrame(columns=["kind", "auc"]),
        )
    for kind in sorted(k for k in maxima["kind"].unique() if k != NORMAL):
        runs = maxima.loc[maxima["kind"] == kind, "window_max"].to_numpy(float)
        runs = np.nan_to_num(runs, nan=-np.inf)
        if runs.size == 0:
            continue
        grid = np.unique(np.concatenate([normal, runs]))
        thresholds = np.concatenate([[-np.inf], grid])  # from everything alarming to nothing
        fa = _share_above(normal, thresholds)
        dr = _share_above(runs, thresholds)
        points.append(
            pd.DataFrame(
                {"kind": kind, "step": np.arange(fa.size), "false_alarm": fa, "detection": dr}
            )
        )
        positive = np.concatenate([np.ones(runs.size, bool), np.zeros(normal.size, bool)])
        areas.append({"kind": kind, "auc": M.auc(np.concatenate([runs, normal]), positive)})
    if not points:
        return (
            pd.DataFrame(columns=["kind", "step", "false_alarm", "detection"]),
            pd.DataFrame(columns=["kind", "auc"]),
        )
    return pd.concat(points, ignore_index=True), pd.DataFrame(areas)


def thin_curves(points: pd.DataFrame, most: int) -> pd.DataFrame:
    """At most ``most`` points per curve, for drawing: evenly spaced steps, the first and last
    kept, so the curve keeps its shape while the chart stays light on a large store."""
    parts = []
    for _, part in points.groupby("kind", sort=False):
        if len(part) > most:
            keep = np.unique(np.linspace(0, len(part) - 1, most).round().astype(int))
            part = part.iloc[keep]
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else points


def _share_above(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    ordered = np.sort(values)
    above = ordered.size - np.searchsorted(ordered, thresholds, side="right")
    return np.asarray(above / ordered.size, dtype=float)


# ------------------------------------------------------------------------------ the study


def kind_order(kinds: list[str]) -> list[str]:
    """Kinds in the report's order (the study's, then any other by name)."""
    known = [k for k in ALL_KINDS if k in kinds]
    return known + sorted(k for k in kinds if k not in ALL_KINDS)


def study_rate(kind: str, cue_set: str, detector: str) -> str:
    """The study's detection rate for this cell, as text (empty when it published none)."""
    if (cue_set, detector) == ("all", "cusum") and kind in study.DETECTION_ALL_CUSUM:
        rate, lo, hi = study.DETECTION_ALL_CUSUM[kind]
        return rate_ci(rate, lo, hi)
    single = study.DETECTION_SINGLE_CUE.get(kind)
    if single is not None and single[0] == cue_set:
        return f"{pct(single[1])} (best detector)"
    if kind == "runaway_retry" and cue_set == "time":
        return f"{pct(study.RUNAWAY_TIME_ONLY)} (best detector)"
    return ""


def study_auc(kind: str, cue_set: str) -> float | None:
    """The study's per-call AUC (all cues) for ``kind``."""
    return study.AUC.get(kind) if cue_set == "all" else None


def study_latency(kind: str) -> str:
    entry = study.LATENCY.get(kind)
    if entry is None:
        return ""
    calls, cue, det = entry
    return f"{calls} ({cue}·{det})"
