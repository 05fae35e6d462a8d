"""Explore: SQL over the store's views in the app (read-only, bounded), beside the views and
their columns, with a results table (:mod:`~toolwatch.app.dashboard.html_table`, a page of
rows at a time), a quick chart, a CSV download and saved questions.

The query is in the URL (``?sql=…&limit=…``), so a link opens the same result; the sidebar's
time range narrows ``calls`` and ``alerts`` (and the ``sessions``/``streams`` built on them)
unless "whole store" is ticked. An empty result that the store's calls would answer (the range,
or the query's "this week", holds none of them) says so with a link that does
(:mod:`toolwatch.app.dashboard.empty_range`). Running, the lock-down and the row limit are
:mod:`toolwatch.app.dashboard.explore`'s.
"""

from __future__ import annotations

from typing import Any, Literal

import altair as alt
import pandas as pd
import streamlit as st

from toolwatch.app.dashboard import charts, html_table, ui
from toolwatch.app.dashboard import empty_range as er
from toolwatch.app.dashboard import explore as ex
from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard import url_state as url

LIMITS = ["100", "1000", "10000", "100000"]
DEFAULT_SQL = ex.SAVED[0].sql


def render() -> None:
    s = ui.settings()
    span = url.current_span()
    st.title("Explore")
    st.caption(
        "SQL over the store's views (DuckDB dialect), read-only: SELECT, WITH, DESCRIBE, "
        "SUMMARIZE and EXPLAIN run; nothing can be written. Times are UTC."
    )
    editor, side = st.columns([3, 1])
    with side:
        _saved_queries()
        _views(s.store)
    with editor:
        sql = url.text(
            st, "Query", "sql", default=DEFAULT_SQL, height=220, help="Ctrl+Enter runs it"
        )
        c1, c2, c3 = st.columns([1, 1, 2])
        limit = int(
            url.choice(
                c1,
                "Row limit",
                LIMITS,
                "limit",
                default=str(ex.DEFAULT_LIMIT),
                format_func=lambda v: ui.counted(v, "row"),
            )
        )
        whole = c2.checkbox(
            "whole store",
            key="w_whole",
            help="ignore the sidebar's time range (it narrows calls and alerts)",
        )
        c3.caption(
            f"Time range: {'whole store' if whole or not span.bounded else span.label} "
            "(sidebar) · views: calls, sessions, streams, alerts, …"
        )
        scope = None if whole else span
        result = ex.run_query(s.store, sql, span=scope, limit=limit)
    if not result.ok:
        st.error(result.error)
        return
    if result.frame.empty:
        days = q.data_days(s.store)
        if note := er.explore_note(s.store, sql, scope, days, url.kept_params()):
            st.info(note)
    _result(result, limit)


def _saved_queries() -> None:
    st.markdown("**Saved questions**")
    for saved in ex.SAVED:
        if st.button(saved.title, key=f"saved_{saved.key}"):
            st.session_state["w_sql"] = saved.sql
            url.set_params(sql=None if saved.sql == DEFAULT_SQL else saved.sql)
            st.rerun()


def _views(root: Any) -> None:
    st.markdown("**Views and columns**")
    columns = ex.schema(root)
    views = list(dict.fromkeys(columns["view"]))
    view = st.selectbox("View", views, index=views.index("calls") if "calls" in views else 0)
    part = columns[columns["view"] == view]
    shown = part[["column", "type"]].assign(type=part["type"].str.lower())
    html_table.table(shown, {"column": html_table.Col(wrap=True)}, key="views")


