"""The Detection page's latency section: calls from the insertion point to the first alarm,
per kind, beside the study's medians (moved out of detection_page.py, which stays under 600
lines)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from toolwatch import study
from toolwatch.app.dashboard import charts, html_table, ui
from toolwatch.app.dashboard import detection_view as dv
from toolwatch.app.dashboard.html_table import Col


def show(lat: pd.DataFrame, statistic: str, note: str) -> None:
    """``lat``: one row per detected run (``kind``, ``latency``) of the ``statistic`` shown;
    ``note``: why these latencies are not at the threshold shown, if they are not."""
    st.subheader(f"Latency — {statistic}")
    if note:
        st.caption(note)
    if lat.empty:
        st.info("No detected runs at this threshold.")
        return
    lat = lat.assign(label=lat["kind"].map(ui.label))
    study_points = pd.DataFrame(
        [
            {"label": ui.label(k), "latency": calls}
            for k, (calls, cue, det) in study.LATENCY.items()
            if k in set(lat["kind"])
        ],
        columns=["label", "latency"],
    )
    kinds = dv.kind_order(list(lat["kind"].unique()))
    ui.chart(charts.latency_chart(lat, study_points, [ui.label(k) for k in kinds]))
    summary = (
        lat.groupby("kind")["latency"]
        .agg(
            detected_runs="count",
            median="median",
            p90=lambda x: x.quantile(0.9),
            max="max",
        )
        .reindex(kinds)
    )
    summary.index = pd.Index([ui.label(k) for k in kinds], name="kind")
    summary["study: median"] = [dv.study_latency(k) or "–" for k in kinds]
    html_table.table(  # on a phone a block per kind: the grid showed two of its columns
        summary.reset_index(),
        {
            "detected_runs": Col("detected runs"),
            "median": Col("median (calls)", "{:g}"),
            "p90": Col("90th percentile", "{:.1f}"),
            "max": Col("max", "{:.0f}"),
        },
        key="latencies",
    )
    st.caption(
        "Calls from the insertion point to the first alarm, over the detected runs (1 = the "
        "inserted call itself). Per kind: the grey whisker spans the fastest to the slowest "
        "detection, the blue box the middle half of the runs (25th to 75th percentile), the "
        "black tick the median; the vermillion tick is the study's median, for the cue and "
        "detector named in the table."
    )
