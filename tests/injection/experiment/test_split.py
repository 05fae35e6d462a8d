"""The split by time: the study's dates, shares of sessions, only uninjected sessions as normal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.clock import received
from toolwatch import study
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment.config import ExperimentConfig, ExperimentError
from toolwatch.injection.experiment.protocol import run_experiment
from toolwatch.injection.experiment.report import render
from toolwatch.injection.experiment.results import ExperimentResult
from toolwatch.injection.experiment.runs import build_runs
from toolwatch.injection.experiment.split import Split, normal_sessions, split_by_time, stream_name
from toolwatch.injection.experiment.storage import load_calls
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.session_arrays import to_table


def test_date_split_reproduces_the_studys_split_sizes(result: ExperimentResult) -> None:
    for name in ("train", "calibration", "test"):
        assert tuple(result.split[name]) == study.SPLITS[name]
    assert result.split["mode"] == "dates"
    assert (result.split["train_end"], result.split["calibration_end"]) == (
        "2026-08-24",
        "2026-08-31",
    )


def test_split_by_shares_orders_sessions_by_start(corpus: pa.Table) -> None:
    sessions = normal_sessions(corpus)
    config = ExperimentConfig(split_shares=(0.44, 0.07))
    split = split_by_time(sessions, config)
    n = len(sessions)
    assert len(split.train) == round(0.44 * n)
    assert len(split.calibration) == round(0.07 * n)
    assert split.test_all == n - len(split.train) - len(split.calibration)
    assert all(len(s) >= 30 for s in split.test)

    def first(group: list) -> list[int]:
        return [int(s["start_time"][0]) for s in group]

    assert max(first(split.train)) <= min(first(split.calibration))
    assert max(first(split.calibration)) <= min(first(split.test))


def test_the_default_follows_the_corpus_days_and_study_dates_elsewhere_ask_for_shares(
    corpus: pa.Table,
) -> None:
    shifted = corpus.set_column(
        corpus.schema.get_field_index("start_time"),
        "start_time",
        pc.subtract(corpus.column("start_time"), pa.scalar(timedelta(days=400))),
    )
    with pytest.raises(ExperimentError, match="--split-shares"):
        split_by_time(normal_sessions(shifted), ExperimentConfig(split_dates=study_dates()))
    # the default rule is the study's proportions of the corpus' own days: the same split
    moved = split_by_time(normal_sessions(shifted), ExperimentConfig())
    here = split_by_time(normal_sessions(corpus), ExperimentConfig())
    assert moved.summary()["train"] == here.summary()["train"] == list(study.SPLITS["train"])
    assert moved.spec.dates == ("2025-07-20", "2025-07-27")


def study_dates() -> tuple[str, str]:
    return ("2026-08-24", "2026-08-31")


def test_a_thin_calendar_falls_back_to_the_studys_shares_of_streams(corpus: pa.Table) -> None:
    """Traffic of one day: the days cannot be split, so streams are, by the study's shares."""
    one_day = corpus.set_column(
        corpus.schema.get_field_index("start_time"),
        "start_time",
        pc.add(
            pa.scalar(datetime(2026, 8, 4, tzinfo=UTC)),
            pc.multiply(
                pc.cast(pc.indices_nonzero(pc.is_valid(corpus.column("tool"))), pa.int64()),
                pa.scalar(1000),
            ).cast(pa.duration("us")),
        ),
    )
    split = split_by_time(normal_sessions(one_day), ExperimentConfig())
    assert split.description["mode"] == "shares" and split.description["default"] is True
    n = len(normal_sessions(one_day))
    assert len(split.train) == round(n * 185 / 422)


def test_labelled_sessions_in_the_store_are_not_used_as_normal(corpus: pa.Table) -> None:
    config = ExperimentConfig(seeds=(0,), kinds=("burst",))
    sessions = normal_sessions(corpus)
    split = split_by_time(sessions, config)
    context = InjectionContext.from_sessions(split.train)
    injected = build_runs(split.test[:1], context, config)["burst"].sessions[0]
    injected = injected.replace(session_id=np.full(len(injected), "injected-copy", dtype=object))
    mixed = pa.concat_tables([corpus, to_table([injected])])
    assert len(normal_sessions(mixed)) == len(sessions)


def test_a_stream_whose_client_is_a_year_fast_is_placed_by_its_arrival(tmp_path: Path) -> None:
    """The experiment's split placed streams by their first stamp: a training stream whose
    client clock is a year fast went to the test split (injected into, counted as a test
    stream). Now it is placed by its first arrival mark, where the unskewed store has it, and
    the report says so above the split table."""
    corpus = simulate(seed=2, scale=0.25)
    config = ExperimentConfig(split_shares=(0.44, 0.07))

    def split_of(table: pa.Table, name: str) -> Split:
        store = Store(tmp_path / name)
        store.append("calls", table)
        return split_by_time(normal_sessions(load_calls(store)), config)

    base = split_of(received(corpus), "base")
    stream = stream_name(base.train[len(base.train) // 2])
    fast = split_of(received(corpus, stream, 365 * 24.0), "fast")
    for group in ("train", "calibration", "test", "test_split"):
        names = [stream_name(s) for s in getattr(fast, group)]
        assert names == [stream_name(s) for s in getattr(base, group)]
    assert (base.summary()["placed_by_arrival"], fast.summary()["placed_by_arrival"]) == (0, 1)

    result = run_experiment(
        received(corpus, stream, 365 * 24.0),
        ExperimentConfig(
            split_shares=(0.44, 0.07), seeds=(0,), kinds=("burst",), ablation=False, bootstrap=0
        ),
    )
    text = render(result)
    assert text.splitlines()[1].startswith("1 stream placed by its arrival, not its first stamp")
