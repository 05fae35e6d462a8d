"""Detectors against textbook sequences; batch == online; thresholds."""

from __future__ import annotations

import random

import numpy as np
import pytest

from toolwatch.detection import DETECTORS, run_detector, threshold_at_false_alarm
from toolwatch.detection.detectors.base import Detector
from toolwatch.detection.detectors.cusum import CUSUM
from toolwatch.detection.detectors.ewma import EWMA
from toolwatch.detection.detectors.point import Point
from toolwatch.detection.model.thresholds import false_alarm_share, operating_threshold

ALL: list[Detector] = [Point(), EWMA(0.3), CUSUM(0.5)]


def test_the_three_detectors_are_the_exported_ones() -> None:
    assert tuple(d.name for d in ALL) == DETECTORS


def test_cusum_textbook_sequence() -> None:
    # Page: S = max(0, S + x - k), k = 0.5
    x = [0.2, 1.5, 1.5, -0.3, 2.0, -3.0, 0.6]
    d = CUSUM(0.5)
    got = [d.update(v) for v in x]
    assert got == pytest.approx([0.0, 1.0, 2.0, 1.2, 2.7, 0.0, 0.1])


def test_cusum_accumulates_a_sustained_shift_but_not_noise_around_zero() -> None:
    d = CUSUM(0.5)
    for v in [0.4, -0.4] * 50:  # in control: never above 0
        assert d.update(v) == 0.0
    shifted = [d.update(1.5) for _ in range(10)]  # shift of 1.5 σ: grows by 1 per call
    assert shifted == pytest.approx([float(i) for i in range(1, 11)])


def test_ewma_textbook_sequence() -> None:
    d = EWMA(0.3)
    got = [d.update(v) for v in [1.0, 2.0, 3.0, 0.0]]
    # the study: E₋₁ = 0; E = 0.3 x + 0.7 E
    assert got == pytest.approx([0.3, 0.81, 1.467, 1.0269])
    first = EWMA(0.3, start="first")  # the named variant: E0 = x0
    assert [first.update(v) for v in [1.0, 2.0, 3.0, 0.0]] == pytest.approx([1.0, 1.3, 1.81, 1.267])


def test_point_is_the_score() -> None:
    assert [Point().update(v) for v in (-1.0, 0.0, 7.5)] == [-1.0, 0.0, 7.5]


@pytest.mark.parametrize(
    "proto", [*ALL, EWMA(0.3, start="first")], ids=["point", "ewma", "cusum", "ewma-first"]
)
def test_batch_run_equals_per_stream_updates_bit_for_bit(proto: Detector) -> None:
    rng = random.Random(7)
    lengths = [rng.randint(1, 40) for _ in range(60)]
    x = np.array([rng.gauss(0, 2) for _ in range(sum(lengths))])
    starts = np.zeros(x.shape[0], dtype=bool)
    starts[np.cumsum([0, *lengths[:-1]])] = True
    want = []
    i = 0
    for n in lengths:
        d = proto.clone()
        want.extend(d.update(float(v)) for v in x[i : i + n])
        i += n
    assert proto.run(x, starts).tolist() == want
    if getattr(proto, "start", "zero") == "zero":  # run_detector: the study's detectors
        assert run_detector(proto.name, x, starts).tolist() == want
        assert run_detector(proto.name, x, np.flatnonzero(starts)).tolist() == want


def test_run_detector_resets_at_each_start_and_validates() -> None:
    x = np.ones(4)
    assert run_detector("cusum", x, np.array([False, False, True, False])).tolist() == [
        0.5,
        1.0,
        0.5,
        1.0,
    ]
    assert run_detector("ewma", np.array([2.0, 0.0]), np.array([1]), alpha=0.5).tolist() == [
        1.0,
        0.0,
    ]
    with pytest.raises(ValueError, match="unknown detector 'median'"):
        run_detector("median", x, np.array([0]))
    with pytest.raises(ValueError, match="shape"):
        run_detector("point", x, np.array([True, False]))
    assert run_detector("cusum", np.zeros(0), np.zeros(0, dtype=bool)).shape == (0,)


def test_clone_starts_a_fresh_stream() -> None:
    d = CUSUM(0.5)
    d.update(3.0)
    assert d.clone().update(1.0) == 0.5
    e = EWMA(0.3)
    e.update(5.0)
    assert e.clone().update(1.0) == 0.3
    f = EWMA(0.3, start="first")
    f.update(5.0)
    assert f.clone().update(1.0) == 1.0


def test_detector_parameters_are_validated() -> None:
    with pytest.raises(ValueError):
        EWMA(0.0)
    with pytest.raises(ValueError, match="start"):
        EWMA(0.3, start="middle")
    with pytest.raises(ValueError):
        CUSUM(-1.0)


# ------------------------------------------------------------------ thresholds


def test_operating_point_leaves_at_most_a_tenth_of_a_percent_above() -> None:
    rng = np.random.default_rng(0)
    for n in (1000, 3144, 12345):
        values = rng.normal(size=n)
        thr = operating_threshold(values, 0.999)
        above = int((values > thr).sum())
        assert above <= 0.001 * n
        assert above >= 0.001 * n - 1  # and no more conservative than one call
    assert operating_threshold(np.array([3.0]), 0.999) == 3.0
    with pytest.raises(ValueError):
        operating_threshold(np.zeros(0))


def test_threshold_at_false_alarm_picks_the_smallest_grid_value_within_target() -> None:
    maxima = np.arange(1.0, 101.0)  # 100 sessions, max 1..100
    grid = np.linspace(0, 120, 241)  # step 0.5
    thr = threshold_at_false_alarm(maxima, target=0.05, grid=grid)
    assert thr == 95.0  # sessions 96..100 alarm: 5 %
    assert false_alarm_share(maxima, thr) == 0.05
    assert false_alarm_share(maxima, thr - 0.5) > 0.05
    # without a grid: the exact answer from the maxima themselves
    assert threshold_at_false_alarm(maxima, target=0.1) == 90.0
    with pytest.raises(ValueError, match="extend the grid"):
        threshold_at_false_alarm(maxima, target=0.05, grid=[10.0, 20.0])
    with pytest.raises(ValueError, match="no normal sessions"):
        threshold_at_false_alarm(np.zeros(0))
