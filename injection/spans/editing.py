"""The two session edits every injector is made of: insert calls, or re-time calls.

Rules shared by every kind, so the detectors see only the anomaly and not an artefact of the
edit:

* inserted calls start new model responses (fresh response ids); their gaps are the kind's own
  (runaway: 1.5–4 s) or drawn from the training split's different-response gaps;
* the calls after the insertion keep their own gaps: the rest of the session moves in time;
* re-timed calls (the bursts) leave the session's later calls with their gaps too, and a later
  call that shared a response with the last re-timed call still shares it afterwards;
* ``seq`` is re-numbered 0..n-1.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np

from toolwatch.injection.spans.contract import NOTE_MID_RESPONSE, Injection, InjectionError
from toolwatch.injection.spans.session_arrays import US_PER_S, SessionCalls
from toolwatch.words import counted

#: Taken from the call before the insertion point.
_INHERITED = ("session_id", "agent_id", "trace_id", "source", "service")
#: The fields an injector gives each inserted call (the others are inherited or null).
ROW_FIELDS = (
    "tool",
    "server",
    "input_bytes",
    "output_bytes",
    "failed",
    "error_type",
    "duration_us",
)


def _fresh_span_ids(anchor_span: object, label: str, size: int) -> np.ndarray:
    """Span ids for inserted calls, derived from the anchor call's id (no random draw, so an
    injection is the same whichever columns the session carries)."""
    base = f"{anchor_span}/{label}"
    return np.array(
        [hashlib.blake2b(f"{base}/{j}".encode(), digest_size=8).hexdigest() for j in range(size)],
        dtype=object,
    )


def fresh_responses(kind: str, size: int, start: int = 0) -> np.ndarray:
    return np.array([f"injected:{kind}:{start + j}" for j in range(size)], dtype=object)


def _filled(session: SessionCalls, name: str, m: int, anchor: int) -> np.ndarray:
    col = session.columns[name]
    if name in _INHERITED:
        return np.repeat(col[anchor : anchor + 1], m)
    if col.dtype == bool:
        return np.zeros(m, dtype=bool)
    if col.dtype.kind == "f":
        return np.full(m, np.nan)
    return np.full(m, None, dtype=object)


def insert_calls(
    session: SessionCalls,
    position: int,
    rows: Mapping[str, np.ndarray],
    gaps_s: np.ndarray,
    label: str,
) -> SessionCalls:
    """Insert calls before index ``position``; later calls keep their gaps (time shift).

    ``rows`` gives the inserted calls' fields (at least ``tool`` and ``response_id``);
    ``gaps_s[j]`` is the gap before inserted call j. Session, agent, trace, source and service
    are those of the call before the insertion point; span ids are derived from its span id.
    """
    n, m = len(session), len(gaps_s)
    if not 1 <= position <= n:
        raise InjectionError(f"insertion position {position} outside 1..{n}")
    anchor = position - 1
    t = session["start_time"]
    t_new = t[anchor] + np.cumsum(np.round(np.asarray(gaps_s) * US_PER_S)).astype(np.int64)
    shift = int(t_new[-1] - t[anchor]) if m else 0
    out: dict[str, np.ndarray] = {}
    for name, col in session.columns.items():
        if name == "start_time":
            out[name] = np.concatenate([t[:position], t_new, t[position:] + shift])
            continue
        if name in rows:
            ins = np.asarray(rows[name], dtype=col.dtype)
        elif name == "span_id":
            ins = _fresh_span_ids(col[anchor], label, m)
        elif name == "label":
            ins = np.full(m, label, dtype=object)
        else:
            ins = _filled(session, name, m, anchor)
        out[name] = np.concatenate([col[:position], ins, col[position:]])
    if "seq" in out:
        out["seq"] = np.arange(n + m, dtype=np.float64)
    return SessionCalls(out)


def retime_calls(
    session: SessionCalls,
    position: int,
    gaps_s: np.ndarray,
    responses: np.ndarray,
    label: str,
) -> SessionCalls:
    """Set the gaps before calls ``position..position+m-1`` and their response ids.

    Later calls keep their own gaps (shifted in time) and a later call that shared a response
    with the last re-timed call joins that call's new response.
    """
    n, m = len(session), len(gaps_s)
    if position < 1 or position + m > n:
        # no position in the message: skipped runs are counted per distinct reason
        raise InjectionError(
            f"fewer than {counted(m, 'call')} from the insertion point on to re-time"
        )
    t = session["start_time"].copy()
    old_last = t[position + m - 1]
    t[position : position + m] = t[position - 1] + np.cumsum(
        np.round(np.asarray(gaps_s) * US_PER_S)
    ).astype(np.int64)
    t[position + m :] += t[position + m - 1] - old_last
    resp = session["response_id"].copy()
    last_old = resp[position + m - 1]
    resp[position : position + m] = responses
    if last_old is not None:
        j = position + m
        while j < n and resp[j] == last_old:
            resp[j] = responses[-1]
            j += 1
    label_col = session["label"].copy()
    label_col[position : position + m] = label
    extra = {"seq": np.arange(n, dtype=np.float64)} if "seq" in session.columns else {}
    return session.replace(start_time=t, response_id=resp, label=label_col, **extra)


def _mid_response(session: SessionCalls, position: int) -> bool:
    return position < len(session) and not bool(session.response_starts()[position])


def insert_rows(
    kind: str,
    session: SessionCalls,
    position: int,
    rows: Mapping[str, np.ndarray],
    gaps_s: np.ndarray,
    note: str = "",
) -> Injection:
    """Insert ``rows`` before ``position`` as new responses (one each, unless ``rows`` brings
    its own ``response_id``); the note says when the point sits inside a model response."""
    rows = dict(rows)
    rows.setdefault("response_id", fresh_responses(kind, len(gaps_s)))
    if not note and _mid_response(session, position):
        note = NOTE_MID_RESPONSE
    calls = insert_calls(session, position, rows, gaps_s, kind)
    return Injection(calls, kind, position, len(gaps_s), note)
