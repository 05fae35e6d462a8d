"""Corpus: the store's corpus facts beside the study's (the numbers of ``toolwatch stats``).

The facts come from :func:`toolwatch.collector.stats.corpus.corpus_stats` (one SQL query over
the ``calls`` view), the labels and number formats from :mod:`toolwatch.collector.stats.report`
(as ``toolwatch stats``), the study's from :data:`toolwatch.study.CORPUS`. Each source gets its
own column, so a simulated corpus, an import and a collector's live traffic are compared with
the study one by one.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from toolwatch import study
from toolwatch.app.dashboard import empty_range as er
from toolwatch.app.dashboard import html_table, time_charts, ui
from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard import url_state as url
from toolwatch.app.dashboard.html_table import Col
from toolwatch.app.dashboard.time_range import TimeSpan
from toolwatch.collector.stats.corpus import (
    STAT_KEYS,
    corpus_stats,
    injected_sessions,
    source_counts,
)
from toolwatch.collector.stats.report import LABELS, format_stat

#: The sessions fact, saying what it counts: the Sessions page counts the injected ones too.
SESSIONS_FACT = "sessions (distinct session ids, injected ones left out)"

ALL_SELECTED = "all selected"


@st.cache_data(show_spinner="Computing the corpus facts…", max_entries=16)
def _facts(
    root: str,
    key: tuple[str, ...],
    chosen: tuple[str, ...],
    start: datetime | None,
    end: datetime | None,
) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """The facts per source (and all selected), cached per version of the calls files: they
    are the heaviest query of the app (gaps need every stream in time order)."""
    with q.open_store(Path(root), TimeSpan("cached", start, end)) as con:
        columns = {src: corpus_stats(con, [src]) for src in chosen}
        if len(chosen) > 1:
            columns[ALL_SELECTED] = corpus_stats(con, list(chosen))
        return columns, q.session_ids(con, list(chosen))


def render() -> None:
    s = ui.settings()
    span = url.current_span()
    st.title("Corpus")
    with q.open_store(s.store, span) as con:
        if q.count(con, q.CALLS) == 0:
            if span.bounded:
                days = q.data_days(s.store)
                st.info(er.range_note(span, days, "calls", **url.kept_params()))
            else:
                ui.explain_empty(q.CALLS, s.store, "calls")
            return
        counts = source_counts(con)
        wanted = [x for x in (url.param("source") or "").split(",") if x in counts]

        def sync() -> None:
            picked = st.session_state.get("w_csource") or []
            url.set_params(source=None if set(picked) == set(counts) else ",".join(picked))

        chosen = st.multiselect(
            "Source", list(counts), default=wanted or list(counts), key="w_csource", on_change=sync
        )
        if not chosen:
            st.info("Pick at least one source.")
            return
        columns, ids = _facts(
            str(s.store), q.fingerprint(s.store, q.CALLS), tuple(chosen), span.start, span.end
        )
        per_day = q.calls_per_day(con, chosen)
        tools = q.top_tools(con, chosen)
        injected = injected_sessions(con)
    st.caption(
        " · ".join(f"{src}: {ui.counted(n, 'call')}" for src, n in counts.items())
        + f" · {span.label}"
    )
    if injected:
        st.caption(
            f"{ui.counted(injected, 'session')} holding injected (labelled) calls — `experiment "
            "--write-injected` copies, calls the fault proxy labelled — are left out of the "
            "facts (every row, sessions and streams too), as `toolwatch stats` leaves them out; "
            "the Sessions page lists them."
        )
    if "simulated" in chosen:
        st.warning(
            "The selection includes SIMULATED calls (`toolwatch simulate`), shaped like the "
            "study's corpus — not real agent data."
        )
    rows = [
        {
            "fact": SESSIONS_FACT,
            **{name: ui.count(ids.get(name, ids.get(ALL_SELECTED, 0))) for name in columns},
            "study": "—",
        }
    ]
    parent = ""
    for key in STAT_KEYS:
        text, kind = LABELS[key]
        if key == "sessions":
            text = "streams (session × agent: the study's 'sessions')"
        published = study.CORPUS.get(key)
        # a detail ("  median") named with its fact: a phone's block stands alone
        fact = f"{parent} · {text.strip()}" if text.startswith("  ") else text.strip()
        parent = parent if text.startswith("  ") else fact
        row = {"fact": fact}
        row.update({name: format_stat(stats[key], kind) for name, stats in columns.items()})
        row["study"] = format_stat(float(published), kind) if published is not None else "—"
        rows.append(row)
    html_table.table(pd.DataFrame(rows), key="facts", height=None)
    st.caption(
        "One column per source (each counted on its own), then all selected sources together. "
        "The study counted each subagent transcript as a session: its 'sessions' are our "
        "streams (session × agent). "
        "Gaps are between consecutive calls of one stream; a gap is within-response when both "
        "calls carry the same model response id. The study: no gap between different responses "
        "was ≤ 1 s, while half the parallel calls were."
    )
    st.subheader("Calls per day")
    ui.chart(time_charts.calls_per_day_chart(per_day))
    st.subheader("Most-called tools")
    tools = tools.assign(server=tools["server"].fillna("(built-in)"))
    html_table.table(
        tools,
        {
            "server": Col("MCP server", help="(built-in): not an MCP tool"),
            "failure_rate": Col("failure rate", lambda r: ui.pct(r, 1)),
        },
        key="tools",
    )


if __name__ == "__main__":
    render()
