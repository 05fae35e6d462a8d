"""Corpus: the store's corpus facts beside the study's (the numbers of ``toolwatch stats``).

The facts come from :func:`toolwatch.collector.corpus_stats.corpus_stats` (one SQL query over
the ``calls`` view), the labels from ``toolwatch stats``, the study's from
:data:`toolwatch.study.CORPUS`.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st
from toolwatch import study
from toolwatch.app import charts, ui
from toolwatch.app import queries as q
from toolwatch.collector.corpus_stats import STAT_KEYS, corpus_stats, source_counts
from toolwatch.collector.stats_command import LABELS


def fmt(value: float | None, kind: str) -> str:
    """Like ``toolwatch stats``: integers, seconds, shares."""
    if value is None or math.isnan(value):
        return "—"
    if kind == "n":
        return f"{value:,.0f}"
    if kind == "s":
        return f"{value:,.2f} s"
    return f"{100 * value:.1f} %"


def render() -> None:
    s = ui.settings()
    st.title("Corpus")
    with q.open_store(s.store) as con:
        if q.count(con, q.CALLS) == 0:
            ui.explain_empty(q.CALLS, s.store, "calls")
            return
        counts = source_counts(con)
        chosen = st.multiselect("Source", list(counts), default=list(counts), key="c_sources")
        if not chosen:
            st.info("Pick at least one source.")
            return
        stats = corpus_stats(con, chosen)
        per_day = q.calls_per_day(con, chosen)
        tools = q.top_tools(con, chosen)
    st.caption(" · ".join(f"{src}: {n:,} calls" for src, n in counts.items()))
    if "simulated" in chosen:
        st.warning(
            "The selection includes SIMULATED calls (`toolwatch simulate`), shaped like the "
            "study's corpus — not real agent data."
        )
    rows = []
    for key in STAT_KEYS:
        text, kind = LABELS[key]
        published = study.CORPUS.get(key)
        rows.append(
            {
                "fact": text.strip() if not text.startswith("  ") else "  · " + text.strip(),
                "ours": fmt(stats[key], kind),
                "study": fmt(float(published), kind) if published is not None else "—",
            }
        )
    st.table(pd.DataFrame(rows).set_index("fact"))
    st.caption(
        "Gaps are between consecutive calls of one stream (session, agent); a gap is "
        "within-response when both calls carry the same model response id. The study: no gap "
        "between different responses was ≤ 1 s, while half the parallel calls were."
    )
    st.subheader("Calls per day")
    st.altair_chart(charts.calls_per_day_chart(per_day), width="stretch")
    st.subheader("Most-called tools")
    st.dataframe(tools, hide_index=True, width="stretch")


if __name__ == "__main__":
    render()
