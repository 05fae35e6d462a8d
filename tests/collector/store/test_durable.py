"""Durable small-file writes: data fsynced before the rename, the directory after it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.disk import record_fsync_and_replace
from toolwatch.collector.store.durable import write_text_durably


def test_the_data_is_fsynced_before_the_rename_and_the_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")
    events = record_fsync_and_replace(monkeypatch)
    write_text_durably(path, "new ü")
    monkeypatch.undo()
    tmp = f"{path}.tmp"
    assert events == [("fsync", tmp), ("replace", f"{tmp} -> {path}"), ("fsync", str(tmp_path))]
    assert path.read_text(encoding="utf-8") == "new ü"
    assert not Path(tmp).exists()


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_text_durably(path, "new")
    assert path.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