def _result(result: ex.QueryResult, limit: int) -> None:
    frame = result.frame
    note = ui.counted(len(frame), "row")
    if result.size_capped:
        note = (
            f"the first {ui.counted(len(frame), 'row')} (the {ex.MAX_BYTES / 1e6:,.0f} MB the "
            "page shows at most; the query returns more: select fewer or shorter columns)"
        )
    elif result.truncated:
        note = f"the first {ui.counted(limit, 'row')} (the row limit; the query returns more)"
    st.caption(" · ".join([note, *result.notes, f"{result.seconds:.2f} s"]))
    table, chart = st.tabs(["Table", "Chart"])
    with table:
        _rows(frame)
        st.download_button(
            "Download CSV",
            ex.csv_bytes(result),
            file_name="toolwatch-query.csv",
            mime="text/csv",
            key="csv",
        )
    with chart:
        _chart(frame)


#: The result's rows on the page at a time: a table of 100,000 rows in the browser's DOM is
#: slow to draw; the rest are a page away (and all in the CSV).
PAGE_ROWS = 1_000


def pages(total: int, size: int = PAGE_ROWS) -> list[tuple[int, int]]:
    """The (first, end) row slices of a result of ``total`` rows, ``size`` at a time."""
    return [(i, min(i + size, total)) for i in range(0, max(total, 1), size)]


def _rows(frame: pd.DataFrame) -> None:
    """The result as the responsive table, a page of :data:`PAGE_ROWS` at a time; whole
    numbers as the query returned them (a year or an id is no count: 2024, not 2,024)."""
    slices = pages(len(frame))
    first, end = slices[0]
    if len(slices) > 1:
        first, end = st.selectbox(
            "Rows",
            slices,
            format_func=lambda s: f"{s[0] + 1:,}–{s[1]:,} of {len(frame):,}",
            key="result_page",
            help="a page at a time; Download CSV holds every row",
        )
    plain = {
        str(c): html_table.Col(fmt="{}")
        for c, dtype in frame.dtypes.items()
        if pd.api.types.is_integer_dtype(dtype)
    }
    html_table.table(frame.iloc[first:end], plain, key="result", height=560)


def _chart(frame: pd.DataFrame) -> None:
    shape = ex.chart_columns(frame)
    if shape is None:
        st.info("A chart needs a label or time column and at least one numeric column.")
        return
    x, numbers = shape
    c1, c2 = st.columns([1, 2])
    y = c1.selectbox("Value", numbers, key="chart_y")
    slashed = [c for c in (x, y) if "\\" in c]
    if slashed:  # with one in an axis title the browser's Vega-Lite draws nothing at all
        st.info(f"A column named with a backslash cannot be charted: rename {slashed[0]!r} (AS).")
        return
    temporal = pd.api.types.is_datetime64_any_dtype(frame[x])
    # the chart's own field names, the result's only as titles: a column may be called
    # anything ("calls: all" reads as a type in altair's shorthand, "a.b" as a nested field)
    shown = pd.DataFrame({"x": frame[x].head(200), "y": frame[y].head(200), "what": y})
    x_type: Literal["temporal", "nominal"] = "temporal" if temporal else "nominal"
    encoding_x: Any = (
        alt.X("x", type=x_type, title=f"{x} (UTC)")
        if temporal
        else alt.X("x", type=x_type, title=x, sort="-y", axis=alt.Axis(labelLimit=240))
    )
    mark = alt.Chart(shown).mark_line(point=True) if temporal else alt.Chart(shown).mark_bar()
    c2.caption(
        f"{y} by {x}" + (" (first 200 rows)" if len(frame) > 200 else "") + " — the legend "
        "names the value drawn; change it on the left."
    )
    spec = mark.encode(
        x=encoding_x,
        y=alt.Y("y", type="quantitative", title=y),
        color=alt.Color(
            "what",
            type="nominal",
            title=None,
            scale=alt.Scale(range=[charts.OURS]),
            legend=charts.bottom_legend(),
        ),
        tooltip=[
            alt.Tooltip("x", type=x_type, title=x),
            alt.Tooltip("y", type="quantitative", format=",", title=y),
        ],
    ).properties(height=320)
    ui.chart(spec)


if __name__ == "__main__":
    render()
