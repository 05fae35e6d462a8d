"""The simulated workload meets the study's published marginals (BRIEF §2–3).

Every figure is computed here, independently of the generator, with DuckDB over the generated
Arrow table; targets come from ``toolwatch.study``. The marginal tests run on two seeds so the
calibration is not fitted to one draw. Tolerances are stated next to each assertion.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from datetime import date, timedelta
from typing import Any

import pytest

from support.simulator import Corpus, connect, within
from toolwatch import study
from toolwatch.collector.sources.simulator import (
    SOURCE,
    SPLIT_DATES,
    assign_splits,
    simulate,
)
from toolwatch.collector.sources.simulator.config import REFUSAL_TEXT, SERVICE
from toolwatch.collector.store import CALLS_SCHEMA
from toolwatch.record import result_size, split_mcp_name

C = study.CORPUS


@pytest.fixture(scope="module", params=[0, 1], ids=["seed0", "seed1"])
def corpus(request: pytest.FixtureRequest) -> Corpus:
    table = simulate(seed=request.param)
    return Corpus(request.param, table, connect(table))


@pytest.fixture(scope="module")
def corpus0() -> Corpus:
    table = simulate(seed=0)
    return Corpus(0, table, connect(table))


# ------------------------------------------------------------------------ records


def test_records_are_plainly_simulated_call_records(corpus: Corpus) -> None:
    t = corpus.table
    assert t.schema.equals(CALLS_SCHEMA)
    n = t.num_rows
    assert corpus.one("SELECT count(*) FROM calls WHERE source = ?", [SOURCE]) == n
    assert corpus.one("SELECT count(*) FROM calls WHERE service = ?", [SERVICE]) == n
    assert corpus.one("SELECT count(*) FROM calls WHERE label IS NULL") == n
    assert corpus.one("SELECT count(*) FROM calls WHERE NOT restamped") == n
    assert (
        corpus.one(
            "SELECT count(*) FROM calls WHERE response_id LIKE 'msg_sim_%' "
            "AND call_id LIKE 'toolu_sim_%' AND session_id LIKE 'sim-%'"
        )
        == n
    )
    assert (
        corpus.one(
            "SELECT count(*) FROM calls WHERE regexp_full_match(span_id, '[0-9a-f]{16}') "
            "AND regexp_full_match(trace_id, '[0-9a-f]{32}')"
        )
        == n
    )
    assert corpus.one("SELECT count(DISTINCT span_id) FROM calls") == n
    assert corpus.one("SELECT count(DISTINCT call_id) FROM calls") == n
    # one trace per session (a subagent's calls are in its parent's), and a response never
    # spans two streams
    assert (
        corpus.one(
            "SELECT max(k) FROM (SELECT count(DISTINCT trace_id) k FROM calls GROUP BY session_id)"
        )
        == 1
    )
    assert corpus.one("SELECT count(DISTINCT trace_id) = count(DISTINCT session_id) FROM calls")
    assert (
        corpus.one(
            "SELECT max(k) FROM (SELECT count(DISTINCT stream) k FROM calls GROUP BY response_id)"
        )
        == 1
    )
    # sizes and durations are present and sane; failure class only on failures
    assert corpus.one("SELECT min(input_bytes) FROM calls") >= 2
    assert corpus.one("SELECT min(output_bytes) FROM calls") >= 0
    assert (
        corpus.one("SELECT count(*) FROM calls WHERE duration_us IS NULL OR duration_us <= 0") == 0
    )
    assert corpus.one(
        "SELECT count(*) FROM calls WHERE (error_type = 'tool_error') <> failed "
        "OR (error_type IS NULL) = failed"
    ) == 0  # fmt: skip


def test_seq_is_time_order_and_responses_are_contiguous(corpus: Corpus) -> None:
    # seq numbers the calls of a session (main agent and subagents together, as the importer
    # and the instrumentation do): 0..n-1, in time order
    bad_numbering = corpus.one(
        "SELECT count(*) FROM (SELECT session_id FROM calls GROUP BY session_id "
        "HAVING min(seq) <> 0 OR max(seq) <> count(*) - 1 OR count(DISTINCT seq) <> count(*))"
    )
    assert bad_numbering == 0
    out_of_order = corpus.one(
        """
        SELECT count(*) FROM (
            SELECT start_time, stream,
                   lag(start_time) OVER (PARTITION BY session_id ORDER BY seq) AS prev,
                   lag(start_time) OVER (PARTITION BY stream ORDER BY seq) AS prev_in_stream
            FROM calls
        ) WHERE start_time < prev OR start_time <= prev_in_stream
        """
    )
    assert out_of_order == 0
    # one numbering per session: the main agent's calls continue after a subagent's
    interleaved = corpus.one(
        """
        SELECT count(*) FROM (
            SELECT session_id, agent_id, lag(agent_id) OVER (PARTITION BY session_id ORDER BY seq)
                   AS prev_agent, row_number() OVER (PARTITION BY session_id ORDER BY seq) AS k
            FROM calls
        ) WHERE k > 1 AND agent_id IS NOT DISTINCT FROM NULL AND prev_agent IS NOT NULL
        """
    )
    assert interleaved > 0
    # the calls of one response are consecutive in their stream
    split_responses = corpus.one(
        """
        SELECT count(*) FROM (
            SELECT response_id, max(k) - min(k) + 1 AS span, count(*) AS n
            FROM (SELECT response_id,
                         row_number() OVER (PARTITION BY stream ORDER BY seq) AS k FROM calls)
            GROUP BY response_id
        ) WHERE span <> n
        """
    )
    assert split_responses == 0


# ------------------------------------------------------------------------ size and time


def test_corpus_size_and_window(corpus: Corpus) -> None:
    assert corpus.one("SELECT count(DISTINCT stream) FROM calls") == C["sessions"]
    assert corpus.one("SELECT count(DISTINCT session_id) FROM calls") < C["sessions"]
    assert corpus.table.num_rows == C["calls"]
    first, last = corpus.one("SELECT min(start_time)::DATE, max(start_time)::DATE FROM calls")
    assert first == date.fromisoformat(study.CORPUS_START)
    assert last == date.fromisoformat(study.CORPUS_END)
    assert (last - first).days + 1 == C["days"]


def test_split_sizes_by_time_are_exact(corpus: Corpus) -> None:
    got = {
        s: (k, c)
        for s, k, c in corpus.rows("SELECT split, count(*), sum(n) FROM session_split GROUP BY 1")
    }
    for name in ("train", "calibration", "test"):
        assert got[name] == study.SPLITS[name], name
    short_sessions = C["sessions"] - sum(s for s, _ in study.SPLITS.values())  # 145
    short_calls = C["calls"] - sum(c for _, c in study.SPLITS.values())  # 1,226
    assert got["test_short"] == (short_sessions, short_calls)
    # the public helper agrees with the SQL
    helper = assign_splits(corpus.table)
    for name in ("train", "calibration", "test", "test_short"):
        rows = corpus.rows("SELECT stream FROM session_split WHERE split = ?", [name])
        sql = {r[0] for r in rows}
        assert {f"{s}/{a}" if a else s for s, a in helper[name]} == sql
        firsts = [
            corpus.one(
                "SELECT min(start_time) FROM calls WHERE session_id = ? "
                "AND agent_id IS NOT DISTINCT FROM ?",
                [s, a],
            )
            for s, a in helper[name][:50]
        ]
        assert firsts == sorted(firsts)  # listed by first call time


def test_no_session_crosses_a_split_boundary(corpus: Corpus) -> None:
    bounds = [date.fromisoformat(SPLIT_DATES[s][0]) for s in ("calibration", "test")]
    bounds.append(date.fromisoformat(study.CORPUS_END) + timedelta(days=1))
    crossing = corpus.one(
        """
        SELECT count(*) FROM session_split
        WHERE (first_time < ?::TIMESTAMPTZ) <> (last_time < ?::TIMESTAMPTZ)
           OR (first_time < ?::TIMESTAMPTZ) <> (last_time < ?::TIMESTAMPTZ)
           OR last_time >= ?::TIMESTAMPTZ
        """,
        [f"{bounds[0]} 00:00:00+00", f"{bounds[0]} 00:00:00+00", f"{bounds[1]} 00:00:00+00",
         f"{bounds[1]} 00:00:00+00", f"{bounds[2]} 00:00:00+00"],
    )  # fmt: skip
    assert crossing == 0
    # nor does a whole session (a parent with its subagents): time windows select sessions
    conversations = corpus.one(
        """
        SELECT count(*) FROM (
            SELECT session_id, min(start_time) AS a, max(start_time) AS b FROM calls
            GROUP BY session_id
        ) WHERE (a < ?::TIMESTAMPTZ) <> (b < ?::TIMESTAMPTZ)
             OR (a < ?::TIMESTAMPTZ) <> (b < ?::TIMESTAMPTZ)
        """,
        [f"{bounds[0]} 00:00:00+00", f"{bounds[0]} 00:00:00+00", f"{bounds[1]} 00:00:00+00",
         f"{bounds[1]} 00:00:00+00"],
    )  # fmt: skip
    assert conversations == 0


# ------------------------------------------------------------------------ tools


def test_tool_inventory(corpus: Corpus) -> None:
    assert corpus.one("SELECT count(DISTINCT tool) FROM calls") == C["tools"]  # 78, exact
    assert corpus.one("SELECT count(DISTINCT server) FROM calls") == C["mcp_servers"]  # 8
    assert (
        corpus.one("SELECT count(DISTINCT tool) FROM calls WHERE server IS NOT NULL")
        == C["mcp_tools"]
    )
    builtins = {r[0] for r in corpus.rows("SELECT DISTINCT tool FROM calls WHERE server IS NULL")}
    assert len(builtins) == C["tools"] - C["mcp_tools"]  # 27
    assert {"Read", "Edit", "Write", "Bash", "Grep", "Glob", "WebFetch", "WebSearch", "Task",
            "TodoWrite"} <= builtins  # fmt: skip
    for tool, server in corpus.rows("SELECT DISTINCT tool, server FROM calls"):
        assert split_mcp_name(tool)[0] == server, tool
    mcp_calls = corpus.one("SELECT count(*) FROM calls WHERE server IS NOT NULL")
    assert within(mcp_calls, C["mcp_calls"], 0.05)  # 1,772 ± 5 %


def test_client_upgrade_adds_a_few_new_tools_in_the_test_window(corpus: Corpus) -> None:
    test_start = f"{SPLIT_DATES['test'][0]} 00:00:00+00"
    new = dict(
        corpus.rows(
            """
            SELECT tool, count(*) FROM calls WHERE start_time >= ?::TIMESTAMPTZ
              AND tool NOT IN (SELECT DISTINCT tool FROM calls WHERE start_time < ?::TIMESTAMPTZ)
            GROUP BY tool
            """,
            [test_start, test_start],
        )
    )
    window = corpus.one(
        "SELECT count(*) FROM calls WHERE start_time >= ?::TIMESTAMPTZ", [test_start]
    )
    # the study: 104 of 9,393 test-window calls were to tools absent in August (1.1 %)
    assert "Agent" in new
    assert 0.003 < sum(new.values()) / window < 0.03
    # renamed tools never appear in one session together with their new name
    both = corpus.one(
        """
        SELECT count(*) FROM (SELECT session_id FROM calls GROUP BY session_id
        HAVING bool_or(tool = 'Task') AND bool_or(tool = 'Agent'))
        """
    )
    assert both == 0


# ------------------------------------------------------------------------ response boundary


def test_inter_response_gaps(corpus: Corpus) -> None:
    n, low, median, le_1s, p95 = corpus.one(
        "SELECT count(*), min(gap_s), median(gap_s), avg((gap_s <= 1)::INT), "
        "quantile_cont(gap_s, 0.95) "
        "FROM gaps WHERE NOT same_response"
    )
    assert le_1s == 0  # none <= 1 s
    assert 1.0 < low < 2.0  # study: 1.36 s
    assert abs(median - C["inter_response_gap_median_s"]) <= 2.0  # 11.1 ± 2 s
    assert p95 > 4 * median  # heavy tail (think time, long tools)
    assert within(n, C["inter_response_gaps"], 0.05)  # 21,300 ± 5 %


def test_within_response_gaps_and_parallel_calls(corpus: Corpus) -> None:
    n, median, le_1s = corpus.one(
        "SELECT count(*), median(gap_s), avg((gap_s <= 1)::DOUBLE) FROM gaps WHERE same_response"
    )
    assert within(n, C["parallel_calls"], 0.05)  # 4,618 ± 5 %
    assert abs(le_1s - C["within_response_share_le_1s"]) <= 0.05  # 0.53 ± 0.05
    assert abs(median - C["within_response_gap_median_s"]) <= 0.15  # 0.89 ± 0.15 s
    # the transcripts note: 11 % of responses hold > 1 call, 25 % of all calls
    multi, share_calls = corpus.one(
        "SELECT avg((k > 1)::DOUBLE), sum(k) FILTER (WHERE k > 1) / sum(k) "
        "FROM (SELECT count(*) AS k FROM calls GROUP BY response_id)"
    )
    assert abs(multi - 0.11) <= 0.02
    assert abs(share_calls - 0.25) <= 0.04


# ------------------------------------------------------------------------ session habits


def test_first_use_share(corpus: Corpus) -> None:
    # share of a session's calls that are its first use of that tool, averaged over sessions
    per_session = corpus.one(
        "SELECT avg(d / n) FROM (SELECT count(DISTINCT tool)::DOUBLE AS d, count(*) AS n "
        "FROM calls GROUP BY stream)"
    )
    assert abs(per_session - C["first_use_share"]) <= 0.03  # 0.37 ± 0.03


def _log_loss(corpus: Corpus) -> tuple[float, float]:
    """Mean −log P(next tool | previous) on test sessions: global bigram vs session mix.

    The global bigram is learnt from the training split (add-0.1 smoothing); the mix adds the
    session's own running bigram with Witten–Bell weights, as the study's order cue does.
    """
    rows = corpus.rows(
        "SELECT c.stream, c.tool, s.split FROM calls c JOIN session_split s USING (stream) "
        "ORDER BY c.stream, c.start_time, c.seq"
    )
    sessions: dict[str, list[str]] = defaultdict(list)
    split: dict[str, str] = {}
    for sid, tool, sp in rows:
        sessions[sid].append(tool)
        split[sid] = sp
    vocabulary = len({r[1] for r in rows})
    bigram: dict[str, Counter[str]] = defaultdict(Counter)
    for sid, tools in sessions.items():
        if split[sid] == "train":
            for a, b in itertools.pairwise(tools):
                bigram[a][b] += 1
    glob = mix = 0.0
    n = 0
    for sid, tools in sessions.items():
        if split[sid] != "test":
            continue
        own: dict[str, Counter[str]] = defaultdict(Counter)
        for a, b in itertools.pairwise(tools):
            g = (bigram[a][b] + 0.1) / (sum(bigram[a].values()) + 0.1 * vocabulary)
            seen, kinds = sum(own[a].values()), len(own[a])
            lam = seen / (seen + kinds) if seen else 0.0
            p_own = own[a][b] / seen if seen else 0.0
            glob -= math.log(g)
            mix -= math.log(lam * p_own + (1 - lam) * g)
            own[a][b] += 1
            n += 1
    return glob / n, mix / n


def test_sessions_repeat_their_own_procedures(corpus: Corpus) -> None:
    glob, mix = _log_loss(corpus)
    # each session has its own habits: its running bigram predicts its next tool much better
    # than the global bigram alone (identical habits everywhere would give a gain near 0.1)
    assert glob - mix > 0.25


# ------------------------------------------------------------------------ sizes and failures


def test_sizes(corpus: Corpus) -> None:
    med, plus1, plus2 = corpus.one(
        "SELECT median(input_bytes), exp(avg(ln(input_bytes)) + stddev_samp(ln(input_bytes))), "
        "exp(avg(ln(input_bytes)) + 2 * stddev_samp(ln(input_bytes))) "
        "FROM calls WHERE tool = 'WebFetch'"
    )
    assert within(med, 187, 0.10)  # WebFetch input median 187 B
    assert within(plus1, 270, 0.10)  # +1σ ≈ 270 B
    assert within(plus2, 390, 0.15)  # +2σ ≈ 390 B
    in_med, out_med = corpus.one("SELECT median(input_bytes), median(output_bytes) FROM calls")
    assert within(in_med, 150, 0.20)  # transcripts note: inputs ≈ 150 B
    # results ≈ 310 B; the median of this two-humped mixture moves ~10 % between seeds
    assert within(out_med, 310, 0.25)
    # every tool with enough calls has its own spread (log-normal-ish, not constant)
    flat = corpus.rows(
        "SELECT tool FROM calls GROUP BY tool HAVING count(*) >= 50 "
        "AND stddev_samp(ln(output_bytes + 1)) < 0.05"
    )
    assert flat == []


def test_failures(corpus: Corpus) -> None:
    rate = corpus.one("SELECT avg(failed::DOUBLE) FROM calls")
    assert abs(rate - 0.092) <= 0.015  # study ≈ 9 %, transcripts 9.4 %
    bash_share = corpus.one("SELECT avg((tool = 'Bash')::DOUBLE) FROM calls WHERE failed")
    assert bash_share > 0.5  # mostly shell commands
    top = corpus.one(
        "SELECT tool FROM calls GROUP BY tool HAVING count(*) >= 500 "
        "ORDER BY avg(failed::DOUBLE) DESC LIMIT 1"
    )
    assert top == "Bash"


# ------------------------------------------------------------------------ subagents


def test_subagent_sessions(corpus: Corpus) -> None:
    streams, subagents = corpus.one(
        "SELECT count(DISTINCT stream), count(DISTINCT stream) FILTER (WHERE agent_id IS NOT NULL) "
        "FROM calls"
    )
    assert 0.15 <= subagents / streams <= 0.40
    # a subagent carries its parent's session id (and trace) and its own agent id; its parent
    # runs in the same split and calls Task/Agent a few seconds before the subagent's first call
    rows = corpus.rows(
        """
        WITH sub AS (
            SELECT stream, session_id, agent_id, min(start_time) AS t0
            FROM calls WHERE agent_id IS NOT NULL GROUP BY ALL
        ),
        parent AS (SELECT DISTINCT session_id, stream FROM calls WHERE agent_id IS NULL)
        SELECT sub.stream, regexp_full_match(sub.agent_id, '[0-9a-f]{8}'),
               (SELECT min(epoch_us(sub.t0) - epoch_us(p.start_time)) FROM calls p
                WHERE p.session_id = sub.session_id AND p.agent_id IS NULL
                  AND p.tool IN ('Task', 'Agent') AND p.start_time < sub.t0) / 1e6 AS lead_s,
               (SELECT split FROM session_split s JOIN parent USING (stream)
                WHERE parent.session_id = sub.session_id) AS parent_split,
               (SELECT split FROM session_split WHERE stream = sub.stream) AS own_split
        FROM sub
        """
    )
    assert all(r[1] for r in rows)
    assert all(r[3] is not None for r in rows)  # every subagent's session has its main agent
    assert all(r[3] == r[4] or r[3].startswith("test") for r in rows)
    led = [r for r in rows if r[2] is not None and 2.0 <= r[2] <= 8.0]
    assert len(led) >= 0.9 * len(rows)


# ------------------------------------------------------------------------ the real misbehaviour


def _long_failed_runs(corpus: Corpus, min_run: int = 20) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Runs of >= min_run consecutive failed calls of one tool with identical input size."""
    rows = corpus.rows(
        "SELECT stream, agent_id, tool, failed, input_bytes, output_bytes, response_id, "
        "epoch_us(start_time) / 1e6 FROM calls ORDER BY stream, start_time, seq"
    )
    runs: list[tuple[str, list[tuple[Any, ...]]]] = []
    current: list[tuple[Any, ...]] = []

    def close() -> None:
        if len(current) >= min_run:
            runs.append((current[0][0], list(current)))

    for r in rows:
        same = (
            current
            and r[0] == current[-1][0]
            and r[3]
            and r[2] == current[-1][2]
            and r[4] == current[-1][4]
        )
        if same:
            current.append(r)
        else:
            close()
            current = [r] if r[3] else []
    close()
    return runs


