"""Do the controls stay quiet? The study's two controls check that a detector reacts to the
anomaly and not to the act of inserting calls (BRIEF §3: "reaction to insertion itself").

A control run is a normal test stream with a benign edit, and it counts as detected only for an
alarm inside the detection window, so a statistic blind to the edit detects a control *at most*
as often as a normal stream alarms at all (the false-alarm level reached). A statistic whose
control detection lies above that level with its whole 95 % interval reacts to the edit itself:
e.g. the time cue when the calls copied from training (or gaps drawn from it) are faster than the
test split's own pace, a drift between users that the controls expose. Its rates for the anomaly
kinds then measure the edit, not the anomaly, so the report never offers it as a best cue and
says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, TypeVar

from toolwatch.injection.experiment.formats import label, pct, rate_ci
from toolwatch.injection.experiment.results import CellResult, ExperimentResult
from toolwatch.injection.spans.kinds import CONTROL_KINDS


class CellLike(Protocol):
    """What a breach is judged on: an experiment's cell, a dashboard row (``itertuples``)."""

    cue_set: str
    detector: str
    kind: str
    rate: float
    ci_low: float
    ci_high: float
    fa_reached: float


Cell = TypeVar("Cell", bound=CellLike)


def breaches_in(cells: Iterable[Cell]) -> dict[tuple[str, str], Cell]:
    """``(cue set, detector)`` -> its worst control cell (the highest interval low), for every
    statistic a control exposes, over cells of one threshold mode."""
    out: dict[tuple[str, str], Cell] = {}
    for c in cells:
        if c.kind not in CONTROL_KINDS or not c.ci_low > c.fa_reached:  # NaN never breaches
            continue
        key = (str(c.cue_set), str(c.detector))
        if key not in out or c.ci_low > out[key].ci_low:
            out[key] = c
    return dict(sorted(out.items()))


def control_breaches(
    result: ExperimentResult, variant: str = "standard", mode: str = "fa_target"
) -> dict[tuple[str, str], CellResult]:
    """The breaches of one variant's cells at one threshold mode (the target by default)."""
    return breaches_in(c for c in result.cells if c.variant == variant and c.mode == mode)


def reacts_to_insertion(name: str, b: CellLike) -> str:
    """``<name> detects <control> in 75% (68–81) of its runs, above the 5.3% of normal streams
    that alarm: it reacts to the insertion itself`` (the report's warning, the app's too)."""
    return (
        f"{name} detects {label(b.kind)} in {rate_ci(b.rate, b.ci_low, b.ci_high)} of its "
        f"runs, above the {pct(b.fa_reached, 1)} of normal streams that alarm: it reacts to the "
        "insertion itself"
    )


def control_note(breached: Mapping[tuple[str, str], CellLike]) -> str | None:
    """The report's note naming every statistic whose controls breach, or ``None``."""
    if not breached:
        return None
    return (
        "controls detected above the false-alarm level, so these statistics react to the "
        "insertion itself (e.g. a pace that differs between training and test), not to the "
        "anomaly; their rates are not offered as a best single cue: "
        + ", ".join(
            f"{b.cue_set}·{b.detector} ({label(b.kind)} {rate_ci(b.rate, b.ci_low, b.ci_high)} "
            f"at {pct(b.fa_reached, 1)} false alarms)"
            for b in breached.values()
        )
    )
