"""Each anomaly injector's exact shape on hand-made sessions (counts, gaps, sizes, responses,
labels)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from support.spans import (
    CTX,
    TRAIN,
    calls_table,
    check_common,
    check_inserted_shift,
    check_retimed,
    gaps_s,
    session_of_40,
)
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.contract import NOTE_READ_PAIR, InjectionError
from toolwatch.injection.spans.kinds import OutOfScopeParams
from toolwatch.injection.spans.registry import inject
from toolwatch.injection.spans.session_arrays import SessionCalls


def test_burst_shape() -> None:
    s = session_of_40()
    p = 12
    inj = inject("burst", s, p, np.random.default_rng(3), CTX)
    check_common(inj, s)
    check_retimed(inj, s, p)
    c = inj.calls
    resp = c["response_id"]
    for i in range(p, p + 10):  # every burst call is a response of its own
        assert resp[i] != resp[i - 1]
    assert len(set(resp[p : p + 10])) == 10
    # sizes, tools and outcomes untouched
    assert list(c["tool"]) == list(s["tool"]) and list(c["input_bytes"]) == list(s["input_bytes"])


def test_burst_keeps_a_response_shared_across_the_block_end() -> None:
    s = session_of_40()
    # r18 opens at 18 and call 19 shares it (19 % 6 == 1): block 9..18 ends on call 18
    assert s["response_id"][18] == s["response_id"][19]
    inj = inject("burst", s, 9, np.random.default_rng(0), CTX)
    c = inj.calls
    assert c["response_id"][19] == c["response_id"][18] != s["response_id"][18]
    assert c["response_id"][20] == s["response_id"][20]


def test_runaway_shape() -> None:
    s = session_of_40()
    p = 15
    inj = inject("runaway_retry", s, p, np.random.default_rng(5), CTX)
    check_common(inj, s)
    check_inserted_shift(inj, s)
    c = inj.calls
    block = slice(p, p + 15)
    assert inj.inserted == 15
    assert set(c["tool"][block]) == {s["tool"][p - 1]}
    assert set(c["input_bytes"][block]) == {s["input_bytes"][p - 1]}
    assert int(c["failed"][block].sum()) == math.floor(0.7 * 15 + 0.5) == 11
    assert all(e is not None for e in c["error_type"][block][c["failed"][block]])
    g = gaps_s(c)[p - 1 : p + 14]
    assert ((g >= 1.5) & (g <= 4.0)).all()
    assert len(set(c["response_id"][block])) == 15


def test_hijack_shape() -> None:
    s = session_of_40()
    inj = inject("sequence_hijack", s, 20, np.random.default_rng(1), CTX)
    check_common(inj, s)
    check_inserted_shift(inj, s)
    tools = inj.calls["tool"][20:28]
    assert inj.inserted == 8 and set(tools) <= set(CTX.vocabulary)
    assert len(set(inj.calls["response_id"][20:28])) == 8
    # uniform over the vocabulary: over many draws every tool shows up
    seen = set()
    for seed in range(40):
        seen |= set(
            inject("sequence_hijack", s, 20, np.random.default_rng(seed), CTX).calls["tool"][20:28]
        )
    assert seen == set(CTX.vocabulary)


@pytest.mark.parametrize(
    ("kind", "k_low", "k_high"),
    [("key_exfiltration", 1, 1), ("exfiltration_2sigma", 2, 2), ("large_exfiltration", 4, 8)],
)
def test_exfiltration_after_a_read(kind: str, k_low: float, k_high: float) -> None:
    s = session_of_40(with_read=True)
    inj = inject(kind, s, 17, np.random.default_rng(2), CTX, bounds=(10, 30))
    check_common(inj, s)
    check_inserted_shift(inj, s)
    p = inj.position
    assert inj.inserted == 1 and inj.note == ""
    assert s["tool"][p - 1] == "Read"
    # the nearest Read-before-a-response-start to 17: Read at 14 (call 15 opens r15)
    assert p == 15
    c = inj.calls
    assert c["tool"][p] == "WebFetch" and not c["failed"][p]
    mean, sd = CTX.log_input["WebFetch"]
    k = (math.log1p(c["input_bytes"][p]) - mean) / sd
    assert k_low - 0.01 <= k <= k_high + 0.01
    if kind == "key_exfiltration":
        assert c["input_bytes"][p] == round(math.expm1(mean + sd))


def test_large_exfiltration_spans_four_to_eight_sigma() -> None:
    s = session_of_40()
    mean, sd = CTX.log_input["WebFetch"]
    ks = [
        (
            math.log1p(
                inject("large_exfiltration", s, 17, np.random.default_rng(i), CTX).calls[
                    "input_bytes"
                ][15]
            )
            - mean
        )
        / sd
        for i in range(30)
    ]
    assert min(ks) < 5 and max(ks) > 7 and min(ks) >= 3.99 and max(ks) <= 8.01


def test_exfiltration_without_read_inserts_a_pair() -> None:
    s = session_of_40(with_read=False)
    inj = inject("key_exfiltration", s, 17, np.random.default_rng(2), CTX, bounds=(10, 30))
    check_common(inj, s)
    check_inserted_shift(inj, s)
    assert inj.note == NOTE_READ_PAIR and inj.inserted == 2 and inj.position == 17
    assert list(inj.calls["tool"][17:19]) == ["Read", "WebFetch"]
    assert len(set(inj.calls["response_id"][17:19])) == 2


def test_out_of_scope_shape() -> None:
    s = session_of_40()
    inj = inject("out_of_scope_tool", s, 20, np.random.default_rng(1), CTX)
    check_common(inj, s)
    check_inserted_shift(inj, s)
    c = inj.calls
    assert inj.inserted == 3
    # the only MCP tool with <= 40 training calls on an untouched server
    assert list(c["tool"][20:23]) == ["mcp__rare__ping"] * 3
    assert set(c["server"][20:23]) == {"rare"}


def test_out_of_scope_needs_an_untouched_server() -> None:
    ctx = InjectionContext.build(TRAIN)
    s = session_of_40()
    cols = dict(s.columns)
    server = cols["server"].copy()
    server[2] = "rare"
    s2 = SessionCalls(cols | {"server": server})
    with pytest.raises(InjectionError, match="never touched"):
        inject("out_of_scope_tool", s2, 20, np.random.default_rng(1), ctx)
    tight = OutOfScopeParams(max_training_calls=2)
    with pytest.raises(InjectionError):
        inject("out_of_scope_tool", s, 20, np.random.default_rng(1), ctx, tight)


def test_out_of_scope_by_rarity_when_training_has_no_mcp_server() -> None:
    """Issue 12: a corpus without MCP servers in training can still be measured — a built-in
    tool with few training calls, never used in the stream, is the study's condition."""
    common = [(t, 3.0, f"r{i}", 60, False) for i, t in enumerate(["Read", "Bash", "Edit"] * 25)]
    rare = [("KillShell", 3.0, f"k{i}", 20, False) for i in range(3)]
    ctx = InjectionContext.build(calls_table({"a": common, "b": common + rare}))
    s = session_of_40()
    inj = inject("out_of_scope_tool", s, 20, np.random.default_rng(3), ctx)
    assert list(inj.calls["tool"][20:23]) == ["KillShell"] * 3
    assert set(inj.calls["server"][20:23]) == {None}
    # rows are copied from training calls of that tool: its sizes and outcomes, not the test's
    assert set(inj.calls["input_bytes"][20:23]) == {20}
    used = SessionCalls(
        dict(s.columns) | {"tool": np.where(np.arange(40) == 5, "KillShell", s["tool"])}
    )
    with pytest.raises(InjectionError, match="never touched"):
        inject("out_of_scope_tool", used, 20, np.random.default_rng(3), ctx)


def test_injected_tools_and_sizes_come_from_training_only() -> None:
    assert set(CTX.vocabulary) == set(TRAIN.column("tool").to_pylist())
    assert set(CTX.pools) == set(CTX.vocabulary)