def test_the_retry_loop_subagent_is_there_unlabelled(corpus: Corpus) -> None:
    runs = _long_failed_runs(corpus)
    assert len(runs) == 1  # the one real misbehaviour, nothing else like it
    stream, run = runs[0]
    assert len(run) == 33  # the refused call and 32 retries
    assert {r[2] for r in run} == {"Agent"}
    assert all(r[1] is not None for r in run)  # a subagent
    assert len({r[6] for r in run}) == len(run)  # one response each
    assert {r[5] for r in run} == {result_size(REFUSAL_TEXT)}  # the same refusal every time
    gaps = [b[7] - a[7] for a, b in itertools.pairwise(run)]
    assert all(1.0 < g < 10.0 for g in gaps)  # seconds apart
    first = corpus.one("SELECT min(start_time) FROM calls WHERE stream = ?", [stream])
    assert first.date() == date(2026, 9, 7) and 7 <= first.hour <= 8
    split, n = corpus.one("SELECT split, n FROM session_split WHERE stream = ?", [stream])
    assert split == "test" and n >= 39  # in the study's test split; flagged at call 39
    assert corpus.one("SELECT count(*) FROM calls WHERE label IS NOT NULL") == 0


def test_retry_loop_can_be_left_out() -> None:
    table = simulate(seed=0, sessions=120, runaway_retries=0)
    corpus = Corpus(0, table, connect(table))
    assert _long_failed_runs(corpus) == []


