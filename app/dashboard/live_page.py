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

from toolwatch.app.dashboard import html_table, time_charts, ui
from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard import url_state as url
from toolwatch.app.dashboard.html_table import Col

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
        recent.insert(2, "stream", recent.pop("agent_id").map(ui.stream_name))
        html_table.table(recent, RECENT_COLUMNS, key="alerts")
        st.caption(
            f"Checked at {now:%H:%M:%S} UTC, {span.label}. Each alert is one excursion of a "
            "stream above the model's operating point; `cue` is the cue that explains it. "
            "A stream's timeline: Sessions, or the link `/sessions?session=ID`."
        )

    panel()


TIME = "%Y-%m-%d %H:%M:%S"
#: The latest alerts: the whole session id kept on one line on a desktop (a phone wraps it).
RECENT_COLUMNS = {
    "session_id": Col("session", whole=True),
    "alert_time": Col("raised (UTC)", TIME),
    "call_time": Col("call time (UTC)", TIME),
}
#: A rule's numbers as the rule wrote them (``%g``: 3, 0.25, 1e+06).
RULE_COLUMNS = {
    "alert_time": Col("raised (UTC)", TIME),
    "key": Col("measured", help="the query's other columns"),
    "value": Col("value", "{:g}"),
    "threshold": Col("threshold", "{:g}"),
    "window_s": Col("window (s)", "{:g}"),
}


def _rule_alerts(con: Any, start: datetime | None) -> None:
    """Alerts of the user's rules (``rule_alerts``, written by the collector), when any."""
    if not q.has_rows(con, q.RULE_ALERTS):
        return
    recent = q.recent_rule_alerts(con, start)
    st.subheader("Rule alerts")
    if recent.empty:
        st.caption("No rule alert in the time range.")
        return
    html_table.table(recent, RULE_COLUMNS, key="rule_alerts")
    st.caption(
        "Rules are SQL over the calls of a recent window with a threshold (STORE/rules.toml, "
        "`toolwatch rules check`), evaluated by the collector on their schedule."
    )


if __name__ == "__main__":
    render()
