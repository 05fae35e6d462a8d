"""A replay saved in the store reads back as the summary the command printed: the ``replays``
rows round-trip every figure of the report, runs are added side by side under their own ids
(as the experiment's), and a saved configuration repeats the run exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from toolwatch import tables
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment.config import ExperimentConfig, ExperimentError
from toolwatch.injection.experiment.replay import ReplayConfig, ReplayResult, run_replay
from toolwatch.injection.experiment.replay_report import render, summary
from toolwatch.injection.experiment.replay_storage import (
    load_replay,
    load_replay_run,
    save_replay,
)

KINDS = ("burst", "runaway_retry")


@pytest.fixture(scope="module")
def corpus() -> pa.Table:
    return simulate(seed=2, scale=0.25)


@pytest.fixture(scope="module")
def result(corpus: pa.Table) -> ReplayResult:
    config = ReplayConfig(
        experiment=ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0, 1), target_fa=0.053),
        replay_kinds=KINDS,
    )
    return run_replay(corpus, config)


def _weekly(data: dict) -> list[dict]:  # type: ignore[type-arg]
    return json.loads(json.dumps(data["weeks"]))  # type: ignore[no-any-return]


def test_a_saved_replay_reads_back_as_the_report_printed_it(
    result: ReplayResult, tmp_path: Path
) -> None:
    store = Store(tmp_path / "store")
    save_replay(store, result)
    loaded = load_replay(store, result.run_id)
    assert loaded == json.loads(json.dumps(summary(result)))  # every figure, JSON types
    assert render(loaded) == render(result)  # the text, to the last character
    weeks, models = len(result.weeks), 2
    rows = store.query(
        "SELECT kind, count(*) AS n, sum(runs) AS runs, sum(detected) AS hits, "
        "count(DISTINCT config_json) AS configs FROM replays WHERE run_id = ? GROUP BY kind "
        "ORDER BY kind",
        [result.run_id],
    ).to_pylist()
    by_kind = {r["kind"]: r for r in rows}
    assert set(by_kind) == {"normal", *KINDS}
    assert all(r["n"] == weeks * models and r["configs"] == 1 for r in rows)
    # normal: the weeks' streams add up to the long test streams, alarms to the totals
    streams = result.totals["adaptive"]["streams"]
    assert by_kind["normal"]["runs"] == models * streams
    assert by_kind["normal"]["hits"] == sum(
        result.totals[m]["alarmed"] for m in ("adaptive", "frozen")
    )
    for kind in KINDS:
        assert by_kind[kind]["hits"] == sum(
            result.totals[m]["detection"][kind][0] for m in ("adaptive", "frozen")
        )
    config = json.loads(
        store.query("SELECT config_json FROM replays LIMIT 1").to_pylist()[0]["config_json"]
    )
    assert config["experiment"]["seeds"] == [0, 1] and config["experiment"]["target_fa"] == 0.053
    assert config["experiment"]["split_shares"] == [0.44, 0.07]
    assert [f.name for f in tables.REPLAYS.fields] == store.query(
        "SELECT * EXCLUDE (date) FROM replays LIMIT 0"
    ).column_names


def test_runs_are_added_side_by_side_and_a_rerun_repeats_the_numbers(
    result: ReplayResult, corpus: pa.Table, tmp_path: Path
) -> None:
    store = Store(tmp_path / "store")
    save_replay(store, result)
    config, split = load_replay_run(store, result.run_id)
    assert split["data"] == result.split["data"]  # the fingerprint a re-run compares
    again = run_replay(corpus, config)
    assert again.run_id != result.run_id
    save_replay(store, again)
    ids = store.query("SELECT DISTINCT run_id FROM replays ORDER BY 1").column("run_id")
    assert sorted(ids.to_pylist()) == sorted([result.run_id, again.run_id])
    first, second = load_replay(store, result.run_id), load_replay(store, again.run_id)
    assert second["config"] == first["config"]
    assert _weekly(second) == _weekly(first)  # same split, seeds, kinds: the same weeks
    for model in ("adaptive", "frozen"):
        a, b = first["totals"][model], second["totals"][model]
        assert {k: v for k, v in a.items() if k != "seconds"} == {
            k: v for k, v in b.items() if k != "seconds"
        }
    with pytest.raises(ExperimentError, match="no saved replay with run id 'nope'"):
        load_replay(store, "nope")
    with pytest.raises(ExperimentError, match="holds no saved replays"):
        load_replay(Store(tmp_path / "empty"), result.run_id)
