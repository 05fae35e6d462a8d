"""``toolwatch train``'s split lines: each stream's first call where the split placed it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.clock import received
from support.dev_real import dev_real_store
from toolwatch.cli import main
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection.calls.split import split_store
from toolwatch.detection.calls.split_options import SplitSpec


def _train(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, object]]:
    out = root / "model.json"
    assert (
        main(["train", "--store", str(root), "--split-shares", "0.44,0.07", "--out", str(out)]) == 0
    )
    assert out.exists()
    return capsys.readouterr().out, json.loads(out.read_text())["data"]


def test_a_stream_a_year_fast_does_not_stretch_the_first_call_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The split places a training stream whose client clock is a year fast by its arrival,
    but train printed (and saved) the training split's first calls "from .. to" from stamps,
    the "to" end a year ahead. Now the range is the unskewed store's, to the microsecond."""
    corpus = simulate(seed=2, scale=0.25)
    base = Store(tmp_path / "base")
    base.append("calls", received(corpus))
    cut = split_store(base, SplitSpec(shares=(0.44, 0.07)))
    sessions = cut.streams.column("session_id").to_pylist()
    agents = cut.streams.column("agent_id").to_pylist()
    mid = int(cut.split.train[len(cut.split.train) // 2])  # its arrival: 2 s after its stamp
    stream = sessions[mid] if agents[mid] is None else f"{sessions[mid]}/{agents[mid]}"
    fast = Store(tmp_path / "fast")
    fast.append("calls", received(corpus, stream, 365 * 24.0))

    base_text, base_data = _train(base.root, capsys)
    fast_text, fast_data = _train(fast.root, capsys)
    for name in ("train", "calibration"):
        assert fast_data[name]["window"] == base_data[name]["window"]  # type: ignore[index]
    line = next(x for x in fast_text.splitlines() if x.startswith("  train "))
    assert line == next(x for x in base_text.splitlines() if x.startswith("  train "))
    assert "1 stream placed by its arrival" in fast_text


def test_streams_kept_apart_are_named_by_their_quirk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The split's client artefacts (dev-real's warm-up agents) are listed by quirk name, "kept
    apart   warmup_agent streams (client artefacts): ..."; the quirk is a name, not a count
    (written as one, `train` failed with "invalid literal for int()" on every store that holds
    a flagged stream)."""
    store = dev_real_store(tmp_path / "store")
    text, _ = _train(store.root, capsys)
    kept = [x for x in text.splitlines() if x.startswith("  kept apart   ")]
    assert kept and kept[0].startswith("  kept apart   warmup_agent streams (client artefacts): ")