# ------------------------------------------------------------------------ corpus_stats agrees


def test_corpus_stats_sees_the_same_corpus(corpus0: Corpus) -> None:
    corpus_stats = pytest.importorskip("toolwatch.collector.stats.corpus").corpus_stats
    stats = corpus_stats(corpus0.con)
    c = corpus0
    assert stats["sessions"] == C["sessions"]
    assert stats["calls"] == C["calls"]
    assert stats["tools"] == C["tools"]
    assert stats["mcp_servers"] == C["mcp_servers"]
    assert stats["mcp_tools"] == C["mcp_tools"]
    assert stats["days"] == C["days"]
    assert stats["inter_response_share_le_1s"] == 0
    assert stats["inter_response_gaps"] == c.one(
        "SELECT count(*) FROM gaps WHERE NOT same_response"
    )
    assert stats["parallel_calls"] == c.one("SELECT count(*) FROM gaps WHERE same_response")
    assert stats["inter_response_gap_median_s"] == pytest.approx(
        c.one("SELECT median(gap_s) FROM gaps WHERE NOT same_response")
    )
    assert stats["within_response_share_le_1s"] == pytest.approx(
        c.one("SELECT avg((gap_s <= 1)::DOUBLE) FROM gaps WHERE same_response")
    )
    assert stats["failure_rate"] == pytest.approx(c.one("SELECT avg(failed::DOUBLE) FROM calls"))
    for key in ("mcp_calls", "parallel_calls", "inter_response_gaps"):
        assert within(stats[key], C[key], 0.05), key
    # corpus_stats reads the study's first-use share as the mean over sessions (streams)
    assert abs(stats["first_use_share"] - C["first_use_share"]) <= 0.03
