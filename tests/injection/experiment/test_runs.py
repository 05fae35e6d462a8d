"""Injected runs: deterministic, one insertion point per (seed, session) shared by the kinds,
and the same runs as labelled call records in a store."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch import study
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.runs import build_runs, injected_calls
from toolwatch.injection.experiment.split import normal_sessions, split_by_time
from toolwatch.injection.experiment.storage import load_calls
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.kinds import KINDS
from toolwatch.injection.spans.session_arrays import to_table


def test_runs_are_deterministic_and_share_insertion_points(corpus: pa.Table) -> None:
    config = ExperimentConfig(seeds=(0, 1))
    split = split_by_time(normal_sessions(corpus), config)
    context = InjectionContext.from_sessions(split.train)
    test = split.test[:8]
    a = build_runs(test, context, config)
    b = build_runs(test, context, config, kinds=("sequence_hijack", "burst"))
    for kind in ("sequence_hijack", "burst"):
        assert to_table(a[kind].sessions).equals(to_table(b[kind].sessions))
    # one insertion point per (seed, session), shared by the kinds that do not move it
    for kind in ("runaway_retry", "control_other_normal", "control_same_response_burst"):
        np.testing.assert_array_equal(a[kind].positions, a["burst"].positions)
    assert len(set(a["burst"].positions[:8]) ^ set(a["burst"].positions[8:])) > 0
    for kind in KINDS:  # the simulated corpus has no provenance: the study's kinds only
        runs = a[kind]
        assert len(runs.sessions) == 16
        labelled = np.concatenate([s["label"] == kind for s in runs.sessions])
        np.testing.assert_array_equal(runs.layout.injected_mask(), labelled)
        for s, p, m in zip(runs.sessions, runs.positions, runs.inserted, strict=True):
            labels = s["label"]
            assert (labels[p : p + m] == kind).all() and (labels != kind).sum() == len(s) - m
            assert 10 <= p <= len(s) - 10


def test_injected_calls_carry_their_label_into_the_store(tmp_path, corpus: pa.Table) -> None:  # type: ignore[no-untyped-def]
    config = ExperimentConfig(seeds=(2,), kinds=("burst", "runaway_retry"))
    labelled = injected_calls(corpus, config)
    store = Store(tmp_path / "store")
    store.append("calls", corpus)
    store.append("calls", labelled)
    rows = store.query(
        "SELECT label, count(*) AS calls, count(DISTINCT (session_id, agent_id)) AS sessions "
        "FROM calls WHERE label IS NOT NULL GROUP BY label ORDER BY label"
    ).to_pylist()
    n_test = study.SPLITS["test"][0]
    assert rows == [
        {"label": "burst", "calls": 10 * n_test, "sessions": n_test},
        {"label": "runaway_retry", "calls": 15 * n_test, "sessions": n_test},
    ]
    ids = store.query("SELECT count(*) AS n, count(DISTINCT span_id) AS d FROM calls").to_pylist()
    assert ids[0]["n"] == ids[0]["d"] == corpus.num_rows + labelled.num_rows
    # the very runs the experiment scores for that seed
    split = split_by_time(normal_sessions(corpus), config)
    context = InjectionContext.from_sessions(split.train)
    runs = build_runs(split.test, context, config)["runaway_retry"]
    stored = labelled.filter(pc.match_substring(labelled.column("session_id"), "~runaway_retry~"))
    mine = to_table(runs.sessions, ["tool", "start_time", "input_bytes", "failed", "label"])
    for name in mine.column_names:
        assert stored.column(name).equals(mine.column(name))
    # and a later experiment on the store keeps them out of the normal data
    assert len(normal_sessions(load_calls(store))) == len(normal_sessions(corpus))
