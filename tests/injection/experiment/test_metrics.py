"""Detection window, latency, false-alarm level choice, bootstrap and AUC vs references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwatch.injection.experiment import metrics as M


def test_detection_window_rule() -> None:
    assert int(M.detection_window(1)) == 20
    assert int(M.detection_window(10)) == 20
    assert int(M.detection_window(15)) == 25
    assert list(M.detection_window(np.array([3, 8, 12]))) == [20, 20, 22]


def test_latency_on_hand_made_sessions() -> None:
    # session of 40 calls, insertion at 12, window 20 (calls 12..31)
    stat = np.zeros(40)
    stat[5] = 9.0  # before insertion: never counts
    assert M.first_alarm_latency(stat, 1.0, 12, 20) is None
    stat[12] = 2.0
    assert M.first_alarm_latency(stat, 1.0, 12, 20) == 1  # alarm on the first injected call
    stat[12] = 0.0
    stat[16] = 2.0
    assert M.first_alarm_latency(stat, 1.0, 12, 20) == 5
    stat[16] = 0.0
    stat[31] = 2.0  # last call of the window
    assert M.first_alarm_latency(stat, 1.0, 12, 20) == 20
    stat[31] = 0.0
    stat[32] = 2.0  # one past the window
    assert M.first_alarm_latency(stat, 1.0, 12, 20) is None
    stat[20] = 1.0  # equal to the threshold is not above it
    assert M.first_alarm_latency(stat, 1.0, 12, 20) is None
    stat[20] = np.nan
    assert M.first_alarm_latency(stat, -5.0, 12, 20) == 1  # NaN never alarms, zeros do


def test_vectorised_outcomes_match_the_reference() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(30, 80, size=50)
    positions = np.array([rng.integers(10, n - 9) for n in lengths])
    inserted = rng.integers(1, 16, size=50)
    layout = M.RunLayout.build(lengths, positions, inserted)
    stat = rng.normal(size=int(lengths.sum()))
    stat[rng.random(stat.size) < 0.05] = np.nan
    for thr in (0.5, 1.5, 2.5, 10.0):
        detected, latency = M.window_outcomes(stat, layout, thr)
        wmax = M.window_max(stat, layout)
        for r in range(50):
            a = layout.starts[r]
            s = stat[a : a + lengths[r]]
            ref = M.first_alarm_latency(s, thr, int(positions[r]), int(layout.windows[r]))
            assert detected[r] == (ref is not None)
            assert latency[r] == (ref or 0)
            assert (wmax[r] > thr) == detected[r]
    # per-run thresholds
    thr = rng.uniform(0, 2, size=50)
    detected, _ = M.window_outcomes(stat, layout, thr)
    for r in range(50):
        a = layout.starts[r]
        s = stat[a : a + lengths[r]]
        ref = M.first_alarm_latency(s, thr[r], int(positions[r]), int(layout.windows[r]))
        assert detected[r] == (ref is not None)


def test_session_max_and_false_alarm_rate() -> None:
    stat = np.array([1.0, 3.0, np.nan, 0.5, 7.0, 2.0])
    starts = np.array([0, 3, 5])
    assert list(M.session_max(stat, starts)) == [3.0, 7.0, 2.0]
    assert M.false_alarm_rate(np.array([3.0, 7.0, 2.0]), 2.5) == pytest.approx(2 / 3)


def test_false_alarm_level_with_19_sessions_is_0_or_5_3_percent() -> None:
    maxima = np.arange(19, dtype=float)
    choice = M.threshold_for_false_alarm(maxima, 0.05)
    assert choice.reached == 0.0  # 1/19 = 5.3 % is above 5 %: the largest level not above
    assert choice.threshold == 18.0
    assert M.false_alarm_rate(maxima, choice.threshold) == 0.0
    choice = M.threshold_for_false_alarm(maxima, 0.06)
    assert choice.reached == pytest.approx(1 / 19)
    assert choice.threshold == 17.0
    assert M.false_alarm_rate(maxima, choice.threshold) == pytest.approx(1 / 19)


def test_false_alarm_level_with_ties_skips_unreachable_levels() -> None:
    # 20 sessions, the top 3 tied: 5 % (1/20) and 10 % (2/20) are unreachable
    maxima = np.array([*range(17), 50.0, 50.0, 50.0])
    choice = M.threshold_for_false_alarm(maxima, 0.12)
    assert choice.reached == 0.0 and choice.threshold == 50.0
    choice = M.threshold_for_false_alarm(maxima, 0.15)
    assert choice.reached == pytest.approx(0.15) and choice.threshold == 16.0


@given(
    st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=60),
    st.floats(0, 1),
)
@settings(max_examples=200, deadline=None)
def test_false_alarm_choice_is_the_largest_level_not_above_target(
    maxima: list[float], target: float
) -> None:
    m = np.array(maxima)
    choice = M.threshold_for_false_alarm(m, target)
    assert choice.reached <= target + 1e-12
    assert M.false_alarm_rate(m, choice.threshold) == pytest.approx(choice.reached)
    # brute force: every threshold level reachable on this grid
    levels = {M.false_alarm_rate(m, t) for t in [*m.tolist(), np.inf, -np.inf]}
    best = max(v for v in levels if v <= target + 1e-12)
    assert choice.reached == pytest.approx(best)


def test_bootstrap_matches_a_straightforward_loop() -> None:
    rng = np.random.default_rng(1)
    outcomes = (rng.random((64, 5)) < 0.8).astype(float)
    lo, hi = M.bootstrap_rate_ci(outcomes, resamples=500, seed=42)
    ref_rng = np.random.default_rng(42)
    rates = []
    for _ in range(500):
        idx = ref_rng.integers(0, 64, size=64)
        rates.append(outcomes[idx].sum() / outcomes[idx].size)
    assert lo == pytest.approx(np.quantile(rates, 0.025))
    assert hi == pytest.approx(np.quantile(rates, 0.975))
    assert lo < outcomes.mean() < hi
    # deterministic per seed
    assert M.bootstrap_rate_ci(outcomes, resamples=500, seed=42) == (lo, hi)


def test_bootstrap_with_missing_runs() -> None:
    x = np.ones((10, 3))
    x[:, 2] = np.nan
    x[0, 0] = 0
    lo, hi = M.bootstrap_rate_ci(x, resamples=200, seed=0)
    assert 0.8 <= lo <= hi <= 1.0


def _auc_pairwise(scores: np.ndarray, pos: np.ndarray) -> float:
    p, n = scores[pos], scores[~pos]
    total = 0.0
    for a, b in itertools.product(p, n):
        total += 1.0 if a > b else 0.5 if a == b else 0.0
    return total / (len(p) * len(n))


@given(
    st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=2, max_size=40),
)
@settings(max_examples=200, deadline=None)
def test_auc_matches_brute_force_pairwise_count(data: list[tuple[int, bool]]) -> None:
    scores = np.array([float(s) for s, _ in data])
    pos = np.array([p for _, p in data])
    if pos.all() or not pos.any():
        assert np.isnan(M.auc(scores, pos))
        return
    assert M.auc(scores, pos) == pytest.approx(_auc_pairwise(scores, pos))


def test_auc_extremes_and_nan_scores() -> None:
    assert M.auc(np.array([1.0, 2.0, 3.0, 4.0]), np.array([False, False, True, True])) == 1.0
    assert M.auc(np.array([1.0, 2.0, 3.0, 4.0]), np.array([True, True, False, False])) == 0.0
    assert M.auc(np.array([1.0, 1.0]), np.array([True, False])) == 0.5
    # NaN ranks lowest, tied with other NaNs
    assert M.auc(np.array([np.nan, 0.0, np.nan]), np.array([True, False, False])) == 0.25


def test_rank_average() -> None:
    assert list(M.rank_average(np.array([3.0, 1.0, 3.0, 2.0]))) == [3.5, 1.0, 3.5, 2.0]
    assert list(M.rank_average(np.array([-np.inf, -np.inf, 0.0]))) == [1.5, 1.5, 3.0]


def test_bootstrap_weights_give_the_same_intervals_as_the_loop() -> None:
    rng = np.random.default_rng(3)
    outcomes = (rng.random((30, 4)) < rng.random((30, 1))).astype(float)
    outcomes[rng.random((30, 4)) < 0.1] = np.nan  # some runs missing
    w = M.bootstrap_weights(30, 300, seed=9)
    assert w.shape == (300, 30) and (w.sum(axis=1) == 30).all()
    hits = np.nansum(outcomes, axis=1)[:, None]
    runs = np.sum(~np.isnan(outcomes), axis=1).astype(float)[:, None]
    lo, hi = M.bootstrap_rate_cis(hits, runs, w)
    ref = M.bootstrap_rate_ci(outcomes, resamples=300, seed=9)
    assert (lo[0], hi[0]) == pytest.approx(ref)


def test_injected_mask_marks_the_inserted_calls() -> None:
    layout = M.RunLayout.build(np.array([5, 4, 6]), np.array([2, 1, 5]), np.array([2, 3, 1]))
    expected = [0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1]  # runs of 5, 4 and 6 calls
    assert layout.injected_mask().astype(int).tolist() == expected


def test_stream_rates_resample_runs_by_their_stream() -> None:
    """Runs given in any order and any number per stream: each column's rate and interval are
    those of its (stream × run) outcomes resampled stream by stream, and depend on which stream
    is which (the experiment's split order), not on where a column stands among others."""
    rng = np.random.default_rng(5)
    streams = 12
    stream = [rng.permutation(np.repeat(np.arange(streams), 3))[:-4] for _ in range(3)]
    detected = [rng.random(s.size) < p for s, p in zip(stream, (0.2, 0.5, 0.9), strict=True)]
    w = M.bootstrap_weights(streams, 400, seed=4)
    rates, lo, hi = M.stream_rates(detected, stream, streams, w)
    for j, (d, s) in enumerate(zip(detected, stream, strict=True)):
        table = np.full((streams, 3), np.nan)  # the plain loop's (streams × runs) outcomes
        for i in range(streams):
            table[i, : int((s == i).sum())] = d[s == i]
        assert rates[j] == d.sum() / d.size
        assert (lo[j], hi[j]) == pytest.approx(
            M.bootstrap_rate_ci(table, resamples=400, seed=4), abs=1e-12
        )
        alone = M.stream_rates([d], [s], streams, w)
        assert (alone[1][0], alone[2][0]) == (lo[j], hi[j])
    renamed = M.stream_rates(detected, [(s + 5) % streams for s in stream], streams, w)
    assert not np.array_equal(np.stack(renamed[1:]), np.stack([lo, hi]))
