"""Corpus stats: SQL over a small hand-built store against values computed by hand."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from support.paths import FIXTURES
from toolwatch.cli import main
from toolwatch.collector.stats import STAT_KEYS, corpus_stats
from toolwatch.collector.store import Store
from toolwatch.record import CallRecord
from toolwatch.study import CORPUS

FIXTURES = FIXTURES / "claude_code"
T0 = datetime(2026, 8, 4, 10, tzinfo=UTC)
T1 = datetime(2026, 8, 6, 23, 59, 59, tzinfo=UTC)


def _call(
    i: int,
    session: str,
    at: datetime,
    tool: str,
    response: str | None,
    *,
    agent: str | None = None,
    failed: bool = False,
    restamped: bool = False,
    source: str = "import",
) -> CallRecord:
    server = tool.split("__")[1] if tool.startswith("mcp__") else None
    return CallRecord(
        trace_id=session.encode().hex().rjust(32, "0"),
        span_id=f"{i + 1:016x}",
        session_id=session,
        agent_id=agent,
        seq=i,
        tool=tool,
        server=server,
        start_time=at,
        duration_us=1000,
        input_bytes=10,
        output_bytes=20,
        failed=failed,
        error_type="tool_error" if failed else None,
        response_id=response,
        call_id=f"toolu_{session}_{i}",
        source=source,
        restamped=restamped,
    )


def s(seconds: float, base: datetime = T0) -> datetime:
    return base + timedelta(seconds=seconds)


CALLS = [
    # session s1, main agent: gaps 0.4 (r1), 1.6 (r1), 10.0, 1.5, 6.5
    _call(0, "s1", s(0), "Read", "r1"),
    _call(1, "s1", s(0.4), "Grep", "r1"),
    _call(2, "s1", s(2.0), "Bash", "r1"),
    _call(3, "s1", s(12.0), "Read", "r2"),
    _call(4, "s1", s(13.5), "mcp__github__create_issue", "r3", failed=True),
    _call(5, "s1", s(20.0), "Bash", "r4", failed=True),
    # its subagent: a stream of its own (0.3 s after the parent's call 3 — not a gap); gap 0.5
    _call(6, "s1", s(12.3), "Read", "r10", agent="a1"),
    _call(7, "s1", s(12.8), "WebFetch", "r11", agent="a1"),
    # session s2 crosses midnight UTC: gap 4.0; then 3 gaps touching re-stamped calls (skipped);
    # then 2 gaps next to a call without response id (unknown boundary: in neither class)
    _call(0, "s2", s(0, T1), "mcp__github__get_pr", "q1"),
    _call(1, "s2", s(4, T1), "mcp__plugin_x_y__click", "q2"),
    _call(2, "s2", s(4, T1), "Read", "q3", restamped=True),
    _call(3, "s2", s(4, T1), "Read", "q4", restamped=True),
    _call(4, "s2", s(61, T1), "Read", "q5"),
    _call(5, "s2", s(61.7, T1), "Read", None),
    _call(6, "s2", s(66, T1), "Read", "q5"),
    # a simulated session, only counted without a source filter
    _call(0, "s3", datetime(2026, 8, 10, 8, tzinfo=UTC), "Read", "z1", source="simulated"),
]

#: Hand-computed from CALLS (sources = import).
EXPECTED_IMPORT = {
    "sessions": 3,  # streams: s1 main, s1/a1, s2
    "calls": 15,
    "tools": 7,  # Read Grep Bash WebFetch + 3 MCP tools
    "mcp_servers": 2,
    "mcp_tools": 3,
    "mcp_calls": 3,
    "days": 4,  # 08-04 .. 08-07
    "inter_response_gaps": 5,  # 10.0 1.5 6.5 0.5 4.0
    "inter_response_gap_min_s": 0.5,
    "inter_response_gap_median_s": 4.0,
    "inter_response_share_le_1s": 1 / 5,
    "parallel_calls": 2,  # 0.4 1.6
    "within_response_gap_median_s": 1.0,
    "within_response_share_le_1s": 1 / 2,
    "first_use_share": (4 / 6 + 2 / 2 + 3 / 7) / 3,  # per stream: s1 main, s1/a1, s2
    "first_use_share_pooled": 9 / 15,
    "failure_rate": 2 / 15,
    "subagent_calls": 2,
    "restamped_calls": 2,
    "skipped_restamped_gaps": 3,
}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st = Store(tmp_path / "store")
    st.append("calls", [c.as_dict() for c in CALLS])
    return st


def test_stats_match_hand_computed_values(store: Store) -> None:
    con = store.connect()
    got = corpus_stats(con, ["import"])
    con.close()
    assert set(got) == set(STAT_KEYS)
    assert got == pytest.approx(EXPECTED_IMPORT)


def test_stats_over_all_sources(store: Store) -> None:
    con = store.connect()
    got = corpus_stats(con)
    con.close()
    assert got["sessions"] == 4
    assert got["calls"] == 16
    assert got["days"] == 7  # 08-04 .. 08-10
    assert got["first_use_share"] == pytest.approx((4 / 6 + 1 + 3 / 7 + 1) / 4)
    assert got["first_use_share_pooled"] == pytest.approx(10 / 16)
    assert got["inter_response_gaps"] == 5  # one call: no gap


def test_empty_store_gives_zero_counts_and_nan(tmp_path: Path) -> None:
    con = Store(tmp_path / "none").connect()
    got = corpus_stats(con)
    con.close()
    assert got["calls"] == 0 and got["sessions"] == 0
    assert math.isnan(got["inter_response_gap_median_s"]) and math.isnan(got["days"])


def test_imported_traps_skip_restamped_gaps(tmp_path: Path) -> None:
    root = tmp_path / "store"
    assert main(["import", "claude-code", str(FIXTURES / "traps"), "--store", str(root)]) == 0
    con = Store(root).connect()
    got = corpus_stats(con)
    con.close()
    # S4: F1→F2→F3→F5 every 10 s; S5: G0 (re-stamped) → G1 skipped, G1 → G2 10 s
    assert got["inter_response_gaps"] == 4
    assert got["inter_response_gap_min_s"] == 10.0
    assert got["skipped_restamped_gaps"] == 1
    assert got["restamped_calls"] == 1


def test_stats_command_prints_study_beside(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out
    lines = {line.split("  ")[0].strip(): line for line in out.splitlines()}
    assert lines["calls"].split()[-2:] == ["16", f"{CORPUS['calls']:,.0f}"]
    streams = lines["streams (session × agent: the study's 'sessions')"]
    assert streams.split()[-2:] == ["4", f"{CORPUS['sessions']:,.0f}"]
    assert "failure rate" in out


def test_stats_command_json_and_source_filter(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--store", str(store.root), "--source", "import", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["calls_by_source"] == {"import": 15, "simulated": 1}
    assert doc["selected_sources"] == ["import"]
    assert doc["stats"] == pytest.approx(EXPECTED_IMPORT)
    assert doc["study"]["calls"] == CORPUS["calls"]


def test_stats_command_on_an_empty_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["stats", "--store", str(tmp_path / "empty"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stats"]["calls"] == 0
    assert doc["stats"]["inter_response_gap_median_s"] is None


def test_the_first_use_share_is_the_same_to_the_last_digit_every_time(tmp_path: Path) -> None:
    """A mean of 600 per-stream shares: DuckDB's parallel avg() summed them in a varying order,
    so ``stats --json`` printed a different last digit from run to run."""
    from toolwatch.collector.sources.simulator import simulate

    s = Store(tmp_path)
    s.append("calls", simulate(seed=3, sessions=600))
    seen = set()
    for _ in range(12):
        con = s.connect(threads=4)
        try:
            seen.add(corpus_stats(con)["first_use_share"])
        finally:
            con.close()
    per_stream = s.query(
        "SELECT count(DISTINCT tool) AS tools, count(*) AS calls FROM calls "
        "GROUP BY session_id, agent_id"
    ).to_pylist()
    exact = math.fsum(r["tools"] / r["calls"] for r in per_stream) / len(per_stream)
    assert seen == {exact}
