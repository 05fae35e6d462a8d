"""The false-alarm levels an experiment reached, said as ``k/n`` normal test streams, and the
warnings when a split is too thin for its numbers: a test split of few streams (coarse
levels, :data:`~toolwatch.injection.experiment.config.THIN_TEST`) and a calibration split of
few streams or calls (an operating point resting on them, as ``toolwatch train`` warns).
"""

from __future__ import annotations

from toolwatch.detection import ModelConfig
from toolwatch.detection.model.thresholds import thin_calibration
from toolwatch.injection.experiment.config import THIN_TEST
from toolwatch.injection.experiment.formats import pct, target_pct
from toolwatch.injection.experiment.results import HEADLINE, ExperimentResult


def alarming(
    result: ExperimentResult,
    cue: str,
    det: str,
    variant: str = "standard",
    mode: str = "fa_target",
) -> tuple[int, int] | None:
    """``(k, n)``: the normal test streams alarming at this statistic's threshold, of ``n``;
    ``None`` when the experiment has no such threshold."""
    t = result.thresholds.get((variant, cue, det, mode))
    if t is None:
        return None
    n = result.split["test"][0]
    return round(t.fa_reached * n), n


def fa_sentence(
    result: ExperimentResult,
    cue: str,
    det: str,
    variant: str = "standard",
    mode: str = "fa_target",
) -> str:
    """The level reached at this statistic's threshold: ``4.7% = 3/64 streams``."""
    t = result.thresholds.get((variant, cue, det, mode))
    k_n = alarming(result, cue, det, variant, mode)
    if t is None or k_n is None:
        return ""
    return f"{pct(t.fa_reached, 1)} = {k_n[0]}/{k_n[1]} streams"


def fa_header(result: ExperimentResult, cue: str = "all", det: str = "cusum") -> str:
    """The level a table stands at, as reached (k/n), then the target asked for."""
    t = result.thresholds.get(("standard", cue, det, "fa_target"))
    k_n = alarming(result, cue, det)
    target = target_pct(result.config.target_fa)
    if t is None or k_n is None:
        return f"at {target} false alarms"
    return (
        f"at {pct(t.fa_reached, 1)} false alarms ({k_n[0]}/{k_n[1]} normal test streams alarm; "
        f"target {target})"
    )


def thin_warning(result: ExperimentResult) -> str | None:
    """A warning when the normal test streams are too few for the target to be met closely."""
    n = result.split["test"][0]
    if n >= THIN_TEST:
        return None
    below = fa_sentence(result, *HEADLINE) or "–"
    above = fa_sentence(result, *HEADLINE, mode="fa_next") or "–"
    streams = "stream" if n == 1 else "streams"
    return (
        f"warning: the test split is thin — only {n} normal test {streams} (< {THIN_TEST}), so "
        f"the false-alarm rate moves in steps of at least 1/{n} = {pct(1 / n, 1)}; the reachable "
        f"levels nearest the target {target_pct(result.config.target_fa)} are {below} (not above "
        f"it) and {above} (above it), and detection is shown at both; the intervals, resampled "
        f"from so few streams, understate the uncertainty (a rate every stream shares gets a "
        f"zero-width interval)"
    )


def thin_calibration_warning(result: ExperimentResult) -> str | None:
    """A warning when the calibration split is too small for the operating point it sets (the
    report's "Operating point" table and the ablation's false alarms), as ``train`` warns."""
    streams, calls = result.split["calibration"][:2]
    quantile = ModelConfig.from_dict(dict(result.config.model)).operating_quantile
    why = thin_calibration(int(streams), int(calls), quantile)
    return f"warning: {why}" if why else None
