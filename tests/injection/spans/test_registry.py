"""The one entry point: deterministic per seed, clear errors, insertion points drawn in bounds."""

from __future__ import annotations

import numpy as np
import pytest

from support.spans import CTX, session_of_40
from toolwatch.injection.spans.contract import InjectionError
from toolwatch.injection.spans.kinds import KINDS
from toolwatch.injection.spans.registry import draw_position, inject
from toolwatch.injection.spans.session_arrays import SessionCalls, to_table


def test_injection_is_deterministic_per_seed() -> None:
    s = session_of_40()
    for kind in KINDS:
        if kind == "out_of_scope_tool":
            continue
        a = inject(kind, s, 20, np.random.default_rng(11), CTX)
        b = inject(kind, s, 20, np.random.default_rng(11), CTX)
        c = inject(kind, s, 20, np.random.default_rng(12), CTX)
        ta, tb, tc = to_table([a.calls]), to_table([b.calls]), to_table([c.calls])
        assert ta.equals(tb)
        assert not ta.equals(tc)


def test_draw_position_prefers_response_starts_within_bounds() -> None:
    s = session_of_40()
    starts = s.response_starts()
    positions = {draw_position(s, np.random.default_rng(i)) for i in range(300)}
    assert min(positions) >= 10 and max(positions) <= len(s) - 10
    assert all(starts[p] for p in positions)
    assert len(positions) == int(starts[10 : len(s) - 9].sum())
    with pytest.raises(InjectionError, match="too short"):
        draw_position(
            SessionCalls({k: v[:15] for k, v in s.columns.items()}), np.random.default_rng(0)
        )


def test_unknown_kind_and_bad_position_are_clear_errors() -> None:
    s = session_of_40()
    with pytest.raises(InjectionError, match="unknown anomaly kind"):
        inject("teleport", s, 20, np.random.default_rng(0), CTX)
    with pytest.raises(InjectionError, match="position"):
        inject("burst", s, 0, np.random.default_rng(0), CTX)
    with pytest.raises(InjectionError):
        inject("burst", s, 35, np.random.default_rng(0), CTX)


def test_draw_position_with_no_tail_may_insert_after_the_last_call() -> None:
    # tail 0 (the experiment allows it) lets the point be the session's end, which opened
    # no response: draw_position indexed one past the response starts (IndexError, exit 70)
    s = session_of_40()
    n = len(s)
    positions = {draw_position(s, np.random.default_rng(i), head=n - 1, tail=0) for i in range(50)}
    assert positions <= {n - 1, n} and n in positions
    result = inject("runaway_retry", s, n, np.random.default_rng(0), CTX)
    assert len(result.calls) > n
