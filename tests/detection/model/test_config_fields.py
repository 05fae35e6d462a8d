"""A config read from JSON or ``--model-config`` is type-checked field by field before use."""

from __future__ import annotations

import math
from typing import Any

import pytest

from toolwatch.detection.model.adaptive_config import AdaptiveConfig
from toolwatch.detection.model.config import ModelConfig
from toolwatch.detection.model.location import ModelError


@pytest.mark.parametrize(
    ("field", "value", "wanted"),
    [
        ("cusum_k", "abc", "a number"),  # was a TypeError deep inside the fit (exit 70)
        ("order_session_mix", "maybe", "true or false"),  # ran as true (a non-empty string)
        ("size_min_count", 2.5, "an integer"),  # ran as a fraction
        ("ewma_alpha", [1], "a number"),
        ("failure_prior_strength", None, "a number"),
        ("alert_on", [1, 2], "of type tuple[str, ...]"),
        ("novelty_alert", 5, "of type str | None"),
        ("ewma_alpha", True, "a number"),  # a bool is not a number here
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_field(
    field: str, value: Any, wanted: str
) -> None:
    with pytest.raises(ModelError) as caught:
        ModelConfig.from_dict({field: value})
    assert str(caught.value) == f"config {field} must be {wanted}, got {value!r}"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cusum_k", -1),
        ("min_sd", 0),
        ("size_min_sd", 0),
        ("size_min_count", 0),
        ("failure_prior_strength", 0),
        ("time_max_knots", 1),
        ("order_smoothing", "zzz"),  # was refused only when the fit reached the order cue
    ],
)
def test_a_value_out_of_range_is_refused_before_any_fit(field: str, value: Any) -> None:
    with pytest.raises(ModelError, match=f"config {field} must be"):
        ModelConfig.from_dict({field: value})


def test_what_json_and_the_command_line_write_is_accepted_as_meant() -> None:
    config = ModelConfig.from_dict(
        {
            "cusum_k": 1,  # an integer stands for a float
            "alert_on": "all_cusum, time_ewma",  # KEY=VALUE: a comma-separated list
            "novelty_alert": None,
            "order_session_mix": False,
        }
    )
    assert config.cusum_k == 1.0 and isinstance(config.cusum_k, float)
    assert config.alert_on == ("all_cusum", "time_ewma")
    assert config.order_session_mix is False
    assert ModelConfig.from_dict(config.to_dict()) == config  # a saved config reads back
    assert ModelConfig.from_dict({"alert_on": ["all_ewma"]}).alert_on == ("all_ewma",)


def test_the_adaptive_config_is_checked_the_same_way() -> None:
    with pytest.raises(ModelError, match="adaptive config window must be an integer, got '200'"):
        AdaptiveConfig.from_dict({"window": "200"})
    saved = AdaptiveConfig(pool_days=math.inf).to_dict()
    assert saved["pool_days"] == "inf"
    assert AdaptiveConfig.from_dict(saved) == AdaptiveConfig(pool_days=math.inf)


def test_an_unknown_field_is_named_with_the_fields_there_are() -> None:
    with pytest.raises(ModelError) as caught:
        ModelConfig.from_dict({"cusum_kk": 0.25, "ewma_alpha": "x"})
    message = str(caught.value)
    assert message.startswith("config has no field ['cusum_kk'] (its fields: ewma_alpha, ")
    assert "cusum_k," in message and "ewma_alpha must" not in message  # the names first
    with pytest.raises(ModelError, match=r"adaptive config has no field \['window_size'\]"):
        AdaptiveConfig.from_dict({"window_size": 200})
