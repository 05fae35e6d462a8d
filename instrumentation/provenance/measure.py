"""One stream's provenance: its results go in, each call's numbers come out.

:meth:`StreamProvenance.check_call` measures, for one call, how many bytes of its arguments
reproduce earlier results of the stream, over every decoded view of every string argument:

* ``reused_longest`` / ``reused_total``: all string arguments, any earlier result. Per
  argument, total = the best whole-string view's coverage plus the decoded tokens', capped at
  the argument's size (in decoded bytes; a lower bound, since runs of ``k``…``w+k-2`` bytes
  are found only by chance).
* ``payload_longest`` / ``payload_total``: the same on the texts that leave the machine
  (:func:`~toolwatch.instrumentation.provenance.egress.classify`), counting only runs whose
  source is a *local* tool, that hold at least ``min_distinct_bytes`` distinct byte values
  (filler is not data) and that are not a copied link (a run covering a URL's origin and
  ending inside that URL).
* ``source_tool`` / ``encoding``: the source and the view of the longest reused run (on a
  tie, ``verbatim`` wins); ``dest_seen``: where the call's destination host appeared in the
  window (local wins over remote).

Nothing is kept from a check: views and runs are temporaries of the call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Final

from toolwatch.conventions import EGRESS_NONE, ENCODING_NONE
from toolwatch.instrumentation.provenance.config import (
    DEFAULT_CONFIG,
    Provenance,
    ProvenanceConfig,
)
from toolwatch.instrumentation.provenance.egress import (
    ToolName,
    browser_navigation_local,
    classify,
    destination_hosts,
    source_is_remote,
)
from toolwatch.instrumentation.provenance.text import (
    encode,
    result_text,
    string_leaves,
    strip_line_numbers,
)
from toolwatch.instrumentation.provenance.views import views
from toolwatch.instrumentation.provenance.window import (
    OTHER_SOURCE,
    FingerprintWindow,
    Run,
    covered,
)

#: a URL in a view (group 1: its ``scheme://host``)
_URL: Final = re.compile(rb"([A-Za-z][A-Za-z0-9+.-]*://[^/\s?#'\"<>]*)[^\s'\"<>]*")
#: destination hosts looked up per call, and occurrences of each inspected
_MAX_HOSTS: Final = 8
_MAX_OCCURRENCES: Final = 64
#: the name a source id maps to when a stream has more distinct tools than ids
OTHER_TOOL: Final = "other"
#: the provenance of a call that sends nothing out when only egress calls are measured
_UNMEASURED: Final = Provenance(EGRESS_NONE, None, None, 0, 0, "none", None, ENCODING_NONE, 0, 0, 0)
#: ``ToolName.of`` per (tool, server) seen (immutable, so shared; bounded like the names)
_tool_name: Final = lru_cache(maxsize=4_096)(ToolName.of)


class _Measure:
    """Longest run, covered bytes, the longest run's source offset and view."""

    __slots__ = ("checked", "encoding", "longest", "source", "total", "unchecked")

    def __init__(self) -> None:
        self.longest = self.total = self.checked = self.unchecked = 0
        self.source = -1
        self.encoding = ENCODING_NONE


