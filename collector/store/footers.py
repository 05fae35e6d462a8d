"""What each store file's footer says (rows, Arrow schema), read once per file per process.

``store info`` counts rows from the footers and each view asks on every query whether its
table's files share one schema (then DuckDB needs no ``union_by_name``, which reads every footer
again on every bind). On a store of ~1,000 files both were most of a command's time, so footers
are kept per process (read in a few threads when there are many), keyed on the file's identity
(path, inode, size, mtime): a file appended, rewritten or swapped by a compaction is a new key,
read afresh.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from toolwatch.collector.store.compaction import not_a_file

#: Footers kept at most (a long-lived process sees files come and go with compactions).
_MOST = 100_000
#: Footers are read in threads only from this many unread files: on fewer, starting threads
#: costs what they save (``benchmarks/bench_store_views.py``: ~10 and 123 files as fast or
#: faster in turn, 1,019 files ~1.3x faster in four threads).
THREADED_FROM = 256
_THREADS = 4


@dataclass(frozen=True)
class Footer:
    """One readable file's facts; ``schema`` is one object shared by files of the same Parquet
    schema."""

    rows: int
    schema: pa.Schema


_Key = tuple[str, int, int, int]
_FOOTERS: dict[_Key, Footer] = {}
_SCHEMAS: list[tuple[pq.ParquetSchema, pa.Schema]] = []
_LOCK = threading.Lock()


def footers(paths: Sequence[Path]) -> list[Footer | None]:
    """Each file's :class:`Footer`, or None for one that cannot be read (not a regular file,
    vanished, not Parquet); files not seen before in this process are read in threads."""
    keys: list[_Key | None] = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            keys.append(None)
            continue
        keys.append((str(path), st.st_ino, st.st_size, st.st_mtime_ns))
    with _LOCK:
        known = {k: _FOOTERS[k] for k in keys if k is not None and k in _FOOTERS}
    missing = list({k: p for p, k in zip(paths, keys, strict=True) if k and k not in known}.items())
    if missing:
        if len(missing) >= THREADED_FROM:
            with ThreadPoolExecutor(_THREADS) as pool:
                read = list(pool.map(lambda item: _read(item[1]), missing))
        else:
            read = [_read(path) for _, path in missing]
        with _LOCK:
            if len(_FOOTERS) + len(missing) > _MOST:
                _FOOTERS.clear()
            _FOOTERS.update((k, f) for (k, _), f in zip(missing, read, strict=True) if f)
        known.update((k, f) for (k, _), f in zip(missing, read, strict=True) if f)
    return [None if k is None else known.get(k) for k in keys]


def _read(path: Path) -> Footer | None:
    if not_a_file(path) is not None:
        return None  # a FIFO would block its reader
    try:
        meta = pq.read_metadata(path)
    except Exception:  # pyarrow raises several types for corrupt files
        return None
    with _LOCK:  # one Arrow schema object per distinct Parquet schema (a store has one or two)
        schema = next((a for p, a in _SCHEMAS if meta.schema.equals(p)), None)
        if schema is None:
            schema = meta.schema.to_arrow_schema().remove_metadata()
            _SCHEMAS.append((meta.schema, schema))
    return Footer(rows=meta.num_rows, schema=schema)


def forget() -> None:
    """Drop every kept footer: a benchmark measures what a fresh process's first read costs."""
    with _LOCK:
        _FOOTERS.clear()
