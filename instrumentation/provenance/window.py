"""A bounded window of one stream's recent result bytes, and the index that finds runs in it.

Why keep the bytes and not only fingerprints: a winnowed fingerprint proves only that ``k``
bytes are shared, so a count of fingerprints is off by up to ``w - 1`` bytes at each end of a
run. With the bytes retained, every fingerprint hit is checked and extended to an *exact*
maximal run, hash collisions do no harm, and the table needs to hold no hash at all, only
offsets. The content is no new exposure (the agent holds it anyway); it stays in this object.

* **Buffer**: one ``bytearray`` of 1.5 × ``window_bytes``, allocated once. Each result is a
  *segment* followed by a ``0x00`` separator, so no run spans two results. When the buffer is
  full the oldest bytes are dropped (a chunked move), so it holds the last 1 to 1.5 windows.
  A segment records its start and its source (a small id the caller maps to a tool). Beyond
  ``max_segments`` results the oldest leave the window at once but their bytes are moved out
  only when the buffer is full (moving the buffer at every small result cost ~50 µs each).
* **Index**: CRC-32 of ``k``-byte shingles (deterministic: the numbers are reproducible; a
  collision only costs a failed byte check). Every ``w``-th shingle of a result (and its last
  one) is written to a direct-mapped table of ``2**table_bits`` slots holding
  ``absolute offset + 1`` (mod 2^32, 0 = empty); with ``ways = 2`` a second table keeps the
  entry each slot displaced. A query probes *every* shingle of the view, so any common run of
  ``w + k - 1`` bytes contains an indexed shingle and is found (MOSS's guarantee, at density
  ``1/w``).
* **Allocated at the first result**: buffer and tables are made when the first result arrives,
  not with the window: an importer replays thousands of streams whose calls never see a result
  (a tiny session), and allocating then zeroing 4 MiB of tables for each was ≈ 2 ms a stream.
* **Lazily**: results are only copied in when they arrive; they are hashed when the next check
  needs the index. In a stream whose calls rarely send anything out, bytes that leave the
  window before any check are never hashed at all.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate, compress
from typing import Final
from zlib import crc32

from toolwatch.instrumentation.provenance.config import ProvenanceConfig

_M32: Final = 0xFFFFFFFF
_CHUNK: Final = 1 << 16
_ZEROS: Final = bytes(_CHUNK)
#: a segment source id meaning "unknown" (more distinct sources than the id space holds)
OTHER_SOURCE: Final = 0xFFFF

#: (query start, query end, absolute source start) of one maximal common run
Run = tuple[int, int, int]


class FingerprintWindow:
    """Recent result bytes of one stream with their shingle index (see the module docs)."""

    __slots__ = (
        "_base",
        "_buf",
        "_cap",
        "_cfg",
        "_fill",
        "_indexed",
        "_mask",
        "_older",
        "_seg_source",
        "_seg_start",
        "_start",
        "_table",
        "_total",
        "indexed_bytes",
    )

    def __init__(self, config: ProvenanceConfig) -> None:
        self._cfg = config
        self._cap = config.buffer_bytes
        self._buf = bytearray()  # _cap bytes from the first append on: never reallocated
        self._fill = 0  # bytes of _buf in use
        self._base = 0  # absolute offset of _buf[0]
        self._start = 0  # absolute offset where the window begins (>= _base; see _drop_before)
        self._total = 0  # absolute offset of the end of the data
        slots = 1 << config.table_bits
        self._table = array("I")  # 2**table_bits slots (per way) from the first append on
        self._older = array("I") if config.ways == 2 else None
        self._mask = slots - 1
        self._seg_start = array("Q")
        self._seg_source = array("H")
        self._indexed = 0  # segments (counted from the first kept one) already hashed
        self.indexed_bytes = 0  # bytes hashed so far (for the cost report)

    # ------------------------------------------------------------------ contents

    @property
    def total(self) -> int:
        """Absolute offset of the end of the data (result bytes seen, with separators)."""
        return self._total

    def append(self, source: int, data: bytes) -> None:
        """Keep one result (``data``, at most ``max_result_bytes``) from source ``source``."""
        if not data:
            return
        if not self._buf:
            self._allocate()
        size = len(data)
        self._make_room(size + 1)
        fill = self._fill
        self._buf[fill : fill + size] = data
        self._buf[fill + size] = 0  # separator: no run spans two results
        self._seg_start.append(self._total)
        self._seg_source.append(source)
        self._fill = fill + size + 1
        self._total += size + 1

    def _allocate(self) -> None:
        slots = self._mask + 1
        self._buf = bytearray(self._cap)
        self._table = array("I", [0]) * slots
        if self._older is not None:
            self._older = array("I", [0]) * slots

    def clear(self) -> None:
        """Forget every result (and overwrite the retained bytes): the window is then as a new
        one, offsets from 0, but keeps its buffer and tables (zeroed, ≈ 0.4 ms; allocating
        them anew costs ≈ 3 ms of page faults), so that one window can serve stream after
        stream (the importer)."""
        self._buf[: self._fill] = bytes(self._fill)
        self._base = self._start = self._total = 0
        self._fill = 0
        del self._seg_start[:], self._seg_source[:]
        self._indexed = 0
        if not self._buf:  # no result ever arrived: nothing allocated, nothing to overwrite
            return
        self._table[:] = array("I", [0]) * len(self._table)
        if self._older is not None:
            self._older[:] = array("I", [0]) * len(self._older)

    def _make_room(self, incoming: int) -> None:
        cfg = self._cfg
        if len(self._seg_start) >= cfg.max_segments:  # drop the oldest results
            self._drop_before(self._seg_start[len(self._seg_start) - cfg.max_segments + 1])
        if self._total - self._start + incoming > self._cap:  # the window's own bytes
            self._drop_before(self._total + incoming - cfg.window_bytes)
        if self._fill + incoming > self._cap:  # with the bytes of results dropped by count
            self._compact()

    def _drop_before(self, absolute: int) -> None:
        """Make the window begin at ``absolute`` (its bytes stay until :meth:`_compact`)."""
        start = min(absolute, self._total)
        if start <= self._start:
            return
        self._start = start
        # the segment that covers the new start stays (its tail is still searchable)
        gone = max(0, bisect_right(self._seg_start, start) - 1)
        if gone:
            del self._seg_start[:gone]
            del self._seg_source[:gone]
            self._indexed = max(0, self._indexed - gone)

    def _compact(self) -> None:
        """Move the window's bytes to the front of the buffer."""
        cut = self._start - self._base
        if cut <= 0:
            return
        fill = self._fill
        keep = fill - cut
        buf = self._buf
        for a in range(0, keep, _CHUNK):  # forward chunked move: a bounded temporary
            b = min(a + _CHUNK, keep)
            buf[a:b] = buf[cut + a : cut + b]
        for a in range(keep, fill, _CHUNK):  # the vacated tail: clear() overwrites only fill
            b = min(a + _CHUNK, fill)
            buf[a:b] = _ZEROS[: b - a]
        self._fill = keep
        self._base = self._start

    # ------------------------------------------------------------------ index

    def prepare(self) -> None:
        """Hash the results that arrived since the last check (in arrival order)."""
        starts = self._seg_start
        for i in range(self._indexed, len(starts)):
            start = max(starts[i], self._start)
            end = starts[i + 1] - 1 if i + 1 < len(starts) else self._total - 1
            rel = start - self._base
            self._index(bytes(self._buf[rel : rel + end - start]), start)
        self._indexed = len(starts)

    def _index(self, data: bytes, start: int) -> None:
        k, w = self._cfg.k, self._cfg.w
        n = len(data) - k + 1
        if n <= 0:
            return
        self.indexed_bytes += len(data)
        mask = self._mask
        if self._cfg.selection == "stride":
            # every w-th shingle, and the last one so that a result's tail is covered too
            positions = list(range(0, n, w))
            if (n - 1) % w:
                positions.append(n - 1)
            shingles = map(data.__getitem__, map(slice, positions, [p + k for p in positions]))
            slots = list(map(mask.__and__, map(crc32, shingles)))
        else:
            hashes = list(map(crc32, map(data.__getitem__, map(slice, range(n), range(k, n + k)))))
            positions = _winnow(hashes, w)
            slots = [hashes[p] & mask for p in positions]
        table, older = self._table, self._older
        if older is None:
            for slot, p in zip(slots, positions, strict=True):
                table[slot] = (start + p + 1) & _M32
        else:
            for slot, p in zip(slots, positions, strict=True):
                previous = table[slot]
                if previous:
                    older[slot] = previous
                table[slot] = (start + p + 1) & _M32

    # ------------------------------------------------------------------ queries

    def runs(self, view: bytes) -> list[Run]:
        """Maximal runs of at least ``k`` bytes that ``view`` shares with the window.

        Call :meth:`prepare` first. Each probed shingle whose slot points inside the window is
        checked byte for byte, then extended left and right (galloping compares).
        """
        k = self._cfg.k
        n = len(view) - k + 1
        if n <= 0 or self._fill <= self._start - self._base:
            return []
        table, mask = self._table, self._mask
        # map chains run in C: several times faster than a comprehension over slices
        shingles = map(view.__getitem__, map(slice, range(n), range(k, n + k)))
        slots = list(map(mask.__and__, map(crc32, shingles)))
        candidates = _nonzero(list(map(table.__getitem__, slots)))
        if self._older is not None:
            candidates += _nonzero(list(map(self._older.__getitem__, slots)))
            candidates.sort()
        if not candidates:
            return []
        buf, base, fill = self._buf, self._base, self._fill
        first = self._start - base  # buffer offset where the window begins
        limit = fill - k
        covered = 0  # view bytes [0, covered) lie inside runs found already
        budget = self._cfg.realign_budget
        reach: dict[int, int] = {}  # alignment (source - view offset) -> view end of its run
        runs: list[Run] = []
        for q, entry in candidates:
            rel = (entry - 1 - base) & _M32
            if rel > limit or rel < first:
                continue  # dropped from the window (or a stale slot)
            if q + k <= covered:  # inside a run found already: only a new alignment counts
                if budget <= 0 or q < reach.get(rel - q, -1):
                    continue
                budget -= 1
            if buf[rel] != view[q] or buf[rel : rel + k] != view[q : q + k]:
                continue  # a hash collision or overwritten bytes (the first byte says it fast)
            left = _common_suffix(view, q, buf, rel, min(q, rel - first))
            right = _common_prefix(
                view, q + k, buf, rel + k, min(len(view) - q - k, fill - rel - k)
            )
            start, end = q - left, q + k + right
            reach[rel - q] = end
            covered = max(covered, end)
            runs.append((start, end, base + rel - left))
        return runs

    def source_at(self, absolute: int) -> int:
        """The source id of the segment holding absolute offset ``absolute``."""
        i = bisect_right(self._seg_start, absolute) - 1
        return self._seg_source[i] if i >= 0 else OTHER_SOURCE

    def occurrences(self, needle: bytes, limit: int) -> Iterator[int]:
        """Absolute offsets of the first ``limit`` occurrences of ``needle`` in the window."""
        buf, fill = self._buf, self._fill
        i = buf.find(needle, self._start - self._base, fill)
        for _ in range(limit):
            if i < 0:
                return
            yield self._base + i
            i = buf.find(needle, i + 1, fill)

    def memory_bytes(self) -> int:
        """Bytes allocated from the first result on: buffer, tables, segment arrays."""
        return (
            self._cap
            + (self._mask + 1) * 4 * self._cfg.ways
            + self._seg_start.buffer_info()[1] * 8
            + self._seg_source.buffer_info()[1] * 2
            + sys.getsizeof(self)
        )


