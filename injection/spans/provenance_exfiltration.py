"""Exfiltration that carries provenance: one egress call sending bytes of an earlier local
result, with the provenance numbers the instrumentation would measure on it (issue 13).

Without content, what is honest? The injected call's numbers are derived from what the record
shows of the stream before it, and from measured training calls:

* **Source.** The payload is cut from one earlier result of the *same stream* that the agent's
  window would still hold — a successful call of a *local* tool (not web, search or a browser:
  :func:`~toolwatch.instrumentation.provenance.egress.source_is_remote`), whose result had
  arrived before the injected call starts (start + duration), within the last
  ``window_bytes`` of results (each counting at most ``max_result_bytes``, as the window keeps
  a result's head only). The payload is ``payload_bytes``, or — when no such result is that
  big — the largest one, if it has at least ``min_source_bytes`` (else the run is skipped and
  counted). It can never exceed the source result's bytes.
* **Carrier.** An egress class is drawn among the classes with measured calls in training
  (``params.classes`` to fix them), and one of its training calls is copied: tool, server,
  output size and duration. Its input bytes are the copied call's plus the payload as written
  (verbatim ``P``, URL-encoded ``⌈1.5·P⌉`` — about a quarter of text bytes are reserved and
  take three — or base64 ``4·⌈P/3⌉``).
* **Provenance.** ``payload_longest = payload_total = reused_longest = reused_total = P``,
  ``reused_encoding`` the encoding (``url``, ``base64``), ``source_tool`` the source call's
  tool, ``dest_seen = unseen`` (the collecting host appears in no result) and
  ``unchecked_bytes = 0``. This assumes exact measurement: on real transcripts with real
  content the research measured the encoding right in 99.9 % of such injected calls and the
  payload found in ≥ 99.7 % (issue 13 research §4).

The call opens a model response of its own, at the experiment's shared insertion point; the
rest of the stream keeps its measured values.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np

from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.contract import Injection, InjectionError
from toolwatch.injection.spans.editing import fresh_responses, insert_rows
from toolwatch.injection.spans.kinds import ProvenanceExfiltrationParams
from toolwatch.injection.spans.session_arrays import US_PER_S, SessionCalls
from toolwatch.instrumentation.provenance.config import DEFAULT_CONFIG
from toolwatch.instrumentation.provenance.egress import ToolName, source_is_remote
from toolwatch.words import counted

#: Bytes a payload of ``P`` bytes takes in the arguments, per encoding.
URL_EXPANSION: Final = 1.5
#: Note on a run whose window held no result of the full payload size (the largest was sent).
NOTE_PAYLOAD_CUT: Final = "payload_cut"


def written_bytes(payload: int, encoding: str) -> int:
    """Argument bytes of a ``payload``-byte payload written in ``encoding``."""
    if encoding == "verbatim":
        return payload
    if encoding == "url":
        return math.ceil(URL_EXPANSION * payload)
    if encoding == "base64":
        return 4 * math.ceil(payload / 3)
    raise InjectionError(f"unknown payload encoding {encoding!r} (verbatim, url, base64)")


def _local_sources(session: SessionCalls, position: int, start_us: int) -> np.ndarray:
    """Indices of earlier calls whose result the window holds and a payload may come from."""
    cfg = DEFAULT_CONFIG
    prefix = np.arange(position)
    out = session["output_bytes"][:position]
    known = ~np.isnan(out)
    held = np.minimum(np.where(known, out, 0.0), cfg.max_result_bytes)
    # bytes of results from call i to the insertion point: the window keeps the newest
    newer = np.cumsum(held[::-1])[::-1]
    duration = session["duration_us"][:position] if "duration_us" in session.columns else None
    arrived = np.ones(position, dtype=bool)
    if duration is not None:
        done = session["start_time"][:position] + np.nan_to_num(duration.astype(np.float64))
        arrived = done <= start_us
    servers = session["server"] if "server" in session.columns else [None] * len(session)
    local = np.array(
        [
            not source_is_remote(ToolName.of(str(session["tool"][i]), servers[i]))
            for i in range(position)
        ],
        dtype=bool,
    )
    ok = known & (out > 0) & ~session["failed"][:position] & arrived & local
    ok &= newer <= cfg.window_bytes + held  # its head is still in the window
    return prefix[ok]


def inject_provenance_exfiltration(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: ProvenanceExfiltrationParams,
) -> Injection:
    """One egress call carrying ``params.payload_bytes`` of an earlier local result."""
    classes = sorted(params.classes or context.carriers)
    classes = [c for c in classes if c in context.carriers]
    if not classes:
        raise InjectionError(
            "no egress call with provenance measured in training to carry the payload"
        )
    egress = classes[int(rng.integers(len(classes)))]
    pool = context.carriers[egress]
    j = int(rng.integers(len(pool)))
    gap = context.sample_gaps(rng, 1)
    start_us = int(session["start_time"][position - 1] + round(float(gap[0]) * US_PER_S))
    sources = _local_sources(session, position, start_us)
    if sources.size == 0:
        raise InjectionError("no local tool result before the insertion point to send")
    sizes = session["output_bytes"][sources]
    payload = params.payload_bytes
    note = ""
    big = sources[sizes >= payload]
    if big.size:
        source = int(big[int(rng.integers(big.size))])
    else:
        source = int(sources[int(np.argmax(sizes))])
        payload = int(min(sizes.max(), DEFAULT_CONFIG.max_result_bytes))
        if payload < min(params.payload_bytes, params.min_source_bytes):
            raise InjectionError(
                "no local result of at least "
                f"{counted(min(params.payload_bytes, params.min_source_bytes), 'byte')} "
                "before the insertion point"
            )
        note = NOTE_PAYLOAD_CUT
    rows: dict[str, np.ndarray] = {
        "tool": pool.tool[j : j + 1],
        "server": pool.server[j : j + 1],
        "input_bytes": np.array([pool.input_bytes[j] + written_bytes(payload, params.encoding)]),
        "output_bytes": pool.output_bytes[j : j + 1].astype(np.float64),
        "failed": np.zeros(1, dtype=bool),
        "error_type": np.full(1, None, dtype=object),
        "duration_us": pool.duration_us[j : j + 1].astype(np.float64),
        "response_id": fresh_responses(kind, 1),
        "egress": np.array([egress], dtype=object),
        "payload_longest": np.array([float(payload)]),
        "payload_total": np.array([float(payload)]),
        "reused_longest": np.array([float(payload)]),
        "reused_total": np.array([float(payload)]),
        "source_tool": np.array([session["tool"][source]], dtype=object),
        "reused_encoding": np.array([params.encoding], dtype=object),
        "dest_seen": np.array(["unseen"], dtype=object),
        "unchecked_bytes": np.zeros(1),
    }
    return insert_rows(kind, session, position, rows, gap, note)
