"""Sessions: find a stream (source, flagged, agents, time range) and follow it call by call.

The unit is the stream ``(session_id, agent_id)`` — a main agent or one of its subagents — as
everywhere in detection: a subagent runs beside its parent with its own gaps, bigrams and
detector state, so the list has one row per stream and the timeline shows one stream, never a
parent and its subagents interleaved.

The list is one DuckDB query (:mod:`toolwatch.app.dashboard.streams`): the ``streams`` view in
the global time range, its live alerts, and the per-stream scores ``toolwatch scan`` stored for
the model in use — no session is scored on page load. A row's session id links to its
timeline: the URL names it (``?session=…&agent=…``; no ``agent`` = the main agent), so a stream has
a link of its own. The timeline scores that one stream with the batch scorer
(:func:`toolwatch.detection.score_calls`): every stream starts afresh, so one stream scored
alone gets exactly the scores it gets inside the whole store.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st

from toolwatch.app.dashboard import charts, hints, html_table, ui
from toolwatch.app.dashboard import empty_range as er
from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard import streams as sl
from toolwatch.app.dashboard import url_state as url
from toolwatch.app.dashboard.html_table import Col
from toolwatch.detection import CUE_NAMES, CUE_SETS, DETECTORS, NormalModel, score_calls
from toolwatch.detection.calls.split import LEARNING_EXCLUDED_QUIRKS
from toolwatch.detection.detectors.names import parse_statistic

FLAG_LABELS = {"all": "all streams", "flagged": "flagged only", "not flagged": "not flagged"}
AGENT_LABELS = {
    "all": "main agents and subagents",
    "main": "main agents only",
    "subagents": "subagents only",
}
MAIN = "main"  # the ``agent`` URL value of a main agent (also: no ``agent`` parameter)
Stream = tuple[str, str | None]
#: Columns of the stream list, in display order; they fit a 1,400-pixel window beside the
#: sidebar (the others are a toggle away), so nothing is hidden off the right edge.
LIST_COLUMNS = [
    "session_id",
    "stream",
    "flagged_by",
    "scan_cue",
    "scan_margin",
    "alerts",
    "first_time",
    "calls",
]
MORE_COLUMNS = ["source", "failures", "tools", "responses", "labelled_calls", "last_time"]


def render() -> None:
    s = ui.settings()
    span = url.current_span()
    st.title("Sessions")
    model, problem = ui.model(s)
    with q.open_store(s.store, span) as con:
        chosen = _filters(con)
        statistic = model.config.alert_on[0] if model and model.config.alert_on else "all_cusum"
        model_id = model.model_id if model is not None else None
        more = url.flag(
            st,
            "more columns (source, failures, tools, responses, injected, last call)",
            "more",
            widget="toggle",
        )
        listed = sl.stream_list(con, chosen, model_id, statistic, detail=more)
        _scores_note(con, s.store, model, problem, statistic)
        nothing = (
            er.range_note(span, q.data_days(s.store), "calls", **url.kept_params())
            if span.bounded and q.count(con, q.CALLS) == 0
            else "No stream matches these filters and this time range."
        )
        _stream_table(listed, span.label, more, nothing)
        ui.flush()  # the list paints before the timeline is scored
        stream = _stream_from_url(con)
        if stream is not None:
            _timeline(con, stream, model)
        elif listed.matched:
            st.caption("Click a session id to follow that stream call by call.")


def _filters(con: Any) -> sl.StreamFilter:
    c1, c2, c3, c4 = st.columns([3, 2, 2, 3])
    all_sources = q.sources(con)
    wanted = url.param("source")
    default = [x for x in (wanted or "").split(",") if x in all_sources] or all_sources

    def sync_sources() -> None:
        picked = st.session_state.get("w_source") or []
        url.set_params(source=None if set(picked) == set(all_sources) else ",".join(picked))

    sources = c1.multiselect(
        "Source", all_sources, default=default, key="w_source", on_change=sync_sources
    )
    flag = url.choice(
        c2, "Flagged", list(FLAG_LABELS), "flag", format_func=lambda k: FLAG_LABELS[k]
    )
    agents = url.choice(
        c3, "Agents", list(AGENT_LABELS), "agents", format_func=lambda k: AGENT_LABELS[k]
    )
    find = c4.text_input(
        "Session id (or its start)",
        value=url.param("find") or "",
        key="w_find",
        on_change=lambda: url.set_params(find=st.session_state.get("w_find") or None),
    )
    injected = url.flag(c4, "with injected (labelled) calls only", "injected")
    return sl.StreamFilter(
        sources=sources, flag=flag, agents=agents, injected_only=injected, session_prefix=find
    )


def _scores_note(
    con: Any, store: Any, model: NormalModel | None, problem: str, statistic: str
) -> None:
    if model is None:
        st.caption(f"Cue scores and the scan need a model — {problem}.")
        return
    stored = sl.scored_models(con)
    mine = stored[(stored["model_id"] == model.model_id) & (stored["statistic"] == statistic)]
    if mine.empty:
        st.info(
            f"No stored scan of this model ({model.model_id}, {statistic}): run "
            f"`toolwatch scan --store {hints.store_arg(store)}` to flag streams here (it "
            "stores every stream's peak, which this page reads instead of scoring on page load)."
        )
    else:
        when = pd.Timestamp(mine["scored_time"].iloc[0]).strftime("%Y-%m-%d %H:%M UTC")
        st.caption(
            f"Scan flags: {statistic} of model {model.model_id}, stored by `toolwatch scan` "
            f"at {when} ({ui.counted(mine['streams'].iloc[0], 'stream')})."
        )


def list_caption(listed: sl.StreamList, range_label: str) -> str:
    """The line above the stream list: what matched, by kind of stream, and what is flagged."""
    c = ui.counted
    subagents = listed.matched - listed.main_agents
    return (
        f"{c(listed.matched, 'stream')} ({c(listed.main_agents, 'main agent')}, "
        f"{c(subagents, 'subagent')}) in {c(listed.sessions, 'session')}"
        + (
            f" ({listed.injected_sessions:,} holding injected calls, which the Corpus facts "
            "and `toolwatch stats` leave out)"
            if listed.injected_sessions
            else ""
        )
        + f", {range_label} · "
        f"{listed.flagged:,} flagged ({listed.alerted:,} with live alerts, "
        f"{listed.scanned:,} by the scan)"
        + (
            f" · the first {len(listed.rows):,} shown, flagged first"
            if len(listed.rows) < listed.matched
            else ""
        )
    )


def scan_caption(listed: sl.StreamList) -> str:
    """Why the list and `toolwatch scan` rank differently: the list has a row per stream (a
    subagent ranked on its own, maybe above its main agent), the scan a line per session."""
    c = ui.counted
    return (
        "One row per stream: a subagent is listed and ranked on its own, beside its main "
        "agent. `toolwatch scan` lists each flagged session once, by its strongest stream — "
        f"here {c(listed.scanned, 'stream')} flagged by the scan in "
        f"{c(listed.scanned_sessions, 'session')}."
    )


HOUR = "%Y-%m-%d %H:%M"
#: The list's columns as shown (the whole session id on one line on a desktop; a phone wraps
#: it in the row's block).
LIST_SHOWN = {
    "session_id": Col("session", whole=True),
    "stream": Col("stream", whole=True),
    "flagged_by": Col("flagged by"),
    "scan_cue": Col("scan cue"),
    "scan_margin": Col(
        "margin", help="the stream's peak minus the operating-point threshold (scan)"
    ),
    "first_time": Col("first call (UTC)", HOUR),
    "failures": Col("failed"),
    "labelled_calls": Col("injected"),
    "last_time": Col("last call (UTC)", HOUR),
}


def stream_links(rows: pd.DataFrame) -> list[str | None]:
    """Each row's link to its stream on this page, the other parameters (the time range, the
    filters) kept: a row's session id opens its timeline, on a phone as on a desktop."""
    kept = {k: v for k, v in st.query_params.to_dict().items() if k not in ("session", "agent")}
    links: list[str | None] = []
    for sid, agent in zip(rows["session_id"], rows["agent_id"], strict=True):
        chosen = {"session": str(sid), **({"agent": a} if (a := ui.agent_of(agent)) else {})}
        links.append("?" + urllib.parse.urlencode({**kept, **chosen}))
    return links


