"""BRIEF §3 by hand: every cue of a small stream from its formula, then the all-cue score and
its CUSUM and EWMA, against the product's batch and online numbers."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from support.detection import call, table
from toolwatch.detection import NormalModel, OnlineScorer, score_calls

TRAIN = [  # tool, seconds, input bytes, output bytes, failed
    ("A", 0, 10, 100, False),
    ("B", 2, 20, 200, False),
    ("A", 5, 10, 100, True),
    ("B", 9, 30, 300, False),
    ("A", 14, 10, 100, False),
    ("B", 20, 20, 200, False),
]
TEST = [
    ("A", 0.0, 10, 100, False),
    ("B", 3.0, 20, 200, False),
    ("B", 3.5, 20, 200, True),  # 0.5 s after a different response: below the 2 s minimum
    ("A", 4.0, 50, 100, True),
    ("A", 10.0, 10, 100, False),
]


def _rows(spec: list[tuple[str, float, int, int, bool]], name: str) -> list[dict]:
    return [
        call(
            tool,
            t,
            session=name,
            response=f"{name}{i}",
            input_bytes=a,
            output_bytes=b,
            failed=f,
            n=i,
        )
        for i, (tool, t, a, b, f) in enumerate(spec)
    ]


# ----------------------------------------------------------------- the four cues, by hand

# order: vocabulary {A, B, <unk>}; N = 6 training calls, C(A) = C(B) = 3 → P_u(A) = P_u(B) = 4/9
P_U = 4 / 9
# Witten–Bell over the training bigrams <s>→A (1), A→B (3), B→A (2): one follower each (T = 1)
P_G = {
    ("<s>", "A"): (1 + P_U) / 2,
    ("A", "B"): (3 + P_U) / 4,
    ("A", "A"): P_U / 4,
    ("B", "A"): (2 + P_U) / 3,
    ("B", "B"): P_U / 3,
}


def order(tools: list[str]) -> list[float]:
    """−log P with the stream's own bigram mixed in: (c + t·P_g) / (n + t)."""
    out, pairs = [], []
    for i, tool in enumerate(tools):
        if i == 0:
            out.append(-math.log(P_G[("<s>", tool)]))
            continue
        prev = tools[i - 1]
        n = sum(1 for p, _ in pairs if p == prev)
        c = sum(1 for p, w in pairs if (p, w) == (prev, tool))
        t = len({w for p, w in pairs if p == prev})
        pg = P_G[(prev, tool)]
        out.append(-math.log((c + t * pg) / (n + t) if n else pg))
        pairs.append((prev, tool))
    return out


def size(spec: list[tuple[str, float, int, int, bool]]) -> list[float]:
    """Fewer than 5 calls per tool: the all-calls mean and sd of log1p(bytes), sd ≥ 0.25."""
    l_in = [math.log1p(a) for _, _, a, _, _ in TRAIN]
    l_out = [math.log1p(b) for _, _, _, b, _ in TRAIN]
    m_in, s_in = statistics.mean(l_in), max(statistics.stdev(l_in), 0.25)
    m_out, s_out = statistics.mean(l_out), max(statistics.stdev(l_out), 0.25)
    return [
        max(0.0, (math.log1p(a) - m_in) / s_in) + abs((math.log1p(b) - m_out) / s_out)
        for _, _, a, b, _ in spec
    ]


def time_(spec: list[tuple[str, float, int, int, bool]]) -> list[float]:
    """Training gaps 2, 3, 4, 5, 6 s: P(gap ≤ g) = #/5; below 2 s, (1/5) · g / 2."""
    gaps = sorted(b[1] - a[1] for a, b in itertools.pairwise(TRAIN))
    out = [0.0]
    for a, b in itertools.pairwise(spec):
        g = b[1] - a[1]
        p = sum(x <= g for x in gaps) / 5 if g >= gaps[0] else (1 / 5) * max(g, 0.001) / gaps[0]
        out.append(-math.log(p))
    return out


def failure(spec: list[tuple[str, float, int, int, bool]]) -> list[float]:
    """p0 = (1 + 1) / (6 + 2); p_A = (1 + 2·p0) / (3 + 2); p_B = (0 + 2·p0) / (3 + 2)."""
    p0 = 2 / 8
    p = {"A": (1 + 2 * p0) / 5, "B": (0 + 2 * p0) / 5}
    return [-math.log(p[t]) if f else -math.log(1 - p[t]) for t, _, _, _, f in spec]


def by_hand() -> dict[str, list[float]]:
    cues = {
        "order": (order([r[0] for r in TRAIN]), order([r[0] for r in TEST])),
        "size": (size(TRAIN), size(TEST)),
        "time": (time_(TRAIN), time_(TEST)),
        "failure": (failure(TRAIN), failure(TEST)),
    }
    z = {}
    for name, (train, test) in cues.items():
        mean, sd = statistics.mean(train), statistics.stdev(train)
        z[name] = [(x - mean) / sd for x in test]
    # all = the mean of the four standardised cues, NOT standardised again
    all_ = [sum(z[c][i] for c in z) / 4 for i in range(len(TEST))]
    cusum, ewma, s, e = [], [], 0.0, 0.0
    for x in all_:
        s = max(0.0, s + x - 0.5)  # Page's CUSUM, k = 0.5, from 0
        e = 0.3 * x + 0.7 * e  # EWMA, α = 0.3, from 0
        cusum.append(s)
        ewma.append(e)
    return {**{c: v[1] for c, v in cues.items()}, "all": all_, "all_cusum": cusum, "all_ewma": ewma}


def test_the_all_cue_cusum_and_ewma_of_a_small_stream_by_hand() -> None:
    model = NormalModel.fit(table(_rows(TRAIN, "t")))
    want = by_hand()
    batch = score_calls(model, table(_rows(TEST, "x")))
    online = OnlineScorer(model)
    online_rows = [online.update(row) for row in _rows(TEST, "x")]
    for column, values in want.items():
        assert batch.column(column).to_pylist() == pytest.approx(values, rel=1e-12, abs=1e-12)
        assert [r[column] for r in online_rows] == batch.column(column).to_pylist()  # exact
    assert batch.column("all_point").to_pylist() == batch.column("all").to_pylist()
    # the hand-made stream is what the study's method is about: the 0.5 s different-response
    # gap below every training gap scores far above the fastest normal gap, and graded
    assert want["time"][2] == pytest.approx(-math.log(1 / 20))
    assert want["all_cusum"][:2] == [0.0, 0.0] and want["all_cusum"][2] > 1.0
