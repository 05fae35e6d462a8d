"""The controls as a validity check: a statistic that detects a control above the false-alarm
level reacts to the insertion itself and is never offered as a best single cue."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from support.dev_real import later_users_experiment
from toolwatch.injection.experiment.report import (
    best_detector_per_cue,
    best_single_cue,
    headline,
    render,
    summary,
)
from toolwatch.injection.experiment.results import ExperimentResult
from toolwatch.injection.experiment.validity import control_breaches


def _with_control(result: ExperimentResult, cue: str, det: str, rate: float) -> ExperimentResult:
    """``result`` with the other-normal control of ``cue``·``det`` detected at ``rate``
    (interval ± 0.05)."""
    out = copy.copy(result)
    out.cells = [
        dataclasses.replace(c, rate=rate, ci_low=rate - 0.05, ci_high=rate + 0.05)
        if c.key() == ("standard", "control_other_normal", cue, det, "fa_target")
        else c
        for c in result.cells
    ]
    return out


def test_a_quiet_control_breaches_nothing(result: ExperimentResult) -> None:
    assert control_breaches(result) == {}
    assert "react to the insertion itself" not in render(result)
    assert summary(result)["control_breaches"] == []


def test_a_loud_control_takes_its_statistic_out_of_the_best_cues(result: ExperimentResult) -> None:
    before = best_single_cue(result, "burst")
    assert before is not None and before[:2] == ("time", "point")
    loud = _with_control(result, "time", "point", 0.6)
    breach = control_breaches(loud)[("time", "point")]
    fa = result.thresholds[("standard", "time", "point", "fa_target")].fa_reached
    assert breach.kind == "control_other_normal" and breach.fa_reached == pytest.approx(fa)
    assert breach.rate == 0.6
    after = best_single_cue(loud, "burst", exclude=control_breaches(loud))
    assert after is not None and after[:2] != ("time", "point")
    assert best_detector_per_cue(loud, exclude=control_breaches(loud))["time"] != "point"
    text = render(loud)
    assert "time·point (control: other normal 8 60% (55–65) at" in text
    # with every time detector loud, the headline shows the best valid cue and the louder
    # one beside it, marked
    all_loud = _with_control(_with_control(loud, "time", "ewma", 0.6), "time", "cusum", 0.6)
    valid = best_single_cue(all_loud, "burst", exclude=control_breaches(all_loud))
    assert valid is not None and valid[0] != "time"
    assert f"{valid[0]}·{valid[1]} {round(100 * valid[2])}% (time·" in render(all_loud)
    row = next(h for h in summary(all_loud)["headline"] if h["kind"] == "burst")
    assert row["louder_single_cue_reacting_to_insertion"]["cue"] == "time"
    quiet = next(h for h in summary(result)["headline"] if h["kind"] == "burst")
    assert quiet["louder_single_cue_reacting_to_insertion"] is None
    assert summary(loud)["control_breaches"][0]["cue_set"] == "time"
    burst = next(h for h in summary(loud)["headline"] if h["kind"] == "burst")
    assert burst["best_single_cue"] == {"cue": after[0], "detector": after[1], "rate": after[2]}
    # a control exactly at the level reached is no breach: the whole interval must lie above
    edge = _with_control(result, "time", "point", fa + 0.05)
    assert ("time", "point") not in control_breaches(edge)


def test_the_headline_warns_when_all_cusum_itself_reacts(result: ExperimentResult) -> None:
    loud = _with_control(result, "all", "cusum", 0.5)
    warning = "warning: all·CUSUM detects control: other normal 8 in 50% (45–55)"
    assert warning in headline(loud) and warning in render(loud)
    assert warning not in headline(result)


def test_real_users_whose_pace_differs_expose_the_time_cue() -> None:
    """dev-real's later users only (streams from 2026-02-11): a Windows user's fast subagents
    train the model, slower users test it, so calls copied from training look fast."""
    real = later_users_experiment()
    breached = control_breaches(real)
    assert ("time", "point") in breached and ("all", "cusum") not in breached
    best = best_single_cue(real, "runaway_retry", exclude=breached)
    assert best is not None and (best[0], best[1]) not in breached
    assert "react to the insertion itself" in render(real)
