"""The AUC pooled over seeds equals the rank AUC of every seed's calls laid end to end."""

from __future__ import annotations

import numpy as np
import pytest

import toolwatch.injection.experiment.metrics as M
from toolwatch.injection.experiment.pooled_auc import Alignment, PooledAUC


def _seed(
    rng: np.random.Generator, normal: list[np.ndarray]
) -> tuple[np.ndarray, M.RunLayout, np.ndarray]:
    """Runs on random normal streams: the prefix kept, calls inserted (sometimes none, as a
    re-timing burst), a few later scores changed, the rest of the stream kept."""
    streams = rng.integers(0, len(normal), size=6)
    calls, lengths, positions, inserted = [], [], [], []
    for i in streams:
        base = normal[i]
        p = int(rng.integers(0, len(base) + 1))
        new = int(rng.integers(0, 4))
        ins = new if new else min(int(rng.integers(0, 3)), len(base) - p)
        injected = rng.choice([0.5, 1.0, 2.0, np.nan], size=ins)
        tail = base[p + (ins - new) :].copy()
        changed = rng.random(tail.size) < 0.2
        tail[changed] = rng.choice([0.0, 1.0, np.nan], size=int(changed.sum()))
        run = np.concatenate([base[:p], injected, tail])
        calls.append(run)
        lengths.append(run.size)
        positions.append(p)
        inserted.append(ins)
    layout = M.RunLayout.build(np.array(lengths), np.array(positions), np.array(inserted))
    return np.concatenate(calls), layout, streams


@pytest.mark.parametrize("seed", range(20))
def test_pooled_auc_equals_the_rank_auc_of_all_seeds_together(seed: int) -> None:
    rng = np.random.default_rng(seed)
    normal = [rng.choice([0.0, 0.5, 1.0, np.nan, 3.0], size=int(n)) for n in rng.integers(0, 12, 5)]
    lengths = np.array([len(s) for s in normal])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    pooled = PooledAUC(M.nan_as_lowest(np.concatenate(normal)), lengths)
    scores, masks = [], []
    for _ in range(3):
        values, layout, streams = _seed(rng, normal)
        pooled.add(values, Alignment.build(layout, streams, starts, lengths), streams)
        scores.append(values)
        masks.append(layout.injected_mask())
    expected = M.auc(np.concatenate(scores), np.concatenate(masks))
    got = pooled.value()
    assert (np.isnan(expected) and np.isnan(got)) or got == expected
