"""Sessions: find a stream (source, date, flagged) and follow it call by call.

The unit is the stream ``(session_id, agent_id)`` — a main agent or one of its subagents — as
everywhere in detection: a subagent runs beside its parent with its own gaps, bigrams and
detector state, so the list has one row per stream (the store's ``streams`` view with its live
alerts) and the timeline shows one stream, never a parent and its subagents interleaved. With
a model, streams are also flagged by the detection scan
(:func:`toolwatch.detection.scoring.scan.scan`
at the operating point, reported per stream). The timeline scores the chosen stream on the fly
with the batch scorer (:func:`toolwatch.detection.score_calls`): every stream starts afresh, so
one stream scored alone gets exactly the scores it gets inside the whole store.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st

from toolwatch.app.dashboard import charts, ui
from toolwatch.app.dashboard import queries as q
from toolwatch.detection import CUE_NAMES, CUE_SETS, DETECTORS, NormalModel, score_calls
from toolwatch.detection.detectors.base import parse_statistic
from toolwatch.detection.scoring.scan import scan

FLAG_ALL = "all streams"
FLAG_ONLY = "flagged only"
FLAG_NONE = "not flagged"
AGENTS_ALL = "main agents and subagents"
AGENTS_MAIN = "main agents only"
AGENTS_SUB = "subagents only"
#: Above this many calls in the filtered sessions, the scan waits for a narrower filter.
SCAN_MAX_CALLS = 2_000_000
#: How many streams the picker offers (the list above shows every match).
PICK_LIMIT = 2000
#: Columns of the stream list, in display order.
LIST_COLUMNS = [
    "session_id",
    "stream",
    "flagged_by",
    "scan_cue",
    "scan_margin",
    "alerts",
    "source",
    "first_time",
    "calls",
    "tools",
    "failures",
    "responses",
    "labelled_calls",
]
Stream = tuple[str, str | None]


@st.cache_data(show_spinner="Scanning streams with the model…", max_entries=8)
def _scan(
    root: str,
    key: tuple[str, ...],
    model_path: str,
    model_checksum: str,
    session_ids: tuple[str, ...] | None,
) -> pd.DataFrame:
    """Flags of the scan per stream of the given sessions (None: every session): margin, cue,
    first call."""
    model = NormalModel.load(model_path)
    columns = ["session_id", "agent", "scan_margin", "scan_cue", "scan_statistic", "scan_seq"]
    if model is None or not model.calibrated or session_ids == ():
        return pd.DataFrame(columns=columns)
    with q.open_store(Path(root)) as con:
        calls = q.stream_keyed_calls(con, session_ids)
    rows = []
    for f in scan(model, calls).flags:  # one flag per stream key = per stream
        session_id, agent_id = q.split_stream_key(f.session_id)
        rows.append((session_id, agent_id or "", f.margin, f.cue, f.statistic, f.seq))
    return pd.DataFrame(rows, columns=columns)


def render() -> None:
    s = ui.settings()
    st.title("Sessions")
    model, problem = ui.model(s)
    with q.open_store(s.store) as con:
        if q.count(con, q.CALLS) == 0:
            ui.explain_empty(q.CALLS, s.store, "calls")
            return
        streams = _filtered_streams(con, s.store, model)
        if model is None:
            st.caption(f"Cue scores and the scan need a model — {problem}.")
        if streams.empty:
            st.info("No stream matches these filters.")
            return
        st.dataframe(
            streams[LIST_COLUMNS],
            hide_index=True,
            width="stretch",
            height=min(400, 38 + 35 * len(streams)),
            column_config={
                "scan_margin": st.column_config.NumberColumn("scan margin", format="%.2f"),
                "scan_cue": "scan cue",
                "flagged_by": "flagged by",
                "labelled_calls": "injected calls",
                "first_time": st.column_config.DatetimeColumn(
                    "first call (UTC)", format="YYYY-MM-DD HH:mm:ss"
                ),
            },
        )
        head = streams.head(PICK_LIMIT)
        described = {
            (str(r.session_id), ui.agent_of(r.agent_id)): _describe(r) for r in head.itertuples()
        }
        options: list[Stream] = list(described)
        if len(streams) > PICK_LIMIT:
            st.caption(f"{len(streams):,} streams match; the first {PICK_LIMIT:,} can be picked.")
        chosen = st.selectbox(
            "Stream", options, format_func=lambda o: described.get(o, str(o)), key="stream"
        )
        if chosen:
            _timeline(con, chosen, model)


def _describe(row: Any) -> str:
    flag = f" · flagged by {row.flagged_by}" if row.flagged_by else ""
    return f"{row.session_id} · {row.stream} · {row.calls:,} calls{flag}"


def _filtered_streams(con: Any, root: Path, model: NormalModel | None) -> pd.DataFrame:
    c1, c2, c3, c4 = st.columns([2, 2, 2, 2])
    all_sources = q.sources(con)
    chosen_sources = c1.multiselect("Source", all_sources, default=all_sources, key="sources")
    span = q.stream_date_range(con)
    first_day: date | None = None
    last_day: date | None = None
    if span is not None:
        picked = c2.date_input(
            "First call between", value=span, min_value=span[0], max_value=span[1], key="dates"
        )
        if isinstance(picked, (tuple, list)) and len(picked) == 2:
            first_day, last_day = picked[0], picked[1]
    flag = c3.selectbox("Flagged", [FLAG_ALL, FLAG_ONLY, FLAG_NONE], key="flag")
    agents = c4.selectbox("Agents", [AGENTS_ALL, AGENTS_MAIN, AGENTS_SUB], key="agents")
    injected_only = c4.checkbox("with injected (labelled) calls only", key="injected")
    streams = q.stream_list(con, chosen_sources, first_day, last_day)
    streams["agent"] = streams["agent_id"].map(lambda a: ui.agent_of(a) or "")
    streams["stream"] = streams["agent_id"].map(ui.stream_name)
    flags = pd.DataFrame(columns=["session_id", "agent", "scan_margin", "scan_cue"])
    if model is not None and model.calibrated and not streams.empty:
        total = int(streams["calls"].sum())
        if total <= SCAN_MAX_CALLS:
            # the whole store when it fits (one cached scan for every filter), else the filter
            whole = q.count(con, q.CALLS) <= SCAN_MAX_CALLS
            flags = _scan(
                str(root),
                q.fingerprint(root, q.CALLS),
                str(ui.settings().model),
                model.checksum,
                None if whole else tuple(sorted(set(streams["session_id"]))),
            )
        else:
            st.caption(
                f"{total:,} calls match: narrow the dates to scan them with the model "
                f"(up to {SCAN_MAX_CALLS:,})."
            )
    streams = streams.merge(
        flags[["session_id", "agent", "scan_margin", "scan_cue"]],
        on=["session_id", "agent"],
        how="left",
    )
    scanned = streams["scan_margin"].notna()
    alerted = streams["alerts"] > 0
    streams["flagged_by"] = np.select(
        [alerted & scanned, alerted, scanned], ["alert + scan", "alert", "scan"], default=""
    )
    flagged = alerted | scanned
    keep = pd.Series(True, index=streams.index)
    if flag == FLAG_ONLY:
        keep &= flagged
    elif flag == FLAG_NONE:
        keep &= ~flagged
    if agents == AGENTS_MAIN:
        keep &= streams["agent"] == ""
    elif agents == AGENTS_SUB:
        keep &= streams["agent"] != ""
    if injected_only:
        keep &= streams["labelled_calls"] > 0
    # flagged streams first (strongest scan margin, then alerts), then the newest
    streams = (
        streams[keep]
        .assign(_flag=flagged[keep].astype(int), _margin=streams["scan_margin"].fillna(-np.inf))
        .sort_values(
            ["_flag", "_margin", "alerts", "first_time", "session_id", "agent"],
            ascending=[False, False, False, False, True, True],
        )
    )
    subagents = int((streams["agent"] != "").sum())
    st.caption(
        f"{len(streams):,} streams ({len(streams) - subagents:,} main agents, {subagents:,} "
        f"subagents) in {streams['session_id'].nunique():,} sessions · "
        f"{int(flagged[keep].sum()):,} flagged ({int((alerted & keep).sum()):,} with live "
        f"alerts, {int((scanned & keep).sum()):,} by the scan)"
    )
    return streams.drop(columns=["_flag", "_margin"]).reset_index(drop=True)


def _timeline(con: Any, stream: Stream, model: NormalModel | None) -> None:
    session_id, agent_id = stream
    table = q.stream_calls(con, session_id, agent_id)
    if table.num_rows == 0:
        st.info("This stream has no calls.")
        return
    _siblings(con, session_id, agent_id)
    view = _stream_frame(table.to_pandas())
    alerts = q.stream_alerts(con, session_id, agent_id)
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
        view = view.merge(_score(model, table), on="span_id", how="left")
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
    _summary(view, stream, statistic, threshold, alerts)
    st.vega_lite_chart(_timeline_spec(view, cue_scores, statistic, threshold))
    shown = ["index", "seq", "tool", "alert_by"]
    if model is not None:
        shown += [statistic or "all_cusum", "all", *CUE_NAMES]
    shown += [
        "label",
        "start_time",
        "gap_s",
        "response_group",
        "server",
        "input_bytes",
        "output_bytes",
        "failed",
        "error_type",
    ]
    st.dataframe(
        view[list(dict.fromkeys(shown))],
        hide_index=True,
        width="stretch",
        column_config={
            "index": "call",
            "alert_by": "alert",
            "gap_s": st.column_config.NumberColumn("gap s", format="%.3f"),
            "response_group": "response",
            **{
                c: st.column_config.NumberColumn(format="%.2f")
                for c in [statistic or "all_cusum", "all", *CUE_NAMES]
            },
        },
    )


@st.cache_data(show_spinner=False, max_entries=16)
def _timeline_spec(
    view: pd.DataFrame,
    cue_scores: pd.DataFrame | None,
    statistic: str | None,
    threshold: float | None,
) -> dict[str, Any]:
    """The timeline's Vega-Lite spec, cached by its data: altair needs about a second to build
    and validate this layered chart, and the page reruns on every filter change."""
    return dict(charts.timeline_chart(view, cue_scores, statistic, threshold).to_dict())


def _siblings(con: Any, session_id: str, agent_id: str | None) -> None:
    """The other streams of the same session (its main agent and subagents), by name."""
    others = q.stream_list(con, session_id=session_id)
    others = others[[ui.agent_of(a) != agent_id for a in others["agent_id"]]]
    if others.empty:
        return
    parts = [
        f"{ui.stream_name(r.agent_id)} ({r.calls:,} calls"
        + (f", {r.alerts} alert{'s' if r.alerts != 1 else ''})" if r.alerts else ")")
        for r in others.sort_values("first_time").itertuples()
    ]
    st.caption(
        f"Session `{session_id}` also has {len(others)} other stream"
        f"{'s' if len(others) != 1 else ''}, each scored on its own: " + ", ".join(parts)
    )


def _stream_frame(part: pd.DataFrame) -> pd.DataFrame:
    """Per call of a stream: position, gap, response group (shared by parallel calls)."""
    start = pd.to_datetime(part["start_time"], utc=True)
    response = part["response_id"]
    codes = pd.factorize(response)[0]  # first response = 0, no response id = -1
    view = part[
        [
            "seq",
            "span_id",
            "tool",
            "server",
            "input_bytes",
            "output_bytes",
            "error_type",
            "label",
        ]
    ].copy()
    view.insert(0, "index", np.arange(len(part)))
    view["start_time"] = start
    view["gap_s"] = start.diff().dt.total_seconds()
    view["same_response"] = (response.notna() & (response == response.shift(1))).to_numpy(bool)
    view["response_group"] = pd.array([c + 1 if c >= 0 else None for c in codes], dtype="Int64")
    view["failed"] = part["failed"].astype(bool)
    view["injected"] = part["label"].notna().to_numpy(bool)
    return view


def _score(model: NormalModel, calls: pa.Table) -> pd.DataFrame:
    """Cue scores and detector statistics of one stream, keyed by span id."""
    scored = score_calls(model, calls).to_pandas()
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
    stream: Stream,
    statistic: str | None,
    threshold: float | None,
    alerts: pd.DataFrame,
) -> None:
    m = st.columns(5)
    m[0].metric("Calls in stream", f"{len(view):,}")
    m[1].metric("Failures", f"{int(view['failed'].sum()):,}")
    m[2].metric("Injected calls", f"{int(view['injected'].sum()):,}")
    m[3].metric("Live alerts (stream)", f"{len(alerts):,}")
    if statistic is not None and threshold is not None:
        peak = float(np.nanmax(view[statistic].to_numpy(float))) if len(view) else float("nan")
        m[4].metric(
            f"Peak {statistic}",
            f"{peak:.2f}",
            f"{peak - threshold:+.2f} vs {threshold:.2f}",
            delta_color="inverse",
            help="the largest value of the detector statistic in this stream, and how far it "
            "is above (red) or below (green) the operating-point threshold",
        )
    labels = sorted(set(view.loc[view["injected"], "label"]))
    if labels:
        st.caption("Injected: " + ", ".join(f"`{lab}`" for lab in labels))
    session_id, agent_id = stream
    st.caption(
        f"Session `{session_id}`, {ui.stream_name(agent_id)}; injected calls are shaded, alerts "
        "marked ▼ on the detector panel (dashed line: the operating-point threshold)."
    )


if __name__ == "__main__":
    render()
