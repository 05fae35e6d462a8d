"""Hand-made sessions for the span-injection tests, a training split to borrow from, and the
checks every injected session must pass (labels, gaps, shifted calls)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.contract import Injection
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


CTX = InjectionContext.build(TRAIN)


def session_of_40(with_read: bool = True, busy: bool = False) -> SessionCalls:
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


def gaps_s(s: SessionCalls) -> np.ndarray:
    return np.diff(s["start_time"]) / 1e6


def check_common(inj: Injection, original: SessionCalls) -> None:
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


def check_inserted_shift(inj: Injection, original: SessionCalls) -> None:
    """Calls before the insertion are untouched; calls after keep their own gaps."""
    p, m = inj.position, inj.inserted
    c = inj.calls
    assert len(c) == len(original) + m
    for name in ("tool", "input_bytes", "response_id", "span_id"):
        assert list(c[name][:p]) == list(original[name][:p])
        assert list(c[name][p + m :]) == list(original[name][p:])
    assert (c["start_time"][:p] == original["start_time"][:p]).all()
    np.testing.assert_allclose(gaps_s(c)[p + m - 1 :], gaps_s(original)[p - 1 :], atol=1e-6)
    shift = c["start_time"][p + m :] - original["start_time"][p:]
    assert len(set(shift.tolist())) == 1 and shift[0] > 0
    # inserted calls each open a new response, distinct from every original response
    resp = c["response_id"][p : p + m]
    assert not set(resp) & set(original["response_id"])


def check_retimed(inj: Injection, s: SessionCalls, p: int) -> None:
    """The 10 gaps from the insertion point are 0.05–0.8 s; every other gap is untouched."""
    c = inj.calls
    assert len(c) == len(s) and inj.inserted == 10 and inj.position == p
    g = gaps_s(c)
    assert ((g[p - 1 : p + 9] >= 0.05) & (g[p - 1 : p + 9] <= 0.8)).all()
    np.testing.assert_allclose(g[p + 9 :], gaps_s(s)[p + 9 :], atol=1e-6)
    np.testing.assert_allclose(g[: p - 1], gaps_s(s)[: p - 1], atol=1e-6)
