"""The nine kinds are the study's (then the provenance variants), and their parameters survive
a JSON round trip."""

from __future__ import annotations

import json

from toolwatch import study
from toolwatch.injection.spans.kinds import (
    ALL_KINDS,
    CONTROL_KINDS,
    DEFAULT_PARAMS,
    KINDS,
    PROVENANCE_KINDS,
    ProvenanceExfiltrationParams,
    params_from_dict,
    params_to_dict,
)


def test_kind_keys_are_the_studys() -> None:
    assert tuple(study.DETECTION_ALL_CUSUM) == KINDS
    assert (*KINDS, *PROVENANCE_KINDS) == ALL_KINDS and set(DEFAULT_PARAMS) == set(ALL_KINDS)
    assert len(PROVENANCE_KINDS) == 9
    assert DEFAULT_PARAMS["exfil_document_base64"] == ProvenanceExfiltrationParams(400, "base64")
    assert CONTROL_KINDS == ("control_other_normal", "control_same_response_burst")


def test_params_round_trip_through_json() -> None:
    data = json.loads(json.dumps(params_to_dict(DEFAULT_PARAMS)))
    assert params_from_dict(data) == DEFAULT_PARAMS
