"""A store the collector cannot write (a read-only mount, a foreign owner) is said at start in
one line, not as a 503 for every request after a 'listening' line. Read-only is simulated
portably: every open for writing under the store fails with EROFS, as on a ``ro`` mount."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from support.disk import read_only
from toolwatch.collector.otlp.server import Collector
from toolwatch.collector.store import Store, StoreError


def test_collector_refuses_to_start_on_a_read_only_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    root.mkdir()
    read_only(monkeypatch, root)
    collector = Collector(Store(root), compact_interval=None)
    try:
        with pytest.raises(StoreError) as raised:
            collector.start()
    finally:
        with contextlib.suppress(Exception):
            collector.stop()
    assert str(raised.value) == f"cannot write the store {root}: Read-only file system"
    assert list(root.iterdir()) == []  # the probe left nothing


def test_collector_starts_on_a_full_disk(tmp_path: Path) -> None:
    """A full disk clears: the collector starts and answers 503 until it does (an empty probe
    file needs no space)."""
    root = tmp_path / "store"
    with Collector(Store(root), compact_interval=None) as collector:
        assert collector.port
    assert not [p for p in root.iterdir() if p.name.startswith(".write-probe")]