def _stream_table(listed: sl.StreamList, range_label: str, more: bool, nothing: str) -> None:
    """The list, each session id a link to its stream (``?session=…&agent=…``); ``nothing``:
    what an empty list says (the store's span when the range holds none of its calls)."""
    st.caption(list_caption(listed, range_label))
    if listed.scanned:
        st.caption(scan_caption(listed))
    if listed.rows.empty:
        st.info(nothing)
        return
    rows = listed.rows.assign(stream=listed.rows["agent_id"].map(ui.stream_name))
    html_table.table(
        rows[LIST_COLUMNS + (MORE_COLUMNS if more else [])],
        LIST_SHOWN,
        key="streams",
        links=stream_links(rows),
        link_column="session_id",
    )


def _stream_from_url(con: Any) -> Stream | None:
    """The stream a link names: ``session`` and ``agent`` (absent or ``main`` = the main
    agent; a session without a main stream opens its first subagent)."""
    session_id = url.param("session")
    if not session_id:
        return None
    agent = url.param("agent")
    agent = None if agent in (None, MAIN) else agent
    found = sl.siblings(con, session_id)
    if found.empty:
        st.warning(f"No calls of session `{session_id}` in the store.")
        return None
    agents = [ui.agent_of(a) for a in found["agent_id"]]
    if agent not in agents:
        agent = None if None in agents else agents[0]
    return session_id, agent


