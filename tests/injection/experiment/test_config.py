"""The experiment's configuration: clear errors, and a JSON round trip that repeats a run."""

from __future__ import annotations

import json

import pytest

from toolwatch.injection.experiment.config import ExperimentConfig, ExperimentError


def test_config_validation_and_json_round_trip() -> None:
    with pytest.raises(ExperimentError, match="not both"):
        ExperimentConfig(split_dates=("2026-08-24", "2026-08-31"), split_shares=(0.4, 0.1))
    with pytest.raises(ExperimentError, match="ISO date"):
        ExperimentConfig(split_dates=("yesterday", "2026-08-31"))
    with pytest.raises(ExperimentError, match="no insertion point"):
        ExperimentConfig(min_calls=15)
    with pytest.raises(ExperimentError, match="unknown kinds"):
        ExperimentConfig(kinds=("teleport",))
    with pytest.raises(ExperimentError, match="model configuration"):
        ExperimentConfig(model={"no_such_knob": 1})
    config = ExperimentConfig(seeds=(4, 2), target_fa=0.1)
    again = ExperimentConfig.from_dict(json.loads(config.to_json()))
    assert again.split_dates is None and again.split_shares is None  # the default rule
    assert again.to_json() == config.to_json()
    assert again.seeds == (4, 2) and again.params == config.params
    assert json.loads(config.to_json())["model"]["ewma_start"] == "zero"  # every knob saved


def test_the_result_holds_the_split_the_default_rule_chose(result) -> None:  # type: ignore[no-untyped-def]
    """A saved run repeats exactly even if the default rule changes later: the result's
    config holds the dates the rule resolved to (on the study's calendar, its own dates)."""
    assert result.config.split_dates == ("2026-08-24", "2026-08-31")
    assert result.split["default"] is True
