"""Compaction is atomic across a crash: whatever instant it dies at, no read sees a row twice
or misses one, and the next compaction (or read) finishes or undoes the interrupted merge.

Crashes are simulated two ways: in process, by making the filesystem step after a chosen one
fail (each journal state), and for real, ``kill -9`` of ``toolwatch store compact`` at random
instants (3 trials here; ``benchmarks/bench_compaction_crash.py`` runs 20 on 1,000 files).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from support.collector import bare_call
from toolwatch.collector.store import Store, compaction

DAY = datetime(2026, 1, 1, tzinfo=UTC)


def fill(store: Store, files: int, rows: int = 20) -> int:
    """``files`` small files of ``rows`` calls each, one partition; returns the row count."""
    for f in range(files):
        store.append(
            "calls",
            [bare_call("c", DAY + timedelta(seconds=f), input_bytes=f) for _ in range(rows)],
            fsync=False,
        )
    return files * rows


def counts(store: Store) -> tuple[int, int]:
    row = store.query("SELECT count(*) AS n, count(DISTINCT span_id) AS d FROM calls").to_pylist()
    return row[0]["n"], row[0]["d"]


class Crash(BaseException):
    """Stands for the process dying (not an Exception: nothing catches it)."""


@pytest.mark.parametrize(
    ("step", "after"),
    [
        ("unlink", 0),  # merged file renamed in, no source removed yet
        ("unlink", 7),  # half the sources removed
        ("replace", 0),  # journal written, merged file never renamed in
    ],
)
def test_a_merge_interrupted_at_any_step_reads_exactly_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, after: int
) -> None:
    store = Store(tmp_path / "store")
    total = fill(store, 16)
    calls: dict[str, int] = {"unlink": 0, "replace": 0}
    real = {"unlink": Path.unlink, "replace": os.replace}

    def failing(name: str) -> Any:
        def op(*args: Any, **kwargs: Any) -> Any:
            target = str(args[0])  # the path unlinked, or the source of the rename
            if target.endswith(".parquet") or target.endswith(".parquet.tmp"):
                if calls[name] >= after:
                    raise Crash(f"died at {name} #{calls[name]}")
                calls[name] += 1
            return real[name](*args, **kwargs)

        return op

    if step == "unlink":
        monkeypatch.setattr(Path, "unlink", failing("unlink"))
    else:
        monkeypatch.setattr(compaction.os, "replace", failing("replace"))
    with pytest.raises(Crash):
        store.compact("calls", min_files=2)
    monkeypatch.undo()
    journals = list((store.root / "calls").glob(compaction.JOURNAL_GLOB))
    assert len(journals) == 1  # the crash left its journal
    assert counts(Store(store.root)) == (total, total)  # a fresh reader recovers first
    assert not list((store.root / "calls").glob(compaction.JOURNAL_GLOB))
    store.compact("calls", min_files=2)
    assert counts(store) == (total, total)
    assert len(store.files("calls")) == 1


def test_compaction_also_removes_rows_stored_twice(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    total = fill(store, 4)
    first = store.files("calls")[0]
    twin = first.with_name("part-00000000000000000001-twin.parquet")
    twin.write_bytes(first.read_bytes())  # one file's rows stored twice (an old retry)
    assert counts(store) == (total + 20, total)
    store.compact("calls", min_files=2)
    assert counts(store) == (total, total)


def kill_during_compaction(root: Path, *, at_merge: bool, rng: random.Random) -> str:
    """Run ``toolwatch store compact`` and ``kill -9`` it: as soon as its merged file is in
    place (the sources are being unlinked: the worst instant) or after a random delay.
    Returns when it was killed."""
    part = next((root / "calls").iterdir())
    before = {p.name for p in part.glob("*.parquet")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolwatch", "store", "compact", "--store", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    moment = "after it finished"
    deadline = time.monotonic() + (60 if at_merge else rng.uniform(0.3, 2.0))
    while proc.poll() is None and time.monotonic() < deadline:
        if at_merge and {e.name for e in os.scandir(part) if e.name.endswith(".parquet")} - before:
            moment = "with the merged file in place"
            break
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        moment = moment if at_merge else "at a random instant"
    proc.wait()
    return moment


def test_kill_9_during_store_compact_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    rng = random.Random(14)
    moments = []
    for trial, at_merge in enumerate((True, True, False)):
        store = Store(tmp_path / f"store{trial}")
        total = fill(store, 300)
        moments.append(kill_during_compaction(store.root, at_merge=at_merge, rng=rng))
        assert counts(Store(store.root)) == (total, total), f"trial {trial}: {moments[-1]}"
        store.compact("calls", min_files=2)
        assert counts(store) == (total, total)
        assert len(store.files("calls")) == 1
    assert moments.count("with the merged file in place") == 2, moments
