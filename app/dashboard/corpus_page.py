"""Corpus: the store's corpus facts beside the study's (the numbers of ``toolwatch stats``).

The facts come from :func:`toolwatch.collector.stats.corpus.corpus_stats` (one SQL query over
the ``calls`` view), the labels and number formats from :mod:`toolwatch.collector.stats.report`
(as ``toolwatch stats``), the study's from :data:`toolwatch.study.CORPUS`. Each source gets its
own column, so a simulated corpus, an import and a collector's live traffic are compared with
the study one by one.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from toolwatch import study
from toolwatch.app.dashboard import charts, ui
from toolwatch.app.dashboard import queries as q
from toolwatch.collector.stats.corpus import STAT_KEYS, corpus_stats, source_counts
from toolwatch.collector.stats.report import LABELS, format_stat

ALL_SELECTED = "all selected"


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
        columns = {src: corpus_stats(con, [src]) for src in chosen}
        if len(chosen) > 1:
            columns[ALL_SELECTED] = corpus_stats(con, chosen)
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
        row = {"fact": text.strip() if not text.startswith("  ") else "  · " + text.strip()}
        row.update({name: format_stat(stats[key], kind) for name, stats in columns.items()})
        row["study"] = format_stat(float(published), kind) if published is not None else "—"
        rows.append(row)
    st.table(pd.DataFrame(rows).set_index("fact"))
    st.caption(
        "One column per source (each counted on its own), then all selected sources together. "
        "Sessions are streams (session, agent), as the study counted subagent transcripts. "
        "Gaps are between consecutive calls of one stream; a gap is within-response when both "
        "calls carry the same model response id. The study: no gap between different responses "
        "was ≤ 1 s, while half the parallel calls were."
    )
    st.subheader("Calls per day")
    st.altair_chart(charts.calls_per_day_chart(per_day), width="stretch")
    st.subheader("Most-called tools")
    st.dataframe(
        tools,
        hide_index=True,
        width="stretch",
        column_config={
            "server": st.column_config.TextColumn("MCP server", help="empty: a built-in tool"),
            "failure_rate": st.column_config.NumberColumn("failure rate", format="percent"),
        },
    )


if __name__ == "__main__":
    render()
