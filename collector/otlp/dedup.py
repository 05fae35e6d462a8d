"""Which spans were stored already: the collector's defence against an exporter's retry.

An OTLP exporter re-sends a request it got no answer for (a timeout, a dropped connection) —
rotel does after 5 s by default — so a request whose rows are already durable may arrive again.
The writer drops every span whose ``(trace_id, span_id)`` is among the spans it stored recently
(and counts it as a duplicate), so acknowledged data is never stored twice.

Scope (documented in ARCHITECTURE.md): the last :data:`DEFAULT_CAPACITY` to twice that many
stored spans, kept as 64-bit keys in two open-addressing tables (the older one is dropped when
the newer fills: 32 MiB in all), primed at start from the newest files of the store so a retry
across a collector restart is caught too. A duplicate older than the window is merged away by
compaction, which keeps one row per span in each partition.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pyarrow as pa

from toolwatch.words import counted

#: spans remembered at least (one table's fill; the window holds up to twice this)
DEFAULT_CAPACITY: Final = 1 << 20
#: tools/list rows are keyed apart from calls (a span may, oddly, carry both)
LISTING_SALT: Final = np.uint64(0x5BD1E995F00DBA11)
_EMPTY: Final = np.uint64(0)
#: odd 64-bit multipliers, one per id word (trace: 4 words of its 32 characters, span: 2)
_MULTIPLIERS: Final = (
    np.uint64(0x9E3779B97F4A7C15),
    np.uint64(0xBF58476D1CE4E5B9),
    np.uint64(0x94D049BB133111EB),
    np.uint64(0xD6E8FEB86659FD93),
    np.uint64(0xA0761D6478BD642F),
    np.uint64(0xE7037ED1A0B428DB),
)


def _words(column: pa.ChunkedArray | pa.Array, width: int) -> np.ndarray:
    """Id strings of exactly ``width`` characters as ``(n, width // 8)`` uint64 words of their
    bytes, read in place: no hex decoding (a key only has to tell ids apart, as compaction's
    string comparison does), so it costs a fraction of the row it guards."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    array = array.cast(pa.string())
    n = len(array)
    if not n:
        return np.zeros((0, width // 8), np.uint64)
    offsets = np.frombuffer(array.buffers()[1], np.int32, n + 1, array.offset * 4)
    if array.null_count or not (np.diff(offsets) == width).all():
        raise ValueError(f"ids must be {counted(width, 'character')}")
    data = np.frombuffer(array.buffers()[2], np.uint8)[offsets[0] : offsets[0] + n * width]
    return data.view("<u8").reshape(n, width // 8)


def span_keys(
    trace_ids: pa.ChunkedArray | pa.Array, span_ids: pa.ChunkedArray | pa.Array
) -> np.ndarray:
    """A 64-bit key per (trace id, span id) pair (never 0), mixed from the ids' six 8-byte
    words; distinct pairs collide with probability ~2^-64 per pair."""
    words = np.concatenate([_words(trace_ids, 32), _words(span_ids, 16)], axis=1)
    with np.errstate(over="ignore"):
        key = words[:, 0] * _MULTIPLIERS[0]
        for j in range(1, words.shape[1]):
            key ^= words[:, j] * _MULTIPLIERS[j]
            key ^= key >> np.uint64(29)
        key *= _MULTIPLIERS[2]
        key ^= key >> np.uint64(31)
    key[key == _EMPTY] = np.uint64(1)
    return key


class _Table:
    """An open-addressing set of uint64 keys (linear probing, 0 = empty), filled to half."""

    def __init__(self, bits: int) -> None:
        self.slots = np.zeros(1 << bits, np.uint64)
        self.mask = np.uint64((1 << bits) - 1)
        self.count = 0

    def contains(self, keys: np.ndarray) -> np.ndarray:
        found = np.zeros(keys.size, bool)
        pending = np.arange(keys.size)
        slot = keys & self.mask
        while pending.size:
            value = self.slots[slot]
            hit = value == keys[pending]
            found[pending[hit]] = True
            more = ~hit & (value != _EMPTY)
            pending, slot = pending[more], (slot[more] + np.uint64(1)) & self.mask
        return found

    def add(self, keys: np.ndarray) -> None:
        """Insert keys known to be absent and distinct."""
        slot = keys & self.mask
        pending = keys
        while pending.size:
            free = self.slots[slot] == _EMPTY
            # several keys may want one free slot: write them all, the last one keeps it
            self.slots[slot[free]] = pending[free]
            won = free & (self.slots[slot] == pending)
            self.count += int(won.sum())
            pending, slot = pending[~won], slot[~won]
            slot = (slot + np.uint64(1)) & self.mask  # every loser's slot is taken now


class RecentSpans:
    """The keys of the last ``capacity`` (up to ``2 * capacity``) stored spans."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = max(1, capacity)
        self._bits = max(4, (2 * self.capacity - 1).bit_length())
        self._new = _Table(self._bits)
        self._old: _Table | None = None

    def __len__(self) -> int:
        return self._new.count + (self._old.count if self._old is not None else 0)

    def seen(self, keys: np.ndarray) -> np.ndarray:
        """Which keys were stored already, or appear earlier in ``keys`` itself."""
        seen = self._new.contains(keys)
        if self._old is not None:
            seen |= self._old.contains(keys)
        ordered = np.sort(keys)
        if (ordered[1:] == ordered[:-1]).any():  # rare: one span twice in one group
            _, first = np.unique(keys, return_index=True)
            repeat = np.ones(keys.size, bool)
            repeat[first] = False
            seen |= repeat
        return seen

    def add(self, keys: np.ndarray) -> None:
        """Remember keys just stored (distinct, and not :meth:`seen`)."""
        while keys.size:
            room = self.capacity - self._new.count
            head, keys = keys[:room], keys[room:]
            self._new.add(head)
            if self._new.count >= self.capacity:
                self._old, self._new = self._new, _Table(self._bits)
