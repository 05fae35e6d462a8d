"""The two controls' exact shape: a same-response burst and a block of another normal session."""

from __future__ import annotations

import numpy as np

from support.spans import (
    CTX,
    TRAIN,
    check_common,
    check_inserted_shift,
    check_retimed,
    gaps_s,
    session_of_40,
)
from toolwatch.injection.spans.registry import inject
from toolwatch.injection.spans.session_arrays import split_sessions


def test_same_response_burst_shape() -> None:
    s = session_of_40()
    p = 12
    inj = inject("control_same_response_burst", s, p, np.random.default_rng(3), CTX)
    check_common(inj, s)
    check_retimed(inj, s, p)
    c = inj.calls
    assert set(c["response_id"][p : p + 10]) == {s["response_id"][p - 1]}
    assert list(c["response_id"][:p]) == list(s["response_id"][:p])


def test_other_normal_copies_eight_consecutive_training_calls() -> None:
    s = session_of_40()
    inj = inject("control_other_normal", s, 20, np.random.default_rng(4), CTX)
    check_common(inj, s)
    check_inserted_shift(inj, s)
    c = inj.calls
    block_tools = list(c["tool"][20:28])
    block_gaps = gaps_s(c)[20:27]
    found = False
    for donor in split_sessions(TRAIN):
        for a in range(len(donor) - 7):
            if list(donor["tool"][a : a + 8]) == block_tools and np.allclose(
                gaps_s(donor)[a : a + 7], block_gaps, atol=1e-6
            ):
                found = list(donor["input_bytes"][a : a + 8]) == list(c["input_bytes"][20:28])
    assert found