def _nonzero(entries: list[int]) -> list[tuple[int, int]]:
    """(position, entry) of the non-empty slots, in position order (filtered in C)."""
    return list(zip(compress(range(len(entries)), entries), filter(None, entries), strict=True))


def covered(runs: list[Run]) -> int:
    """View bytes covered by the union of ``runs``."""
    total = 0
    end = -1
    for start, stop, _ in sorted(runs):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def _winnow(hashes: list[int], w: int) -> list[int]:
    """Positions of the rightmost minimal hash of every window of ``w`` hashes (MOSS)."""
    n = len(hashes)
    if n <= w:
        low = min(hashes)
        return [max(i for i, h in enumerate(hashes) if h == low)]
    top = _M32
    # (hash, -position) in one integer, so that min() picks the rightmost of equal hashes
    values = [(h << 32) | (top - i) for i, h in enumerate(hashes)]
    prefix: list[int] = []
    suffix: list[int] = []
    for b in range(0, n, w):  # van Herk / Gil-Werman sliding minimum
        block = values[b : b + w]
        prefix.extend(accumulate(block, min))
        backwards = list(accumulate(reversed(block), min))
        backwards.reverse()
        suffix.extend(backwards)
    minima = set(map(min, suffix[: n - w + 1], prefix[w - 1 :]))
    return sorted(top - (v & top) for v in minima)


def _common_prefix(a: bytes, i: int, b: bytes | bytearray, j: int, limit: int) -> int:
    """Length of the common prefix of ``a[i:]`` and ``b[j:]``, at most ``limit``."""
    n, step = 0, 16
    while n + step <= limit and a[i + n : i + n + step] == b[j + n : j + n + step]:
        n += step
        step <<= 1
    while step > 1:
        step >>= 1
        if n + step <= limit and a[i + n : i + n + step] == b[j + n : j + n + step]:
            n += step
    return n


def _common_suffix(a: bytes, i: int, b: bytes | bytearray, j: int, limit: int) -> int:
    """Length of the common suffix of ``a[:i]`` and ``b[:j]``, at most ``limit``."""
    n, step = 0, 16
    while n + step <= limit and a[i - n - step : i - n] == b[j - n - step : j - n]:
        n += step
        step <<= 1
    while step > 1:
        step >>= 1
        if n + step <= limit and a[i - n - step : i - n] == b[j - n - step : j - n]:
            n += step
    return n
