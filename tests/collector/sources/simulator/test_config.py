"""The simulator's configuration: the study's calendar and other ones, scale, seeds (the same
seed gives the same table, ids never collide between corpora), bad settings refused."""

from __future__ import annotations

import time
from datetime import date

import pytest

from support.simulator import Corpus, connect, within
from toolwatch import study
from toolwatch.collector.sources.simulator import (
    SPLIT_DATES,
    SimulationConfig,
    generate,
    simulate,
    split_dates,
)

C = study.CORPUS


def test_split_dates_are_the_studys() -> None:
    assert SPLIT_DATES == {
        "train": ("2026-08-04", "2026-08-24"),
        "calibration": ("2026-08-25", "2026-08-31"),
        "test": ("2026-09-01", "2026-09-14"),
    }
    assert SPLIT_DATES["train"][0] == study.CORPUS_START
    assert SPLIT_DATES["test"][1] == study.CORPUS_END
    halved = split_dates("2026-01-01", 21)
    assert [(b - a).days + 1 for a, b in halved.values()] == [10, 4, 7]  # 21/7/14 scaled
    assert halved["test"][1] == date(2026, 1, 21)


def test_same_seed_same_table_other_seed_other_table() -> None:
    a = simulate(seed=5, sessions=60)
    b = simulate(seed=5, sessions=60)
    c = simulate(seed=6, sessions=60)
    assert a.equals(b)
    assert not a.equals(c)
    assert a.column("tool").to_pylist() != c.column("tool").to_pylist()
    # ids never collide between different corpora (e.g. one store holding both)
    d = simulate(seed=5, sessions=61)
    assert not set(a.column("call_id").to_pylist()) & set(d.column("call_id").to_pylist())
    assert not set(a.column("call_id").to_pylist()) & set(c.column("call_id").to_pylist())


def test_scaled_corpus_keeps_shape_and_split_proportions() -> None:
    table = simulate(seed=2, sessions=100)
    con = connect(table)
    corpus = Corpus(2, table, con)
    f = 100 / C["sessions"]
    got = {
        s: (k, n)
        for s, k, n in corpus.rows("SELECT split, count(*), sum(n) FROM session_split GROUP BY 1")
    }
    assert sum(k for k, _ in got.values()) == 100
    for name in ("train", "calibration", "test"):
        sessions, calls = study.SPLITS[name]
        assert abs(got[name][0] - sessions * f) <= 1, name
        # mean calls per session stays the study's
        assert within(got[name][1] / got[name][0], calls / sessions, 0.02), name
    assert corpus.one("SELECT count(*) FROM gaps WHERE NOT same_response AND gap_s <= 1") == 0
    assert SimulationConfig.scaled(0.25).sessions == round(C["sessions"] * 0.25)
    assert simulate(seed=2, scale=100 / C["sessions"]).equals(table)


def test_other_calendar() -> None:
    table = simulate(seed=3, sessions=60, start="2027-01-04", days=21)
    first, last = Corpus(3, table, connect(table)).one(
        "SELECT min(start_time)::DATE, max(start_time)::DATE FROM calls"
    )
    assert first == date(2027, 1, 4)
    assert last == date(2027, 1, 24)


def test_bad_configuration_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="sessions"):
        SimulationConfig(sessions=2)
    with pytest.raises(ValueError, match="ISO date"):
        SimulationConfig(start="4 Aug 2026")
    with pytest.raises(ValueError, match="days"):
        SimulationConfig(days=2)
    with pytest.raises(ValueError, match="3 days from 9999-12-30 run past the year 9999"):
        SimulationConfig(start="9999-12-30", days=3)  # OverflowError (exit 70) before
    with pytest.raises(ValueError, match="seed must be from 0 to"):
        SimulationConfig(seed=2**63)  # written in full, then refused by the simulations table
    with pytest.raises(ValueError, match="scale"):
        SimulationConfig.scaled(0)


def test_full_corpus_generates_quickly() -> None:
    began = time.perf_counter()
    generate(SimulationConfig(seed=9))
    # ~0.5 s on an idle core; generous for a shared CI machine (the demo budget is 90 s)
    assert time.perf_counter() - began < 6.0
