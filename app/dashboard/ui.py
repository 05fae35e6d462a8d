"""Shared pieces of the pages: settings, the model, empty states, formatting, tables.

One number format on every page: counts with thousands separators (``8,729``; tables use the
browser's locale, text :func:`count`), shares as percentages with one decimal (``4.3%``),
scores with two decimals. Tables (:func:`dataframe`) leave missing values blank (never the word
"None"), keep whole ids and never hide columns off the right edge without a scroll bar; on a
phone (:data:`NARROW_PX`) a table turns into blocks (:func:`facts_table`), and a list whose rows
are sent once is the responsive HTML table of :mod:`~toolwatch.app.dashboard.html_table`.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import streamlit as st

from toolwatch.app.dashboard import hints
from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard.settings import MODEL_IN_STORE, AppSettings, load_settings
from toolwatch.detection import ModelError, NormalModel
from toolwatch.injection.experiment.formats import label as kind_label
from toolwatch.injection.experiment.formats import num
from toolwatch.injection.experiment.formats import pct as pct  # a share: 13% for 1/8, as the CLI
from toolwatch.words import counted as counted  # the pages' ui.counted


def settings() -> AppSettings:
    return load_settings()


def fill_hint(table: str, store: Path) -> str:
    return hints.FILL_HINTS[table].replace("STORE", hints.store_arg(store))


def explain_empty(table: str, store: Path, what: str) -> None:
    """A friendly note that part of the store is empty, with the command that fills it."""
    st.info(f"No {what} in the store {store} yet. Fill it with {fill_hint(table, store)}.")


def listing_or_explain(
    con: duckdb.DuckDBPyConnection,
    table: str,
    store: Path,
    what: str,
    fetch: Callable[[duckdb.DuckDBPyConnection], pd.DataFrame],
) -> pd.DataFrame | None:
    """``fetch(con)`` when ``table`` has rows; otherwise explain how to fill it and ``None``."""
    found = fetch(con) if q.has_rows(con, table) else None
    if found is None or found.empty:
        explain_empty(table, store, what)
        return None
    return found


@st.cache_resource(show_spinner=False, max_entries=4)
def _load_model(path: str, mtime_ns: int) -> NormalModel:
    return NormalModel.load(path)


def model(s: AppSettings) -> tuple[NormalModel | None, str]:
    """The model artifact (cached per file version), or ``None`` and why not."""
    if s.model is None:
        return None, (
            f"no model: `toolwatch train --store {hints.store_arg(s.store)}` saves one as "
            f"{s.store / MODEL_IN_STORE}, where the app looks (or start it with `--model FILE`)"
        )
    try:
        mtime = s.model.stat().st_mtime_ns
    except OSError as exc:
        return None, f"cannot read the model file {s.model}: {exc.strerror or exc}"
    try:
        return _load_model(str(s.model), mtime), ""
    except (ModelError, OSError, ValueError) as exc:
        return None, f"the model file {s.model} cannot be used: {exc}"


MAIN_AGENT = "main agent"


def agent_of(value: Any) -> str | None:
    """A frame's ``agent_id`` cell as ``str | None`` (pandas turns NULL into NaN or None)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def stream_name(agent_id: Any) -> str:
    """How a stream is named on every page: the main agent or ``subagent <id>``."""
    agent = agent_of(agent_id)
    return MAIN_AGENT if agent is None else f"subagent {agent}"


def stream_cells(sessions: Any, agents: Any) -> list[str]:
    """Streams as a narrow table's one cell names them: the whole session id, followed by
    `` · subagent <id>`` for a subagent's stream."""
    return [
        sid if (agent := agent_of(a)) is None else f"{sid} · subagent {agent}"
        for sid, a in zip(sessions, agents, strict=True)
    ]


def label(kind: str) -> str:
    return kind_label(kind)


def number(x: Any, fmt: str = "{:,.0f}") -> str:
    """``x`` in ``fmt`` (``–`` for none / NaN), a count by default."""
    return num(x, fmt)


def count(x: Any) -> str:
    """A count as every page writes it: ``8,729``."""
    return number(x, "{:,.0f}")


#: Column formats of :func:`dataframe`: counts localized (``8,729``), scores two decimals.
COUNT_FORMAT = "localized"
SCORE_FORMAT = "%.2f"


