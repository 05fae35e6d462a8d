"""The false-alarm levels an experiment reached, said as ``k/n`` normal test streams, and the
warnings when a split is too thin for its numbers: a test split of few streams (coarse
levels, :data:`~toolwatch.injection.experiment.config.THIN_TEST`) and a calibration split of
few streams or calls (an operating point resting on them, as ``toolwatch train`` warns).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwatch.detection import ModelConfig
from toolwatch.detection.model.thresholds import thin_calibration
from toolwatch.injection.experiment.config import THIN_TEST
from toolwatch.injection.experiment.formats import pct, target_pct
from toolwatch.injection.experiment.results import HEADLINE, ExperimentResult
from toolwatch.words import counted


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
    if t is None:
        return ""
    return level_sentence(t.fa_reached, result.split["test"][0])


def level_sentence(reached: float, n: int) -> str:
    """A level reached over ``n`` normal test streams, as every table says it (``4.7% =
    3/64 streams``); the dashboard says it from the stored cells with this same function."""
    return f"{pct(reached, 1)} = {round(reached * n)}/{counted(n, 'stream')}"


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
    below = fa_sentence(result, *HEADLINE) or "–"
    above = fa_sentence(result, *HEADLINE, mode="fa_next") or "–"
    return thin_test_text(result.split["test"][0], result.config.target_fa, below, above)


def thin_test_text(
    n: int, target_fa: float, below: str, above: str, *, both_shown: bool = True
) -> str | None:
    """:func:`thin_warning` from its parts (the dashboard has the stored cells, not a result):
    ``below``/``above`` the levels nearest the target (:func:`level_sentence`);
    ``both_shown``: detection is shown at both levels (the report's headline, the dashboard
    at the stored target), else that clause is left out."""
    if n >= THIN_TEST:
        return None
    streams = "stream" if n == 1 else "streams"
    return (
        f"warning: the test split is thin — only {n} normal test {streams} (< {THIN_TEST}), so "
        f"the false-alarm rate moves in steps of at least 1/{n} = {pct(1 / n, 1)}; the reachable "
        f"levels nearest the target {target_pct(target_fa)} are {below} (not above "
        f"it) and {above} (above it)"
        + (", and detection is shown at both" if both_shown else "")
        + "; the intervals, resampled from so few streams, understate the uncertainty (a rate "
        "every stream shares gets a zero-width interval)"
    )


def thin_calibration_warning(result: ExperimentResult) -> str | None:
    """A warning when the calibration split is too small for the operating point it sets (the
    report's "Operating point" table and the ablation's false alarms), as ``train`` warns."""
    streams, calls = result.split["calibration"][:2]
    return thin_calibration_text(int(streams), int(calls), result.config.model)


def thin_calibration_text(streams: int, calls: int, model: Mapping[str, Any]) -> str | None:
    """:func:`thin_calibration_warning` from the saved split counts and the run's model knobs
    (``config["model"]``), as the dashboard reads them from a stored run."""
    quantile = ModelConfig.from_dict(dict(model)).operating_quantile
    if streams == 0:  # the protocol then calibrates on the training calls (scoring.fit_model)
        return (
            f"warning: the calibration split is empty, so the operating point is the top "
            f"{1 - quantile:.2%} of the training calls' statistics (in-sample: it alarms on more "
            "streams than a held-out threshold would); give calibration a share "
            "(--split-shares) or days (--split-dates)"
        )
    why = thin_calibration(streams, calls, quantile)
    return f"warning: {why}" if why else None
