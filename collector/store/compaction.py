"""Compaction of a store table, atomic across a crash: small files merged, journalled.

Merging a partition's small files means one new file in and many old ones out, which no single
rename does. So each merge is journalled:

1. the merged rows (duplicates of one span removed) are written to ``*.parquet.tmp`` and
   fsynced — invisible to readers, whose glob is ``*.parquet``;
2. a journal ``.compact-<id>.json`` naming the merged file and its sources is written
   atomically (temp, fsync, rename, directory fsync);
3. under the store's *commit lock* (exclusive; readers hold it shared, see
   :meth:`~toolwatch.collector.store.Store.reading`): the merged file is renamed in and the
   sources unlinked, then the directory is fsynced;
4. the journal is removed.

:func:`recover` finishes what a crash interrupted: a journal whose merged file is in place gets
its remaining sources unlinked; one whose merged file never arrived is dropped with its temp
file. It runs before every read (``Store.connect``), every compaction and at collector start,
whenever no live compaction holds the table's lock — so after ``kill -9`` at any instant no read
ever sees a row twice or misses one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from toolwatch.collector.store.durable import fsync_path
from toolwatch.words import counted

log = logging.getLogger(__name__)

COMPACT_LOCK: Final = ".compact.lock"
COMMIT_LOCK: Final = ".commit.lock"
JOURNAL_GLOB: Final = "*/.compact-*.json"
STALE_TEMP_AGE_S: Final = 3600.0


@contextlib.contextmanager
def flocked(
    path: Path, *, shared: bool = False, block: bool = False, wait: float | None = None
) -> Iterator[bool]:
    """Hold a ``flock`` on ``path`` (yields False if someone else holds it and not ``block``;
    with ``wait``, after trying for that many seconds).

    Where the lock cannot exist (not POSIX, a read-only store) it yields True: nothing else
    can be compacting a store nobody can write.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no cross-process lock
        yield True
        return
    try:
        handle = open(path, "a+b")  # noqa: SIM115 - held for the duration of the block
    except OSError:
        yield True
        return
    with handle:
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        deadline = time.monotonic() + (wait or 0.0)
        while True:
            try:
                fcntl.flock(handle, mode if block and wait is None else mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if wait is None or time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.01)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_parquet(table: pa.Table, path: Path, *, fsync: bool, unique: Sequence[str]) -> None:
    """Write ``table`` to ``path`` (zstd, page checksums), fsynced when asked."""
    dictionary = [
        f.name
        for f in table.schema
        if (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)) and f.name not in unique
    ]
    pq.write_table(
        table, path, compression="zstd", use_dictionary=dictionary, write_page_checksum=True
    )
    if fsync:
        fsync_path(path)


def probe_writable(directory: Path) -> None:
    """Create and remove an empty file in ``directory`` (``OSError`` when it cannot be done):
    a read-only or foreign-owned store is said at start, not as a 503 on every request. An
    empty file needs no data blocks, so a full disk, which clears, passes."""
    probe = directory / f".write-probe-{uuid.uuid4().hex[:12]}"
    with open(probe, "xb"):
        pass
    probe.unlink()


