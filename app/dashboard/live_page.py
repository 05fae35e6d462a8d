"""Live: alerts as a running collector records them, refreshed every few seconds.

``toolwatch collector --model FILE`` scores each call as it is stored and appends an alert row
whenever a session crosses the operating point; this page re-reads the ``alerts`` view on a
timer (a Streamlit fragment, so only this part reruns).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard import time_charts, ui
from toolwatch.app.dashboard import url_state as url

BY = {"alert_time": "when the alert was raised", "call_time": "when the alerted call happened"}


def render() -> None:
    s = ui.settings()
    span = url.current_span()
    st.title("Live alerts")
    auto = st.toggle(f"Auto-refresh every {s.refresh_s:g} s", value=True, key="auto")
    by = url.choice(
        st,
        "Count per hour by",
        list(BY),
        "by",
        format_func=BY.__getitem__,
        widget="radio",
        horizontal=True,
    )

    @st.fragment(run_every=s.refresh_s if auto else None)
    def panel() -> None:
        now = datetime.now(UTC)
        with q.open_store(s.store, span) as con:
            _rule_alerts(con, span.start)
            if not q.has_rows(con, q.ALERTS):
                if span.bounded:
                    st.info(f"No alerts in the time range ({span.label}).")
                    return
                ui.explain_empty(q.ALERTS, s.store, "alerts")
                st.caption(f"Checked at {now:%H:%M:%S} UTC.")
                return
            totals = q.alert_totals(con, now)
            per_hour = q.alerts_per_hour(con, by)
            recent = q.recent_alerts(con, 50)
        m = st.columns(5)
        m[0].metric("Alerts", f"{totals['total']:,}")
        m[1].metric("Last hour", f"{totals['last_hour']:,}")
        m[2].metric("Last 24 h", f"{totals['last_day']:,}")
        m[3].metric("Sessions alerted", f"{totals['sessions']:,}")
        latest = totals["latest"]
        m[4].metric(
            "Latest (UTC)",
            "–" if latest is None else f"{latest:%H:%M:%S}",
            None if latest is None else f"{latest:%Y-%m-%d}",
            delta_color="off",
            delta_arrow="off",
        )
        ui.chart(
            time_charts.alerts_per_hour_chart(
                per_hour, "Alerts per hour", pd.Timestamp(now), subtitle=f"{BY[by]}, UTC"
            ),
        )
        st.subheader("Most recent alerts")
        phone = _phone_rows(recent)
        recent.insert(2, "stream", recent.pop("agent_id").map(ui.stream_name))
        ui.phone_table(
            recent,
            phone,
            "alerts",
            phone_config=PHONE_CONFIG,
            row_height=ui.wrapped_row_px(phone["session"], PHONE_SESSION_PX),
            column_config={
                "session_id": st.column_config.TextColumn("session", width=330),
                "alert_time": st.column_config.DatetimeColumn(
                    "raised (UTC)", format="YYYY-MM-DD HH:mm:ss"
                ),
                "call_time": st.column_config.DatetimeColumn(
                    "call time (UTC)", format="YYYY-MM-DD HH:mm:ss"
                ),
                "score": st.column_config.NumberColumn(format="%.2f"),
                "threshold": st.column_config.NumberColumn(format="%.2f"),
            },
        )
        st.caption(
            f"Checked at {now:%H:%M:%S} UTC, {span.label}. Each alert is one excursion of a "
            "stream above the model's operating point; `cue` is the cue that explains it. "
            "A stream's timeline: Sessions, or the link `/sessions?session=ID`."
        )

    panel()


PHONE_SESSION_PX = 150
#: The latest alerts on a phone: when (the date over the time), the whole session id wrapped
#: (a subagent's stream named after it), the cue and the score, in 390 px.
PHONE_CONFIG = {
    "raised": st.column_config.TextColumn("raised (UTC)", width=84),
    "session": st.column_config.TextColumn("session", width=PHONE_SESSION_PX),
    "cue": st.column_config.TextColumn("cue", width=58),
    "score": st.column_config.NumberColumn("score", format="%.2f", width=56),
}


def _phone_rows(recent: pd.DataFrame) -> pd.DataFrame:
    """The latest alerts for a phone (:data:`PHONE_CONFIG`), in the same order."""
    session = ui.stream_cells(recent["session_id"], recent["agent_id"])
    raised = [f"{pd.Timestamp(t):%Y-%m-%d %H:%M:%S}" for t in recent["alert_time"]]
    return recent.assign(raised=raised, session=session)[list(PHONE_CONFIG)]


def _rule_alerts(con: Any, start: datetime | None) -> None:
    """Alerts of the user's rules (``rule_alerts``, written by the collector), when any."""
    if not q.has_rows(con, q.RULE_ALERTS):
        return
    recent = q.recent_rule_alerts(con, start)
    st.subheader("Rule alerts")
    if recent.empty:
        st.caption("No rule alert in the time range.")
        return
    ui.dataframe(
        recent,
        column_config={
            "alert_time": st.column_config.DatetimeColumn(
                "raised (UTC)", format="YYYY-MM-DD HH:mm:ss"
            ),
            "key": st.column_config.TextColumn("measured", help="the query's other columns"),
            "value": st.column_config.NumberColumn("value", format="%g"),
            "threshold": st.column_config.NumberColumn("threshold", format="%g"),
            "window_s": st.column_config.NumberColumn("window (s)", format="%g"),
        },
    )
    st.caption(
        "Rules are SQL over the calls of a recent window with a threshold (STORE/rules.toml, "
        "`toolwatch rules check`), evaluated by the collector on their schedule."
    )


if __name__ == "__main__":
    render()
