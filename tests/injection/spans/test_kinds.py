"""The nine kinds are the study's, and their parameters survive a JSON round trip."""

from __future__ import annotations

import json

from toolwatch import study
from toolwatch.injection.spans.kinds import (
    CONTROL_KINDS,
    DEFAULT_PARAMS,
    KINDS,
    params_from_dict,
    params_to_dict,
)


def test_kind_keys_are_the_studys() -> None:
    assert tuple(study.DETECTION_ALL_CUSUM) == KINDS
    assert set(DEFAULT_PARAMS) == set(KINDS)
    assert CONTROL_KINDS == ("control_other_normal", "control_same_response_burst")


def test_params_round_trip_through_json() -> None:
    data = json.loads(json.dumps(params_to_dict(DEFAULT_PARAMS)))
    assert params_from_dict(data) == DEFAULT_PARAMS
