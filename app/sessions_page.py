"""Sessions: find a session (source, date, flagged) and follow it call by call.

The list is the store's ``sessions`` view with its live alerts; with a model, sessions are also
flagged by the detection scan (:func:`toolwatch.detection.scan.scan` at the operating point).
The timeline scores the chosen session on the fly with the batch scorer
(:func:`toolwatch.detection.score_calls`): every stream starts afresh, so one session scored
alone gets exactly the scores it gets inside the whole store.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st
from toolwatch.app import charts, ui
from toolwatch.app import queries as q
from toolwatch.collector.schema import CALLS_SCHEMA
from toolwatch.detection import CUE_NAMES, CUE_SETS, DETECTORS, NormalModel, score_calls
from toolwatch.detection.alerts import parse_statistic
from toolwatch.detection.scan import scan

FLAG_ALL = "all sessions"
FLAG_ONLY = "flagged only"
FLAG_NONE = "not flagged"
#: Above this many calls in the filtered sessions, the scan waits for a narrower filter.
SCAN_MAX_CALLS = 2_000_000
MAIN_AGENT = "main agent"


@st.cache_data(show_spinner="Scanning sessions with the model…", max_entries=8)
def _scan(
    root: str,
    key: tuple[str, ...],
    model_path: str,
    model_checksum: str,
    session_ids: tuple[str, ...],
) -> pd.DataFrame:
    """Flags of the scan over the given sessions: session, margin, cue, first call."""
    model = NormalModel.load(model_path)
    columns = ["session_id", "scan_margin", "scan_cue", "scan_statistic", "scan_seq"]
    if model is None or not model.calibrated or not session_ids:
        return pd.DataFrame(columns=columns)
    with q.open_store(Path(root)) as con:
        calls = q.arrow(
            con,
            f"SELECT * EXCLUDE (date) FROM {q.CALLS} WHERE list_contains(?, session_id)",
            [list(session_ids)],
        )
    result = scan(model, calls)
    return pd.DataFrame(
        [(f.session_id, f.margin, f.cue, f.statistic, f.seq) for f in result.flags],
        columns=columns,
    )


def render() -> None:
    s = ui.settings()
    st.title("Sessions")
    model, problem = ui.model(s)
    with q.open_store(s.store) as con:
        if q.count(con, q.CALLS) == 0:
            ui.explain_empty(q.CALLS, s.store, "calls")
            return
        sessions = _filtered_sessions(con, s.store, model)
        if sessions is None:
            return
        if model is None:
            st.caption(f"Cue scores and the scan need a model — {problem}.")
        if sessions.empty:
            st.info("No session matches these filters.")
            return
        st.dataframe(
            sessions[
                [
                    "session_id",
                    "source",
                    "first_time",
                    "calls",
                    "tools",
                    "failures",
                    "responses",
                    "labelled_calls",
                    "alerts",
                    "flagged_by",
                ]
            ],
            hide_index=True,
            width="stretch",
            height=min(400, 38 + 35 * len(sessions)),
        )
        limit = 2000
        options = list(sessions["session_id"].head(limit))
        if len(sessions) > limit:
            st.caption(f"{len(sessions):,} sessions match; the first {limit:,} can be picked.")
        chosen = st.selectbox("Session", options, key="session")
        if chosen:
            _timeline(con, str(chosen), model)


def _filtered_sessions(con: Any, root: Path, model: NormalModel | None) -> pd.DataFrame | None:
    c1, c2, c3, c4 = st.columns([2, 2, 2, 2])
    all_sources = q.sources(con)
    chosen_sources = c1.multiselect("Source", all_sources, default=all_sources, key="sources")
    span = q.session_date_range(con)
    first_day: date | None = None
    last_day: date | None = None
    if span is not None:
        picked = c2.date_input(
            "First call between", value=span, min_value=span[0], max_value=span[1], key="dates"
        )
        if isinstance(picked, (tuple, list)) and len(picked) == 2:
            first_day, last_day = picked[0], picked[1]
    flag = c3.selectbox("Flagged", [FLAG_ALL, FLAG_ONLY, FLAG_NONE], key="flag")
    injected_only = c4.checkbox("with injected (labelled) calls only", key="injected")
    sessions = q.session_list(con, chosen_sources, first_day, last_day)
    flags = pd.DataFrame(columns=["session_id", "scan_margin", "scan_cue"])
    if model is not None and model.calibrated and not sessions.empty:
        total = int(sessions["calls"].sum())
        if total <= SCAN_MAX_CALLS:
            flags = _scan(
                str(root),
                q.fingerprint(root, q.CALLS),
                str(ui.settings().model),
                model.checksum,
                tuple(sorted(sessions["session_id"])),
            )
        else:
            st.caption(
                f"{total:,} calls match: narrow the dates to scan them with the model "
                f"(up to {SCAN_MAX_CALLS:,})."
            )
    sessions = sessions.merge(flags, on="session_id", how="left")
    scanned = sessions["scan_margin"].notna()
    alerted = sessions["alerts"] > 0
    sessions["flagged_by"] = np.select(
        [alerted & scanned, alerted, scanned], ["alert + scan", "alert", "scan"], default=""
    )
    flagged = alerted | scanned
    if flag == FLAG_ONLY:
        sessions = sessions[flagged]
    elif flag == FLAG_NONE:
        sessions = sessions[~flagged]
    if injected_only:
        sessions = sessions[sessions["labelled_calls"] > 0]
    # flagged sessions first (strongest scan margin, then alerts), then the newest
    sessions = sessions.assign(
        _flag=(sessions["flagged_by"] != "").astype(int),
        _margin=sessions["scan_margin"].fillna(-np.inf),
    ).sort_values(
        ["_flag", "_margin", "alerts", "first_time", "session_id"],
        ascending=[False, False, False, False, True],
    )
    st.caption(
        f"{len(sessions):,} sessions · {int(flagged.sum()):,} flagged in the filter "
        f"({int(alerted.sum()):,} with live alerts, {int(scanned.sum()):,} by the scan)"
    )
    return sessions.drop(columns=["_flag", "_margin"]).reset_index(drop=True)


def _timeline(con: Any, session_id: str, model: NormalModel | None) -> None:
    calls = q.session_calls(con, session_id)
    if calls.empty:
        st.info("This session has no calls.")
        return
    agents = list(dict.fromkeys(None if pd.isna(a) else str(a) for a in calls["agent_id"]))
    names = [MAIN_AGENT if a is None else str(a) for a in agents]
    stream = names[0]
    if len(names) > 1:
        stream = st.radio("Stream", names, horizontal=True, key="stream")
    agent = None if stream == MAIN_AGENT else stream
    part = calls[calls["agent_id"].isna()] if agent is None else calls[calls["agent_id"] == agent]
    part = part.reset_index(drop=True)
    view = _stream_frame(part, calls)
    alerts = q.session_alerts(con, session_id)
    statistic = None
    threshold = None
    cue_scores = None
    if model is not None:
        default = model.config.alert_on[0] if model.config.alert_on else "all_cusum"
        d_set, d_det = parse_statistic(default)
        c1, c2 = st.columns(2)
        cue_set = c1.selectbox("Cue set", CUE_SETS, index=CUE_SETS.index(d_set), key="t_cue")
        detector = c2.selectbox("Detector", DETECTORS, index=DETECTORS.index(d_det), key="t_det")
        statistic = f"{cue_set}_{detector}"
        scored = _score(model, part)
        view = view.merge(scored, on="span_id", how="left")
        threshold = model.threshold(cue_set, detector) if model.calibrated else None
        cue_scores = view.melt(
            id_vars=["index"], value_vars=list(CUE_NAMES), var_name="cue", value_name="score"
        )
        view["crossing"] = _crossings(view[statistic].to_numpy(float), threshold)
    else:
        view["crossing"] = False
    live = set(alerts["span_id"].dropna()) if not alerts.empty else set()
    view["live_alert"] = view["span_id"].isin(live)
    view["alert"] = view["live_alert"] | view["crossing"]
    view["alert_by"] = np.select(
        [view["live_alert"] & view["crossing"], view["live_alert"], view["crossing"]],
        ["live alert + crossing", "live alert", "crossing (scored now)"],
        default="",
    )
    _summary(view, session_id, statistic, threshold, alerts)
    st.altair_chart(charts.timeline_chart(view, cue_scores, statistic, threshold))
    shown = [
        "index",
        "seq",
        "start_time",
        "gap_s",
        "response_group",
        "tool",
        "server",
        "input_bytes",
        "output_bytes",
        "failed",
        "error_type",
        "label",
        "alert_by",
    ]
    if model is not None:
        shown += [*CUE_NAMES, "all", statistic or "all_cusum"]
    st.dataframe(view[list(dict.fromkeys(shown))], hide_index=True, width="stretch")


def _stream_frame(part: pd.DataFrame, session: pd.DataFrame) -> pd.DataFrame:
    """Per call of a stream: position, gap, response group (shared by parallel calls)."""
    start = pd.to_datetime(part["start_time"], utc=True)
    gap = start.diff().dt.total_seconds()
    response = part["response_id"]
    same = response.notna() & (response == response.shift(1))
    groups: dict[str, int] = {}
    for rid in session["response_id"]:
        if rid is not None and not (isinstance(rid, float) and np.isnan(rid)) and rid not in groups:
            groups[rid] = len(groups) + 1
    group = [groups.get(r) if isinstance(r, str) else None for r in response]
    return pd.DataFrame(
        {
            "index": np.arange(len(part)),
            "seq": part["seq"],
            "span_id": part["span_id"],
            "start_time": start,
            "gap_s": gap,
            "same_response": same.to_numpy(bool),
            "response_group": pd.array(group, dtype="Int64"),
            "tool": part["tool"],
            "server": part["server"],
            "input_bytes": part["input_bytes"],
            "output_bytes": part["output_bytes"],
            "failed": part["failed"].astype(bool),
            "error_type": part["error_type"],
            "label": part["label"],
            "injected": part["label"].notna().to_numpy(bool),
        }
    )


def _score(model: NormalModel, part: pd.DataFrame) -> pd.DataFrame:
    """Cue scores and detector statistics of one stream, keyed by span id."""
    table = pa.Table.from_pandas(part, preserve_index=False)
    columns = [f.name for f in CALLS_SCHEMA if f.name in table.column_names]
    table = table.select(columns).cast(pa.schema([CALLS_SCHEMA.field(c) for c in columns]))
    scored = score_calls(model, table).to_pandas()
    keep = ["span_id", *CUE_NAMES, "all", *(f"{c}_{d}" for c in CUE_SETS for d in DETECTORS)]
    return scored[keep]


def _crossings(values: np.ndarray, threshold: float | None) -> np.ndarray:
    """Calls where the statistic goes above the threshold (one per excursion, like alerts)."""
    if threshold is None or values.size == 0:
        return np.zeros(values.size, dtype=bool)
    above = np.nan_to_num(values, nan=-np.inf) > threshold
    previous = np.concatenate([[False], above[:-1]])
    return np.asarray(above & ~previous)


def _summary(
    view: pd.DataFrame,
    session_id: str,
    statistic: str | None,
    threshold: float | None,
    alerts: pd.DataFrame,
) -> None:
    m = st.columns(5)
    m[0].metric("Calls in stream", f"{len(view):,}")
    m[1].metric("Failures", f"{int(view['failed'].sum()):,}")
    m[2].metric("Injected calls", f"{int(view['injected'].sum()):,}")
    m[3].metric("Live alerts (session)", f"{len(alerts):,}")
    if statistic is not None and threshold is not None:
        peak = float(np.nanmax(view[statistic].to_numpy(float))) if len(view) else float("nan")
        m[4].metric(f"Peak {statistic}", f"{peak:.2f}", f"{peak - threshold:+.2f} vs threshold")
    labels = sorted(set(view.loc[view["injected"], "label"]))
    if labels:
        st.caption("Injected: " + ", ".join(f"`{lab}`" for lab in labels))
    st.caption(f"Session `{session_id}`; injected calls are shaded, alerts marked ▼.")


if __name__ == "__main__":
    render()
