"""The scan: run the operating point over every session and rank the flagged ones.

A stream is flagged when a watched statistic (default the model's ``alert_on``,
``all_cusum``) exceeds its operating-point threshold at any call; a session is flagged when
any of its streams is. Each flagged session is reported once, by its strongest excursion:
the stream (main agent or subagent), the first call above the threshold (index in the stream,
seq, tool, time), the cue that explains it
(:func:`~toolwatch.detection.alerting.alerts.dominant_cue`),
the peak statistic and its margin over the threshold (in σ units of the standardised score),
and how many calls were above. Sessions are ranked by that margin, largest first. This is the
study's scan, which surfaced a subagent retrying a refused call 32 times.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from toolwatch.detection.cues.names import CUE_NAMES
from toolwatch.detection.detectors.names import parse_statistic, stat_column
from toolwatch.detection.model.normal_model import NormalModel
from toolwatch.detection.scoring.batch import score_calls
from toolwatch.detection.scoring.explain import dominant_cues


@dataclass(frozen=True)
class Flag:
    """One flagged session, by its strongest excursion above a threshold."""

    session_id: str
    agent_id: str | None
    call_index: int
    seq: int | None
    tool: str
    call_time: datetime
    statistic: str
    cue: str
    peak: float
    threshold: float
    margin: float
    calls_over: int
    stream_calls: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ScanResult:
    """Flagged sessions (ranked) and what was scanned; ``streams_flagged`` counts every flagged
    stream, including those of a session reported by another, stronger stream."""

    flags: list[Flag]
    sessions: int
    streams: int
    calls: int
    streams_flagged: int = 0


def scan(
    model: NormalModel,
    calls: pa.Table,
    statistics: Sequence[str] | None = None,
    *,
    scored: pa.Table | None = None,
    min_calls: int = 1,
) -> ScanResult:
    """Score ``calls`` and return the flagged sessions, ranked (see the module docstring);
    ``scored``: ``score_calls(model, calls)`` when the caller has it already. Only streams with
    at least ``min_calls`` calls are scanned (all are scored)."""
    scored = score_calls(model, calls) if scored is None else scored
    n = scored.num_rows
    if n == 0:
        return ScanResult([], 0, 0, 0, 0)
    call_index = scored.column("call_index").to_numpy()
    stream = np.cumsum(call_index == 0) - 1
    stream_len = np.bincount(stream)
    scanned = stream_len[stream] >= min_calls
    session = scored.column("session_id").to_pylist()
    agent = scored.column("agent_id").to_pylist()
    seq = scored.column("seq").to_pylist()
    tool = scored.column("tool").to_pylist()
    times = scored.column("start_time").to_pylist()
    best: dict[str, Flag] = {}
    flagged_streams: set[int] = set()
    for name in statistics or model.config.alert_on:
        cue_set, detector = parse_statistic(name)
        threshold = model.threshold(cue_set, detector)
        values = scored.column(name).to_numpy()
        over = np.flatnonzero((values > threshold) & scanned)
        if over.shape[0] == 0:
            continue
        over_streams, first = np.unique(stream[over], return_index=True)
        first_rows = over[first]
        counts = np.bincount(stream[over], minlength=stream_len.shape[0])
        peaks = np.full(stream_len.shape[0], -np.inf)
        np.maximum.at(peaks, stream[over], values[over])
        explain = {
            stat_column(c, d): scored.column(stat_column(c, d)).to_numpy()[first_rows]
            for c in CUE_NAMES
            for d in ("point", "ewma")
        }
        cues = dominant_cues(cue_set, detector, explain)
        flagged_streams.update(over_streams.tolist())
        for s, row, cue in zip(
            over_streams.tolist(), first_rows.tolist(), cues.tolist(), strict=True
        ):
            flag = Flag(
                session_id=str(session[row]),
                agent_id=agent[row],
                call_index=int(call_index[row]),
                seq=seq[row],
                tool=str(tool[row]),
                call_time=times[row],
                statistic=name,
                cue=str(cue),
                peak=float(peaks[s]),
                threshold=float(threshold),
                margin=float(peaks[s] - threshold),
                calls_over=int(counts[s]),
                stream_calls=int(stream_len[s]),
            )
            held = best.get(flag.session_id)
            if held is None or flag.margin > held.margin:
                best[flag.session_id] = flag
    flags = sorted(best.values(), key=lambda f: (-f.margin, f.session_id))
    kept = np.flatnonzero(scanned)
    return ScanResult(
        flags=flags,
        sessions=len({session[i] for i in kept.tolist()}),
        streams=int((stream_len >= min_calls).sum()),
        calls=int(scanned.sum()),
        streams_flagged=len(flagged_streams),
    )
