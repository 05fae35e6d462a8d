"""The store under bad disk conditions another process or the disk itself can cause: a FIFO
named like a partition file, a compaction the disk fills up in the middle of.

Each is simulated portably (no special mounts): ``os.mkfifo``, an ``OSError(ENOSPC)`` raised
at the real write boundary.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from support.collector import bare_call
from toolwatch.cli import main
from toolwatch.collector.store import Store, compaction

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _calls(n: int) -> list[dict]:
    return [bare_call("s", T0 + timedelta(seconds=i), input_bytes=i) for i in range(n)]


def _filled(root: Path, files: int = 4) -> Store:
    store = Store(root)
    for _ in range(files):
        store.append("calls", _calls(5), fsync=False)
    return store


def test_a_fifo_in_a_partition_is_named_never_opened(tmp_path: Path) -> None:
    """Opening a FIFO blocks until a writer comes: verify, info and compact hung forever on
    one (and so did the collector's shutdown compaction). Now it is named as unreadable."""
    store = _filled(tmp_path / "store")
    partition = store.files("calls")[0].parent
    fifo = partition / "part-99999999999999999999-fifo.parquet"
    os.mkfifo(fifo)
    script = (
        "import sys; from toolwatch.cli import main\n"
        "for action in ('verify', 'info', 'compact'):\n"
        "    print('rc', action, main(['store', action, '--store', sys.argv[1]]), flush=True)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, str(store.root)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("a store command hung on a FIFO in a partition") from None
    finally:
        fifo.unlink()
    out = done.stdout + done.stderr
    assert "Traceback" not in out
    assert f"UNREADABLE {fifo}: not a regular file (a FIFO)" in out
    assert "rc verify 1" in out and "rc info 0" in out and "rc compact 1" in out
    assert "unreadable file part-99999999999999999999-fifo.parquet" in out  # compaction's log
    assert len(store.files("calls")) == 4  # the partition was left alone


def test_a_compaction_the_disk_fills_leaves_no_temp_file(tmp_path: Path, monkeypatch) -> None:
    """The merged file fits, its journal does not (ENOSPC): the merged ``.parquet.tmp`` (as
    large as the partition) and the journal's temp file were left behind, keeping the disk
    full for an hour (the journal's forever). Now both are removed and the error raised."""
    store = _filled(tmp_path / "store", files=8)
    before = sorted(store.files("calls"))
    real = Path.write_text

    def full(self: Path, *args: object, **kwargs: object) -> int:
        if self.name.startswith(".compact-"):
            real(self, "{", encoding="utf-8")  # a partial write, as a full disk leaves it
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError, match="No space left"):
        store.compact("calls")
    monkeypatch.undo()
    partition = before[0].parent
    assert sorted(p.name for p in partition.iterdir()) == sorted(p.name for p in before)
    assert store.compact("calls") == 7  # and the next pass, with room, merges as usual
    assert store.query("SELECT count(*) AS n FROM calls").column("n")[0].as_py() == 40


def test_store_compact_on_a_full_disk_is_one_line_naming_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _filled(tmp_path / "store", files=8)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(compaction, "write_parquet", full)
    assert main(["store", "compact", "--store", str(store.root)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        f"toolwatch store compact: cannot compact calls in {store.root} (data intact): "
        "[Errno 28] No space left on device"
    )
    assert len(store.files("calls")) == 8 and not store.temp_files()


def test_a_partition_left_alone_is_said_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A partition with a damaged file is left alone (its data intact): ``store compact`` said so
    only in a log line and exited 0, and the collector's compaction counted no error."""
    from toolwatch.collector.otlp.server import Collector

    store = _filled(tmp_path / "store", files=8)
    damaged = sorted(store.files("calls"))[3]
    damaged.write_bytes(b"not parquet at all")
    assert main(["store", "compact", "--store", str(store.root)]) == 1
    out = capsys.readouterr().out
    partition = damaged.parent.name
    assert (
        f"toolwatch store compact: left alone calls/{partition}: unreadable file {damaged.name} "
        "(run `toolwatch store verify --deep`)"
    ) in out
    assert len(store.files("calls")) == 8  # nothing merged, nothing lost
    collector = Collector(store, compact_interval=None)
    with collector:
        pass  # its stop compacts
    assert collector.stats.compaction_errors == 1