def auto_columns(frame: pd.DataFrame) -> dict[str, Any]:
    """Column settings by type: counts with separators, floats with two decimals, times UTC."""
    config: dict[str, Any] = {}
    for name in frame.columns:
        dtype = frame[name].dtype
        if pd.api.types.is_bool_dtype(dtype):
            continue
        if pd.api.types.is_integer_dtype(dtype):
            config[str(name)] = st.column_config.NumberColumn(format=COUNT_FORMAT)
        elif pd.api.types.is_float_dtype(dtype):
            config[str(name)] = st.column_config.NumberColumn(format=SCORE_FORMAT)
        elif pd.api.types.is_datetime64_any_dtype(dtype):
            config[str(name)] = st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss")
    return config


def dataframe(
    frame: pd.DataFrame, column_config: dict[str, Any] | None = None, **kwargs: Any
) -> Any:
    """``st.dataframe`` with the house settings: no index, full width, blank for missing
    values, type-based formats (:func:`auto_columns`) under the page's own ``column_config``."""
    config = auto_columns(frame)
    config.update(column_config or {})
    kwargs.setdefault("hide_index", True)
    kwargs.setdefault("width", "stretch")
    return st.dataframe(frame, column_config=config, placeholder="", **kwargs)


#: Below this width (a 390 px phone) :func:`facts_table` shows its key/value layout; the same
#: breakpoint as the legends under the charts (``charts.bottom_legend``).
NARROW_PX = 600


def _switch_css(key: str) -> str:
    """Which of ``key``'s two layouts (``key_wide``, ``key_narrow``) shows, by the width of its
    container (not the window's: a sidebar takes its share)."""
    return f"""<style>
.st-key-{key} {{ container-type: inline-size; }}
@container (min-width: {NARROW_PX}px) {{
  .st-key-{key} .st-key-{key}_narrow {{ display: none; }}
}}
@container (max-width: {NARROW_PX - 0.02}px) {{
  .st-key-{key} .st-key-{key}_wide {{ display: none; }}
}}
</style>"""


def _facts_css(key: str) -> str:
    """:func:`_switch_css`, and how the phone's blocks look."""
    return (
        _switch_css(key)
        + """<style>
.tw-fact {
  padding: .4rem 0; border-bottom: 1px solid rgba(128, 128, 128, .25); overflow-wrap: anywhere;
}
.tw-fact dl { display: flex; flex-wrap: wrap; gap: .1rem 1.1rem; margin: .15rem 0 0; }
.tw-fact dl > div { display: flex; gap: .4rem; align-items: baseline; }
.tw-fact dt { font-weight: 400; opacity: .65; font-size: .85rem; }
.tw-fact dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums; }
</style>"""
    )


def fact_cards(frame: pd.DataFrame, name: str) -> str:
    """``frame`` as one block per row: its ``name`` cell, then every other column as
    ``column value`` pairs that wrap, so a phone shows every number without scrolling a table
    sideways. A row named ``· x`` (a detail of the row above) is named ``above · x``."""
    blocks, parent = [], ""
    for row in frame.to_dict("records"):
        title = str(row[name]).strip()
        if title.startswith("·"):
            title = f"{parent} {title}"
        else:
            parent = title
        pairs = "".join(
            f"<div><dt>{html.escape(str(col))}</dt><dd>{html.escape(str(value))}</dd></div>"
            for col, value in row.items()
            if col != name
        )
        blocks.append(f'<div class="tw-fact">{html.escape(title)}<dl>{pairs}</dl></div>')
    return "".join(blocks)


def facts_table(
    frame: pd.DataFrame,
    name: str,
    key: str = "facts",
    cards: pd.DataFrame | None = None,
    **kwargs: Any,
) -> None:
    """A table that stays legible on a phone: the :func:`dataframe` in a wide container;
    below :data:`NARROW_PX` its rows as :func:`fact_cards` (of ``cards``, the same rows as
    text, when ``frame`` holds numbers). A phone's table showed only its wide first column, the
    numbers off the table's own horizontal scroll. ``key`` names the containers (one a page)."""
    with st.container(key=key):
        st.html(_facts_css(key))
        with st.container(key=f"{key}_wide"):
            dataframe(frame, **kwargs)
        with st.container(key=f"{key}_narrow"):
            st.html(fact_cards(frame if cards is None else cards, name))


def chart(spec: Any) -> None:
    """Draw an altair chart, full width. The spec is built once without re-validating it
    against the Vega-Lite schema (altair's default, a third of a page's time on the
    Detection page; the charts are fixed code, checked by the tests)."""
    st.vega_lite_chart(spec.to_dict(validate=False), width="stretch")


def flush() -> None:
    """Let Streamlit's server thread send what the page has drawn so far. DuckDB and pandas
    hold the interpreter lock while they work, so without a pause the browser would see the
    page's top only when the whole page is done; a page calls this after its first data, so
    that is what paints first."""
    time.sleep(0.02)