def _timeline(con: Any, stream: Stream, model: NormalModel | None) -> None:
    session_id, agent_id = stream
    table = q.stream_calls(con, session_id, agent_id)
    if table.num_rows == 0:
        st.info("This stream has no calls.")
        return
    st.subheader(f"Timeline — {ui.stream_name(agent_id)}")
    c1, c2 = st.columns([2, 3])
    c1.caption("Session id (copy with the button on the right)")
    c1.code(session_id, language=None)
    c2.caption("Link to this stream")
    c2.code(_link(session_id, agent_id), language=None)
    _siblings(con, session_id, agent_id)
    _quirk_note(table)
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
    st.vega_lite_chart(_timeline_spec(view, cue_scores, statistic, threshold), width="stretch")
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
    html_table.table(view[list(dict.fromkeys(shown))], TIMELINE_SHOWN, key="timeline")


def _quirk_note(table: pa.Table) -> None:
    """Say when the stream is a client artefact the importer recognised (a warm-up agent, a
    fork): the dev-real warm-up loop tops the scan's list, and nothing on its timeline said it
    was the client's own behaviour, which the experiment keeps apart."""
    if "client_quirk" not in table.column_names:
        return
    quirks = sorted({q for q in table.column("client_quirk").to_pylist() if q})
    if not quirks:
        return
    kept = [q for q in quirks if q in LEARNING_EXCLUDED_QUIRKS]
    st.info(
        f"Client artefact: `{'`, `'.join(quirks)}` — real client behaviour the importer "
        "recognised, not the user's and not injected"
        + (
            "; kept out of training, calibration and the normal test streams "
            "(`toolwatch experiment --include-client-artefacts` keeps it)."
            if kept
            else "."
        )
    )


def _millis(t: Any) -> str:
    return pd.Timestamp(t).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


#: The timeline's calls as shown (scores with two decimals, by type); ``failed`` says so only
#: for a failed call (a phone's block has no "failed: false" line for every call).
TIMELINE_SHOWN = {
    "index": Col("call"),
    "alert_by": Col("alert"),
    "start_time": Col("start (UTC)", _millis, whole=True),
    "gap_s": Col("gap (s)", "{:.3f}"),
    "response_group": Col("response"),
    "server": Col("MCP server", help="blank: a built-in tool"),
    "input_bytes": Col("input (B)"),
    "output_bytes": Col("output (B)"),
    "failed": Col("failed", lambda failed: "yes" if failed else ""),
}


@st.cache_data(show_spinner=False, max_entries=16)
def _timeline_spec(
    view: pd.DataFrame,
    cue_scores: pd.DataFrame | None,
    statistic: str | None,
    threshold: float | None,
) -> dict[str, Any]:
    """The timeline's Vega-Lite spec, cached by its data: altair needs about a second to build
    and validate this layered chart, and the page reruns on every filter change."""
    return dict(
        charts.timeline_chart(view, cue_scores, statistic, threshold).to_dict(validate=False)
    )


def _link(session_id: str, agent_id: str | None) -> str:
    """The URL of this stream on this page (the app's own address when Streamlit knows it)."""
    query = f"session={session_id}" + (f"&agent={agent_id}" if agent_id else "")
    here = getattr(st.context, "url", None) or "/sessions"
    return f"{str(here).split('?', 1)[0]}?{query}"


def _siblings(con: Any, session_id: str, agent_id: str | None) -> None:
    """The other streams of the same session (its main agent and subagents), by name."""
    found = sl.siblings(con, session_id)
    others = found[[ui.agent_of(a) != agent_id for a in found["agent_id"]]]
    if others.empty:
        return
    parts = [
        f"{ui.stream_name(r.agent_id)} ({ui.counted(r.calls, 'call')})" for r in others.itertuples()
    ]
    st.caption(
        f"This session also has {ui.counted(len(others), 'other stream')}, "
        "each scored on its own: " + ", ".join(parts)
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