def not_a_file(path: Path) -> str | None:
    """Why ``path`` must not be opened as Parquet, or None: a FIFO (or device, socket, folder)
    named ``*.parquet`` would block or mislead its reader, and a read must never hang."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if stat.S_ISREG(mode):
        return None
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "special"
    return f"not a regular file ({kind}), never opened"


def new_file_name() -> str:
    return f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"


def without_duplicates(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """The first row of each ``key`` value (rows of one span written twice keep one)."""
    if not key or table.num_rows < 2 or any(k not in table.column_names for k in key):
        return table
    index = pa.array(np.arange(table.num_rows, dtype=np.int64))
    ids = table.select(list(key)).append_column("__row", index)
    first = ids.group_by(list(key), use_threads=False).aggregate([("__row", "min")])
    if first.num_rows == table.num_rows:
        return table
    keep = np.sort(first["__row_min"].to_numpy())
    return table.take(pa.array(keep))


def recover(base: Path, commit_lock: Path) -> int:
    """Finish or undo every journalled merge of the table at ``base``; returns how many.

    Skipped (0) while another process compacts the table: it finishes its own merges.
    """
    if not base.is_dir() or not any(base.glob(JOURNAL_GLOB)):
        return 0
    with flocked(base / COMPACT_LOCK) as locked:
        if not locked:
            return 0
        return _recover_locked(base, commit_lock)


def _recover_locked(base: Path, commit_lock: Path) -> int:
    for partial in base.glob(JOURNAL_GLOB + ".tmp"):  # a journal never completed: no merge yet
        partial.unlink(missing_ok=True)
    done = 0
    for journal in sorted(base.glob(JOURNAL_GLOB)):
        directory = journal.parent
        try:
            entry = json.loads(journal.read_text())
            merged = directory / str(entry["merged"])
            sources = [directory / str(name) for name in entry["sources"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("compaction journal %s is unreadable (%s); left in place", journal, exc)
            continue
        # bounded: a reader of this process may hold the commit lock (shared) while it recovers
        with flocked(commit_lock, block=True, wait=10.0) as committing:
            if not committing:
                log.warning("compaction journal %s: the store is busy; recovered later", journal)
                continue
            if merged.exists():
                left = [p for p in sources if p.exists()]
                for path in left:
                    path.unlink()
                fsync_path(directory)
                log.warning(
                    "finished a compaction interrupted by a crash in %s: %s removed",
                    directory,
                    counted(len(left), "merged file"),
                )
            else:
                with contextlib.suppress(FileNotFoundError):
                    merged.with_name(merged.name + ".tmp").unlink()
                log.warning(
                    "undid a compaction interrupted by a crash in %s (its sources stay)",
                    directory,
                )
            journal.unlink()
            fsync_path(directory)
        done += 1
    return done


def compact_table(
    base: Path,
    commit_lock: Path,
    *,
    min_files: int,
    max_rows: int,
    key: Sequence[str],
    unique: Sequence[str],
    partitions: str,
    skipped: list[str] | None = None,
) -> int:
    """Merge the small files of each partition (the folders ``partitions`` matches; see
    :meth:`Store.compact`); files removed. A partition left alone for an unreadable or damaged
    file is logged and, when ``skipped`` is given, appended to it (``"<partition>: <why>"``)."""
    if not base.is_dir():
        return 0
    with flocked(base / COMPACT_LOCK) as locked:
        if not locked:
            log.info("compact: %s is being compacted by another process; skipped", base)
            return 0
        _recover_locked(base, commit_lock)
        remove_stale_temp_files(base)
        removed = 0
        for directory in sorted(p for p in base.glob(partitions) if p.is_dir()):
            removed += _compact_partition(
                directory,
                commit_lock,
                min_files,
                max_rows,
                key=key,
                unique=unique,
                skipped=[] if skipped is None else skipped,
            )
        return removed


def remove_stale_temp_files(base: Path, max_age_s: float = STALE_TEMP_AGE_S) -> None:
    now = time.time()
    for tmp in base.glob("*/*.parquet.tmp"):
        try:
            if now - tmp.stat().st_mtime > max_age_s:
                tmp.unlink()
                log.info("removed an unfinished write left by a crash: %s", tmp)
        except FileNotFoundError:
            pass


def _compact_partition(
    directory: Path,
    commit_lock: Path,
    min_files: int,
    max_rows: int,
    *,
    key: Sequence[str],
    unique: Sequence[str],
    skipped: list[str],
) -> int:
    small: list[tuple[Path, int]] = []
    for path in sorted(directory.glob("*.parquet")):
        try:
            problem = not_a_file(path)
            if problem is not None:
                raise OSError(problem)
            rows = pq.read_metadata(path).num_rows
        except Exception as exc:
            log.error("compact: skipping %s, unreadable file %s: %s", directory, path.name, exc)
            skipped.append(f"{directory.name}: unreadable file {path.name}")
            return 0
        if rows < max_rows // 2:
            small.append((path, rows))
    if len(small) < min_files:
        return 0
    removed = 0
    group: list[Path] = []
    rows_in_group = 0
    for path, rows in [*small, (Path(), max_rows)]:  # the sentinel flushes the last group
        if group and rows_in_group + rows > max_rows:
            if len(group) > 1:
                merged = _read_group(directory, group, skipped)
                if merged is None:
                    return removed
                _commit_merge(directory, commit_lock, group, merged, key=key, unique=unique)
                removed += len(group) - 1
            group, rows_in_group = [], 0
        group.append(path)
        rows_in_group += rows
    return removed


def _read_group(directory: Path, group: list[Path], skipped: list[str]) -> pa.Table | None:
    """Every row of ``group``, every page checked; None (partition skipped, said in
    ``skipped``) if one is bad."""
    tables = []
    for path in group:
        try:
            tables.append(pq.read_table(path, partitioning=None, page_checksum_verification=True))
        except Exception as exc:
            log.error(
                "compact: skipping %s, damaged file %s (run `toolwatch store verify --deep`): %s",
                directory,
                path.name,
                exc,
            )
            skipped.append(f"{directory.name}: damaged file {path.name}")
            return None
    return pa.concat_tables(tables, promote_options="default")


def _commit_merge(
    directory: Path,
    commit_lock: Path,
    group: list[Path],
    merged: pa.Table,
    *,
    key: Sequence[str],
    unique: Sequence[str],
) -> None:
    merged = without_duplicates(merged, key)
    name = new_file_name()
    final = directory / name
    tmp = directory / (name + ".tmp")
    journal = directory / f".compact-{uuid.uuid4().hex[:12]}.json"
    journal_tmp = journal.with_name(journal.name + ".tmp")
    try:
        write_parquet(merged, tmp, fsync=True, unique=unique)
        journal_tmp.write_text(json.dumps({"merged": name, "sources": [p.name for p in group]}))
        fsync_path(journal_tmp)
        os.replace(journal_tmp, journal)
    except BaseException:
        # no journal yet, so nothing refers to these: a full disk left the merged temp file
        # (the size of the partition) holding the very space the next writes needed, for an
        # hour, and a journal temp file nothing ever removed
        for leftover in (tmp, journal_tmp):
            leftover.unlink(missing_ok=True)
        raise
    fsync_path(directory)
    with flocked(commit_lock, block=True):
        os.replace(tmp, final)
        for path in group:
            path.unlink()
        fsync_path(directory)
    journal.unlink()
    fsync_path(directory)
