"""Each injector's exact shape on hand-made sessions (counts, gaps, sizes, responses, labels)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest

from toolwatch import study
from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.injection.spans import anomalies as A
from toolwatch.injection.spans.session_arrays import SessionCalls, split_sessions, to_table

T0 = 1_785_000_000_000_000  # µs, 2026-07-25


def calls_table(sessions: dict[str, list[tuple]]) -> pa.Table:
    """sessions: id -> [(tool, gap_s, response_id, input_bytes, failed), ...]."""
    rows = []
    for sid, calls in sessions.items():
        t = T0
        for i, (tool, gap, resp, inp, failed) in enumerate(calls):
            t += round(gap * 1e6)
            server = tool.split("__")[1] if tool.startswith("mcp__") else None
            rows.append(
                {
                    "trace_id": "a" * 32,
                    "span_id": f"{len(rows):016x}",
                    "session_id": sid,
                    "agent_id": None,
                    "seq": i,
                    "tool": tool,
                    "server": server,
                    "start_time": datetime.fromtimestamp(t / 1e6, UTC),
                    "duration_us": 1000,
                    "input_bytes": inp,
                    "output_bytes": 100 + i,
                    "failed": failed,
                    "error_type": "tool_error" if failed else None,
                    "response_id": resp,
                    "call_id": None,
                    "source": "simulated",
                    "service": None,
                    "restamped": False,
                    "output_truncated": False,
                    "label": None,
                }
            )
    return pa.Table.from_pylist(rows, schema=CALLS_SCHEMA)


def _training() -> pa.Table:
    rng = np.random.default_rng(7)
    sessions: dict[str, list[tuple]] = {}
    for k in range(6):
        calls = []
        for i in range(40):
            tool = str(rng.choice(["Read", "Bash", "WebFetch", "Edit"]))
            size = (
                int(rng.lognormal(5.2, 0.4)) if tool == "WebFetch" else int(rng.integers(40, 400))
            )
            calls.append((tool, float(rng.uniform(2, 30)), f"t{k}-{i}", size, bool(i % 9 == 0)))
        sessions[f"train{k}"] = calls
    # MCP tools: a rare one on server "rare" (3 calls), a frequent one on "busy" (60 calls)
    sessions["mcp"] = [("mcp__rare__ping", 5.0, f"m{i}", 30, False) for i in range(3)] + [
        ("mcp__busy__get", 4.0, f"b{i}", 50, False) for i in range(60)
    ]
    return calls_table(sessions)


TRAIN = _training()
CTX = A.InjectionContext.build(TRAIN)


def _test_session(with_read: bool = True, busy: bool = False) -> SessionCalls:
    """40 calls; responses of 1-2 calls (pairs open at even i, 0.3 s apart)."""
    calls = []
    for i in range(40):
        tool = "Read" if (with_read and i % 5 == 4) else "Bash"
        if busy and i == 3:
            tool = "mcp__busy__get"
        pair_second = i % 6 == 1
        gap = 0.3 if pair_second else 5.0 + i * 0.01
        resp = f"r{i - 1}" if pair_second else f"r{i}"
        calls.append((tool, gap, resp, 100 + i, False))
    return split_sessions(calls_table({"sess": calls}))[0]


def _gaps(s: SessionCalls) -> np.ndarray:
    return np.diff(s["start_time"]) / 1e6


def _check_common(inj: A.Injection, original: SessionCalls) -> None:
    c = inj.calls
    n_new = len(c)
    assert list(c["seq"]) == list(range(n_new))
    labels = c["label"]
    lab = np.flatnonzero(labels == inj.kind)
    assert list(lab) == list(range(inj.position, inj.position + inj.inserted))
    assert all(v is None for i, v in enumerate(labels) if i not in set(lab.tolist()))
    assert (np.diff(c["start_time"]) >= 0).all()
    assert len(set(c["span_id"])) == n_new
    assert set(c["session_id"]) == {original.session_id}
    # the table round-trips through the call schema
    assert to_table([c]).num_rows == n_new


def _check_inserted_shift(inj: A.Injection, original: SessionCalls) -> None:
    """Calls before the insertion are untouched; calls after keep their own gaps."""
    p, m = inj.position, inj.inserted
    c = inj.calls
    assert len(c) == len(original) + m
    for name in ("tool", "input_bytes", "response_id", "span_id"):
        assert list(c[name][:p]) == list(original[name][:p])
        assert list(c[name][p + m :]) == list(original[name][p:])
    assert (c["start_time"][:p] == original["start_time"][:p]).all()
    np.testing.assert_allclose(_gaps(c)[p + m - 1 :], _gaps(original)[p - 1 :], atol=1e-6)
    shift = c["start_time"][p + m :] - original["start_time"][p:]
    assert len(set(shift.tolist())) == 1 and shift[0] > 0
    # inserted calls each open a new response, distinct from every original response
    resp = c["response_id"][p : p + m]
    assert not set(resp) & set(original["response_id"])


def test_kind_keys_are_the_studys() -> None:
    assert tuple(study.DETECTION_ALL_CUSUM) == A.KINDS
    assert set(A.DEFAULT_PARAMS) == set(A.KINDS)
    assert A.CONTROL_KINDS == ("control_other_normal", "control_same_response_burst")


def _check_retimed(inj: A.Injection, s: SessionCalls, p: int) -> None:
    """The 10 gaps from the insertion point are 0.05–0.8 s; every other gap is untouched."""
    c = inj.calls
    assert len(c) == len(s) and inj.inserted == 10 and inj.position == p
    g = _gaps(c)
    assert ((g[p - 1 : p + 9] >= 0.05) & (g[p - 1 : p + 9] <= 0.8)).all()
    np.testing.assert_allclose(g[p + 9 :], _gaps(s)[p + 9 :], atol=1e-6)
    np.testing.assert_allclose(g[: p - 1], _gaps(s)[: p - 1], atol=1e-6)


def test_burst_shape() -> None:
    s = _test_session()
    p = 12
    inj = A.inject("burst", s, p, np.random.default_rng(3), CTX)
    _check_common(inj, s)
    _check_retimed(inj, s, p)
    c = inj.calls
    resp = c["response_id"]
    for i in range(p, p + 10):  # every burst call is a response of its own
        assert resp[i] != resp[i - 1]
    assert len(set(resp[p : p + 10])) == 10
    # sizes, tools and outcomes untouched
    assert list(c["tool"]) == list(s["tool"]) and list(c["input_bytes"]) == list(s["input_bytes"])


def test_burst_keeps_a_response_shared_across_the_block_end() -> None:
    s = _test_session()
    # r18 opens at 18 and call 19 shares it (19 % 6 == 1): block 9..18 ends on call 18
    assert s["response_id"][18] == s["response_id"][19]
    inj = A.inject("burst", s, 9, np.random.default_rng(0), CTX)
    c = inj.calls
    assert c["response_id"][19] == c["response_id"][18] != s["response_id"][18]
    assert c["response_id"][20] == s["response_id"][20]


def test_same_response_burst_shape() -> None:
    s = _test_session()
    p = 12
    inj = A.inject("control_same_response_burst", s, p, np.random.default_rng(3), CTX)
    _check_common(inj, s)
    _check_retimed(inj, s, p)
    c = inj.calls
    assert set(c["response_id"][p : p + 10]) == {s["response_id"][p - 1]}
    assert list(c["response_id"][:p]) == list(s["response_id"][:p])


def test_runaway_shape() -> None:
    s = _test_session()
    p = 15
    inj = A.inject("runaway_retry", s, p, np.random.default_rng(5), CTX)
    _check_common(inj, s)
    _check_inserted_shift(inj, s)
    c = inj.calls
    block = slice(p, p + 15)
    assert inj.inserted == 15
    assert set(c["tool"][block]) == {s["tool"][p - 1]}
    assert set(c["input_bytes"][block]) == {s["input_bytes"][p - 1]}
    assert int(c["failed"][block].sum()) == math.floor(0.7 * 15 + 0.5) == 11
    assert all(e is not None for e in c["error_type"][block][c["failed"][block]])
    g = _gaps(c)[p - 1 : p + 14]
    assert ((g >= 1.5) & (g <= 4.0)).all()
    assert len(set(c["response_id"][block])) == 15


def test_hijack_shape() -> None:
    s = _test_session()
    inj = A.inject("sequence_hijack", s, 20, np.random.default_rng(1), CTX)
    _check_common(inj, s)
    _check_inserted_shift(inj, s)
    tools = inj.calls["tool"][20:28]
    assert inj.inserted == 8 and set(tools) <= set(CTX.vocabulary)
    assert len(set(inj.calls["response_id"][20:28])) == 8
    # uniform over the vocabulary: over many draws every tool shows up
    seen = set()
    for seed in range(40):
        seen |= set(
            A.inject("sequence_hijack", s, 20, np.random.default_rng(seed), CTX).calls["tool"][
                20:28
            ]
        )
    assert seen == set(CTX.vocabulary)


@pytest.mark.parametrize(
    ("kind", "k_low", "k_high"),
    [("key_exfiltration", 1, 1), ("exfiltration_2sigma", 2, 2), ("large_exfiltration", 4, 8)],
)
def test_exfiltration_after_a_read(kind: str, k_low: float, k_high: float) -> None:
    s = _test_session(with_read=True)
    inj = A.inject(kind, s, 17, np.random.default_rng(2), CTX, bounds=(10, 30))
    _check_common(inj, s)
    _check_inserted_shift(inj, s)
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
    s = _test_session()
    mean, sd = CTX.log_input["WebFetch"]
    ks = [
        (
            math.log1p(
                A.inject("large_exfiltration", s, 17, np.random.default_rng(i), CTX).calls[
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
    s = _test_session(with_read=False)
    inj = A.inject("key_exfiltration", s, 17, np.random.default_rng(2), CTX, bounds=(10, 30))
    _check_common(inj, s)
    _check_inserted_shift(inj, s)
    assert inj.note == A.NOTE_READ_PAIR and inj.inserted == 2 and inj.position == 17
    assert list(inj.calls["tool"][17:19]) == ["Read", "WebFetch"]
    assert len(set(inj.calls["response_id"][17:19])) == 2


def test_out_of_scope_shape() -> None:
    s = _test_session()
    inj = A.inject("out_of_scope_tool", s, 20, np.random.default_rng(1), CTX)
    _check_common(inj, s)
    _check_inserted_shift(inj, s)
    c = inj.calls
    assert inj.inserted == 3
    # the only MCP tool with <= 40 training calls on an untouched server
    assert list(c["tool"][20:23]) == ["mcp__rare__ping"] * 3
    assert set(c["server"][20:23]) == {"rare"}


def test_out_of_scope_needs_an_untouched_server() -> None:
    ctx = A.InjectionContext.build(TRAIN)
    s = _test_session()
    cols = dict(s.columns)
    server = cols["server"].copy()
    server[2] = "rare"
    s2 = SessionCalls(cols | {"server": server})
    with pytest.raises(A.InjectionError, match="never touched"):
        A.inject("out_of_scope_tool", s2, 20, np.random.default_rng(1), ctx)
    tight = A.OutOfScopeParams(max_training_calls=2)
    with pytest.raises(A.InjectionError):
        A.inject("out_of_scope_tool", s, 20, np.random.default_rng(1), ctx, tight)


def test_other_normal_copies_eight_consecutive_training_calls() -> None:
    s = _test_session()
    inj = A.inject("control_other_normal", s, 20, np.random.default_rng(4), CTX)
    _check_common(inj, s)
    _check_inserted_shift(inj, s)
    c = inj.calls
    block_tools = list(c["tool"][20:28])
    block_gaps = _gaps(c)[20:27]
    found = False
    for donor in split_sessions(TRAIN):
        for a in range(len(donor) - 7):
            if list(donor["tool"][a : a + 8]) == block_tools and np.allclose(
                _gaps(donor)[a : a + 7], block_gaps, atol=1e-6
            ):
                found = list(donor["input_bytes"][a : a + 8]) == list(c["input_bytes"][20:28])
    assert found


def test_injection_is_deterministic_per_seed() -> None:
    s = _test_session()
    for kind in A.KINDS:
        if kind == "out_of_scope_tool":
            continue
        a = A.inject(kind, s, 20, np.random.default_rng(11), CTX)
        b = A.inject(kind, s, 20, np.random.default_rng(11), CTX)
        c = A.inject(kind, s, 20, np.random.default_rng(12), CTX)
        ta, tb, tc = to_table([a.calls]), to_table([b.calls]), to_table([c.calls])
        assert ta.equals(tb)
        assert not ta.equals(tc)


def test_draw_position_prefers_response_starts_within_bounds() -> None:
    s = _test_session()
    starts = s.response_starts()
    positions = {A.draw_position(s, np.random.default_rng(i)) for i in range(300)}
    assert min(positions) >= 10 and max(positions) <= len(s) - 10
    assert all(starts[p] for p in positions)
    assert len(positions) == int(starts[10 : len(s) - 9].sum())
    with pytest.raises(A.InjectionError, match="too short"):
        A.draw_position(
            SessionCalls({k: v[:15] for k, v in s.columns.items()}), np.random.default_rng(0)
        )


def test_unknown_kind_and_bad_position_are_clear_errors() -> None:
    s = _test_session()
    with pytest.raises(A.InjectionError, match="unknown anomaly kind"):
        A.inject("teleport", s, 20, np.random.default_rng(0), CTX)
    with pytest.raises(A.InjectionError, match="position"):
        A.inject("burst", s, 0, np.random.default_rng(0), CTX)
    with pytest.raises(A.InjectionError):
        A.inject("burst", s, 35, np.random.default_rng(0), CTX)


def test_params_round_trip_through_json() -> None:
    import json

    data = json.loads(json.dumps(A.params_to_dict(A.DEFAULT_PARAMS)))
    assert A.params_from_dict(data) == A.DEFAULT_PARAMS


def test_network_tools_open_a_url() -> None:
    """WebFetch and browser ``navigate`` tools carry a URL; ``navigate_back`` does not."""
    assert A.is_network_tool("WebFetch")
    assert A.is_network_tool("mcp__plugin_playwright_playwright__browser_navigate")
    assert A.is_network_tool("mcp__puppeteer__puppeteer_navigate")
    assert not A.is_network_tool("mcp__plugin_playwright_playwright__browser_navigate_back")
    assert not A.is_network_tool("Read")
