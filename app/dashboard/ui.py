"""Shared pieces of the pages: settings, the model, empty states, formatting, tables.

One number format on every page: counts with thousands separators (``8,729``; tables use the
browser's locale, text :func:`count`), shares as percentages with one decimal (``4.3%``),
scores with two decimals. Every table is the responsive HTML table of
:mod:`~toolwatch.app.dashboard.html_table` (a block per row on a phone, its rows sent once,
missing values blank, never the word "None"); no page uses Streamlit's grid or table.
"""

from __future__ import annotations

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


def label(kind: str) -> str:
    return kind_label(kind)


def number(x: Any, fmt: str = "{:,.0f}") -> str:
    """``x`` in ``fmt`` (``–`` for none / NaN), a count by default."""
    return num(x, fmt)


def count(x: Any) -> str:
    """A count as every page writes it: ``8,729``."""
    return number(x, "{:,.0f}")


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
