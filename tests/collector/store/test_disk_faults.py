"""The store under bad disk conditions another process or the disk itself can cause: a FIFO
named like a partition file, a compaction the disk fills up in the middle of.

Each is simulated portably (no special mounts): ``os.mkfifo``, an ``OSError(ENOSPC)`` raised
at the real write boundary.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from toolwatch.collector.store import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _calls(n: int) -> list[dict]:
    return [
        dict(
            trace_id=uuid.uuid4().hex,
            span_id=uuid.uuid4().hex[:16],
            session_id="s",
            tool="t",
            start_time=T0 + timedelta(seconds=i),
            input_bytes=i,
            failed=False,
            source="otlp",
            restamped=False,
            output_truncated=False,
        )
        for i in range(n)
    ]


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
    assert "rc verify 1" in out and "rc info 0" in out and "rc compact 0" in out
    assert "unreadable file part-99999999999999999999-fifo.parquet" in out  # compaction's log
    assert len(store.files("calls")) == 4  # the partition was left alone
