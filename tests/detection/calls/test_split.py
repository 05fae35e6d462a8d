"""The split by time: a stream whose client clock is ahead of the collector's is placed by its
arrival."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from support.clock import received
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection.calls.split import StoreSplit, placed_by_arrival_line, split_store
from toolwatch.detection.calls.split_options import SplitSpec

YEAR_H = 365 * 24.0


def _store(root: Path, corpus: pa.Table) -> Store:
    store = Store(root)
    store.append("calls", corpus)
    return store


def _names(cut: StoreSplit, group: str) -> set[str]:
    sessions = cut.streams.column("session_id").to_pylist()
    agents = cut.streams.column("agent_id").to_pylist()
    idx = getattr(cut.split, group).tolist()
    return {sessions[i] if agents[i] is None else f"{sessions[i]}/{agents[i]}" for i in idx}


def test_a_stream_stamped_a_year_ahead_of_its_arrival_is_placed_by_its_arrival(
    tmp_path: Path,
) -> None:
    """A training stream whose client clock is a year fast was placed by its first stamp: in
    the test split, and the default rule's days stretched by a year (every other stream in
    training). Now it is placed by its first arrival mark, the split is the unskewed store's,
    and the description counts it."""
    corpus = simulate(seed=2, scale=0.25)
    spec = SplitSpec(shares=(0.44, 0.07))
    base = split_store(_store(tmp_path / "base", received(corpus)), spec)
    stream = sorted(_names(base, "train"))[len(base.split.train) // 2]
    fast = _store(tmp_path / "fast", received(corpus, stream, YEAR_H))

    cut = split_store(fast, spec)
    assert stream in _names(cut, "train") and stream not in _names(cut, "test_all")
    for group in ("train", "calibration", "test_all", "test"):
        assert _names(cut, group) == _names(base, group)
    assert base.split.description["placed_by_arrival"] == 0
    assert cut.split.description["placed_by_arrival"] == 1
    assert placed_by_arrival_line(base.split.description) == ""
    assert placed_by_arrival_line(cut.split.description) == (
        "1 stream placed by its arrival, not its first stamp: stamped more than 5 min after "
        "the collector received it (received_time), its client's clock ahead"
    )
    default = split_store(fast, SplitSpec(shares=None))  # the study's shares of the days
    unskewed = split_store(Store(tmp_path / "base"), SplitSpec(shares=None))
    assert default.split.description == unskewed.split.description | {"placed_by_arrival": 1}


def test_without_arrival_marks_the_first_stamp_places_a_stream(tmp_path: Path) -> None:
    """Imported and simulated rows carry no mark: the stream a year ahead stays where its
    stamps put it (nothing to tell it by), and nothing is counted."""
    corpus = simulate(seed=2, scale=0.25)
    spec = SplitSpec(shares=(0.44, 0.07))
    base = split_store(_store(tmp_path / "base", corpus), spec)
    stream = sorted(_names(base, "train"))[0]
    moved = received(corpus, stream, YEAR_H).drop_columns(["received_time"])
    cut = split_store(_store(tmp_path / "moved", moved), spec)
    assert stream in _names(cut, "test_all")
    assert cut.split.description["placed_by_arrival"] == 0
