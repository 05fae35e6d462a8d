"""Provenance for a whole agent process: one window per stream, a bounded number of streams.

A *stream* is one agent of one conversation (``(conversation id, agent id)``, as the call
records group calls): a subagent has its own context, so its window is its own. An agent
process may hold many conversations; at most ``max_streams`` windows are kept, the least
recently used is forgotten first (counted in :attr:`TrackerStats.evicted_streams`, and said
once in the log). Memory is therefore bounded by ``max_streams × config.memory_bound``
(:attr:`ProvenanceTracker.memory_bound`), allocated only for streams that exist.

**A result is visible to the calls of later model responses only.** The calls of one response
were all written before any of them ran, so none can have copied another's result. When a
response id is given, the results of the response whose calls are being made are held back
(at most ``config.held_bytes`` per stream; beyond that the oldest is released early and
counted) until a call of another response is checked. This is the rule the transcript
importer replays, so live and imported numbers mean the same thing.

Thread-safe: one lock serialises the checks and ingests of all streams.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

from toolwatch.instrumentation.provenance.config import (
    DEFAULT_CONFIG,
    Provenance,
    ProvenanceConfig,
)
from toolwatch.instrumentation.provenance.measure import StreamProvenance
from toolwatch.instrumentation.provenance.text import result_text
from toolwatch.words import counted

log = logging.getLogger(__name__)

#: (conversation id, agent id or None for the main agent)
StreamKey = tuple[str, str | None]
DEFAULT_MAX_STREAMS: Final = 16


@dataclass(slots=True)
class TrackerStats:
    """Counters since the tracker was made (numbers only)."""

    streams: int = 0
    evicted_streams: int = 0
    results: int = 0
    result_bytes: int = 0
    truncated_result_bytes: int = 0
    released_early: int = 0
    checks: int = 0
    unchecked_argument_bytes: int = 0


@dataclass(slots=True)
class _Stream:
    provenance: StreamProvenance
    #: the response whose calls are being made, and its results held back until it is over
    open_response: str | None = None
    held: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    held_bytes: int = 0


class ProvenanceTracker:
    """Windows per stream, least recently used first out (see the module docs)."""

    def __init__(
        self, config: ProvenanceConfig = DEFAULT_CONFIG, max_streams: int = DEFAULT_MAX_STREAMS
    ) -> None:
        if max_streams < 1:
            raise ValueError(f"max_streams must be at least 1, got {max_streams}")
        self.config = config
        self.max_streams = max_streams
        self._streams: OrderedDict[StreamKey, _Stream] = OrderedDict()
        self._lock = threading.Lock()
        self._stats = TrackerStats()
        self._warned = False

    @property
    def memory_bound(self) -> int:
        """Upper bound of the tracker's memory in bytes (all streams at their bound)."""
        return self.max_streams * self.config.memory_bound

    def stats(self) -> TrackerStats:
        """A snapshot of the counters."""
        with self._lock:
            s = self._stats
            return TrackerStats(
                len(self._streams),
                s.evicted_streams,
                s.results,
                s.result_bytes,
                s.truncated_result_bytes
                + sum(st.provenance.truncated_bytes for st in self._streams.values()),
                s.released_early,
                s.checks,
                s.unchecked_argument_bytes,
            )

    def check_call(
        self,
        key: StreamKey,
        tool: str,
        server: str | None,
        arguments: Any,
        response_id: str | None = None,
    ) -> Provenance:
        """Measure a call about to be made by ``key``'s agent (issued by ``response_id``)."""
        with self._lock:
            stream = self._stream(key)
            if response_id is None or response_id != stream.open_response:
                self._release(stream)
                stream.open_response = response_id
            result = stream.provenance.check_call(tool, server, arguments)
            self._stats.checks += 1
            self._stats.unchecked_argument_bytes += result.unchecked_bytes
            return result

    def add_result(
        self,
        key: StreamKey,
        tool: str,
        server: str | None,
        content: Any,
        structured: Any = None,
        response_id: str | None = None,
    ) -> None:
        """Make a result of ``key``'s stream visible to its later responses' calls."""
        data = result_text(content, structured)
        with self._lock:
            stream = self._stream(key)
            self._stats.results += 1
            self._stats.result_bytes += len(data)
            data = stream.provenance.kept_text(data)
            if response_id is None or response_id != stream.open_response:
                stream.provenance.add_kept(tool, server, data)
                return
            while stream.held and stream.held_bytes + len(data) > self.config.held_bytes:
                held_tool, held_server, held = stream.held.pop(0)
                stream.held_bytes -= len(held)
                stream.provenance.add_kept(held_tool, held_server, held)
                self._stats.released_early += 1
            stream.held.append((tool, server, data))
            stream.held_bytes += len(data)

    def forget(self, conversation_id: str) -> int:
        """Drop every stream of a conversation (its retained bytes are overwritten first);
        returns how many were dropped. Call it when a conversation ends."""
        with self._lock:
            keys = [k for k in self._streams if k[0] == conversation_id]
            for k in keys:
                self._drop(self._streams.pop(k))
            return len(keys)

    def clear(self) -> None:
        """Drop every stream."""
        with self._lock:
            while self._streams:
                self._drop(self._streams.popitem()[1])

    def memory_bytes(self) -> int:
        """Bytes the kept streams hold now."""
        with self._lock:
            return sum(s.provenance.memory_bytes() + s.held_bytes for s in self._streams.values())

    # ------------------------------------------------------------------ internals

    def _stream(self, key: StreamKey) -> _Stream:
        stream = self._streams.get(key)
        if stream is not None:
            self._streams.move_to_end(key)
            return stream
        if len(self._streams) >= self.max_streams:
            _, oldest = self._streams.popitem(last=False)
            self._drop(oldest)
            self._stats.evicted_streams += 1
            if not self._warned:
                self._warned = True
                log.warning(
                    "toolwatch provenance: more than %s at once; the least recently "
                    "used is forgotten (its later calls are measured against an empty window; "
                    "raise max_streams to keep more)",
                    counted(self.max_streams, "stream"),
                )
        stream = self._streams[key] = _Stream(StreamProvenance(self.config))
        return stream

    def _release(self, stream: _Stream) -> None:
        for tool, server, data in stream.held:
            stream.provenance.add_kept(tool, server, data)
        stream.held.clear()
        stream.held_bytes = 0

    def _drop(self, stream: _Stream) -> None:
        self._stats.truncated_result_bytes += stream.provenance.truncated_bytes
        stream.provenance.clear()
        stream.held.clear()
