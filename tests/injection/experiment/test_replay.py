"""The replay's text on a synthetic corpus (the real-data checks are in test_real_data.py)."""

from __future__ import annotations

from toolwatch.collector.sources.simulator import simulate
from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.replay import ReplayConfig, render, run_replay


def test_the_replay_names_the_target_it_was_given() -> None:
    """--target-fa 0.053 was printed "target 5%", "the 95% quantile" and "2× the target (11%)"."""
    result = run_replay(
        simulate(seed=2, scale=0.25),
        ReplayConfig(
            experiment=ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,), target_fa=0.053),
            replay_kinds=("burst",),
        ),
    )
    text = render(result)
    assert "target 5.3% of streams alarming" in text
    assert "threshold = the 94.7% quantile of the last 200 stream maxima" in text
    assert "more than 2× the target (10.6%) of their streams alarming" in text
