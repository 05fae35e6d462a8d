"""Batch scoring: one batch gives every session the scores it gets alone."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.runs import build_runs
from toolwatch.injection.experiment.scoring import fit_model, score_groups
from toolwatch.injection.experiment.split import normal_sessions, split_by_time
from toolwatch.injection.spans.context import InjectionContext


def test_batch_scoring_equals_scoring_each_session_alone(corpus: pa.Table) -> None:
    config = ExperimentConfig(seeds=(3,), kinds=("runaway_retry", "burst"))
    split = split_by_time(normal_sessions(corpus), config)
    context = InjectionContext.from_sessions(split.train)
    runs = build_runs(split.test[:6], context, config)
    model = fit_model(split.train, split.calibration, config)
    sessions = runs["runaway_retry"].sessions + runs["burst"].sessions
    batch = score_groups(model, [sessions])[0]
    offset = 0
    for s in sessions:
        alone = score_groups(model, [[s]])[0]
        for col, values in alone.items():
            np.testing.assert_array_equal(batch[col][offset : offset + len(s)], values)
        offset += len(s)