class StreamProvenance:
    """The provenance state of one stream (one conversation's agent): window + browser page.

    Not thread-safe; :class:`~toolwatch.instrumentation.provenance.tracker.ProvenanceTracker`
    serialises access.
    """

    __slots__ = ("_browser_local", "_cfg", "_ids", "_remote", "_tools", "truncated_bytes", "window")

    def __init__(
        self, config: ProvenanceConfig = DEFAULT_CONFIG, window: FingerprintWindow | None = None
    ) -> None:
        """``window``: a cleared window of an earlier stream of ``config`` to use again (the
        importer replays thousands of streams one after another: one buffer and table serve
        them all), else a new one."""
        self._cfg = config
        self.window = FingerprintWindow(config) if window is None else window
        self._ids: dict[tuple[str, str | None], int] = {}
        self._tools: list[str] = []  # source id -> tool name as the record spells it
        self._remote: list[bool] = []  # source id -> its results come from off the machine
        self._browser_local: bool | None = None  # the last navigation went to loopback
        #: result bytes beyond ``max_result_bytes``, not kept (counted, never silent)
        self.truncated_bytes = 0

    @property
    def config(self) -> ProvenanceConfig:
        return self._cfg

    def add_result(
        self, tool: str, server: str | None, content: Any, structured: Any = None
    ) -> None:
        """Make one tool result visible to the stream's later calls."""
        self.add_text(tool, server, result_text(content, structured))

    def add_text(self, tool: str, server: str | None, data: bytes) -> None:
        """:meth:`add_result` for a result already turned into bytes (:func:`result_text`)."""
        self.add_kept(tool, server, self.kept_text(data))

    def kept_text(self, data: bytes) -> bytes:
        """What the window keeps of a result's bytes: line numbers stripped, its head (the
        rest is counted in :attr:`truncated_bytes`)."""
        cfg = self._cfg
        if cfg.strip_line_numbers:
            data = strip_line_numbers(data)
        if len(data) > cfg.max_result_bytes:
            self.truncated_bytes += len(data) - cfg.max_result_bytes
            data = data[: cfg.max_result_bytes]
        return data

    def add_kept(self, tool: str, server: str | None, data: bytes) -> None:
        """Append bytes returned by :meth:`kept_text`."""
        self.window.append(self._source_id(tool, server), data)

    def check_call(self, tool: str, server: str | None, arguments: Any) -> Provenance:
        """The provenance of a call about to be made (nothing of it is stored)."""
        name = _tool_name(tool, server)
        egress, sent = classify(name, arguments, self._browser_local)
        navigation = browser_navigation_local(name, arguments)
        if navigation is not None:
            self._browser_local = navigation
        measured = egress != EGRESS_NONE or self._cfg.check_non_egress
        if not (measured or sent):
            return _UNMEASURED  # what the code below gives then, without building it
        self.window.prepare()
        memo: dict[bytes, list[Run]] = {}  # view -> runs, shared by both measures
        reused = self._measure(string_leaves(arguments), False, memo) if measured else None
        payload = _Measure()
        dest = "none"
        if sent:
            payload = self._measure(sent, True, memo)
            dest = self._dest_seen(destination_hosts(sent))
        source_tool = None
        age = 0
        if reused is not None and reused.source >= 0:
            source_tool = self._tool_name(self.window.source_at(reused.source))
            age = self.window.total - reused.source
        return Provenance(
            egress=egress,
            reused_longest=None if reused is None else reused.longest,
            reused_total=None if reused is None else reused.total,
            payload_longest=payload.longest,
            payload_total=payload.total,
            dest_seen=dest,
            source_tool=source_tool,
            encoding=reused.encoding if reused is not None and reused.longest else ENCODING_NONE,
            source_age_bytes=age,
            checked_bytes=0 if reused is None else reused.checked,
            unchecked_bytes=0 if reused is None else reused.unchecked,
        )

    def memory_bytes(self) -> int:
        return self.window.memory_bytes()

    def clear(self) -> None:
        self.window.clear()
        self._browser_local = None

    # ------------------------------------------------------------------ internals

    def _source_id(self, tool: str, server: str | None) -> int:
        key = (tool, server)
        sid = self._ids.get(key)
        if sid is None:
            if len(self._tools) >= OTHER_SOURCE:
                return OTHER_SOURCE
            sid = self._ids[key] = len(self._tools)
            self._tools.append(tool)
            self._remote.append(source_is_remote(_tool_name(tool, server)))
        return sid

    def _tool_name(self, sid: int) -> str:
        return self._tools[sid] if sid < len(self._tools) else OTHER_TOOL

    def _is_local(self, sid: int) -> bool:
        return sid < len(self._remote) and not self._remote[sid]

    def _measure(
        self, leaves: Iterable[str], payload: bool, memo: dict[bytes, list[Run]]
    ) -> _Measure:
        cfg = self._cfg
        out = _Measure()
        budget = cfg.max_argument_bytes
        for leaf in leaves:
            raw = encode(leaf)
            if len(raw) > budget:
                out.unchecked += len(raw) - budget
                raw = raw[:budget]
            budget -= len(raw)
            out.checked += len(raw)
            if len(raw) < cfg.k:
                continue
            whole = tokens = 0
            for view in views(raw, cfg.k):
                runs = memo.get(view.data)
                if runs is None:
                    runs = memo[view.data] = self.window.runs(view.data)
                if runs and payload:
                    runs = self._payload_runs(view.data, runs)
                if not runs:
                    continue
                coverage = covered(runs)
                if view.token:
                    tokens += coverage
                elif coverage > whole:
                    whole = coverage
                for start, end, source in runs:
                    length = end - start
                    if length > out.longest or (
                        length == out.longest
                        and view.encoding == "verbatim"
                        and out.encoding != "verbatim"
                    ):
                        out.longest, out.source, out.encoding = length, source, view.encoding
            out.total += min(len(raw), whole + tokens)
        return out

    def _payload_runs(self, view: bytes, runs: list[Run]) -> list[Run]:
        """The runs that count as payload (see the module docs)."""
        urls = (
            [(m.start(), m.end(1), m.end()) for m in _URL.finditer(view)] if b"://" in view else []
        )
        distinct = self._cfg.min_distinct_bytes
        out = []
        for run in runs:
            start, end, source = run
            if distinct and len(set(view[start : min(end, start + 4096)])) < distinct:
                continue
            if not self._is_local(self.window.source_at(source)):
                continue
            # a copied URL (the run covers its origin and ends within it) is a link, not data
            if any(
                start < origin_end and url_start < end and end <= url_end + 2
                for url_start, origin_end, url_end in urls
            ):
                continue
            out.append(run)
        return out

    def _dest_seen(self, hosts: set[str]) -> str:
        """Whether the hosts were seen in the window: ``local`` (in a local tool's result)
        wins over ``remote``; ``unseen``; ``none`` without a host."""
        if not hosts:
            return "none"
        seen = "unseen"
        for host in sorted(hosts)[:_MAX_HOSTS]:
            # hosts are ASCII (destination_hosts matches [A-Za-z0-9.-] only)
            for offset in self.window.occurrences(host.encode(), _MAX_OCCURRENCES):
                if self._is_local(self.window.source_at(offset)):
                    return "local"
                seen = "remote"
        return seen
