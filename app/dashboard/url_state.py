"""Page state in the URL: every choice that changes what a page shows is a query parameter, so
a link (to one session, an experiment run, an Explore query, a time range) can be pasted into
an incident ticket and opens the same view.

Widgets are drawn with :func:`choice` / :func:`text`: their value comes from the URL when the
parameter is there (and valid), and changing the widget writes it back (a default value leaves
the URL clean). The global time range (:func:`time_range`, in the sidebar) is carried from page
to page in the session as well, since a page switch starts from a bare URL.

Parameters: ``range``/``from``/``to`` (every page); ``run``, ``variant``, ``cue_set``,
``detector``, ``mode`` (Detection); ``replay`` (Replay); ``session``, ``agent`` (Sessions:
``agent`` absent = the main agent), ``source``, ``flag``, ``agents``, ``find``, ``injected``,
``more`` (:func:`flag`: ``1`` or absent); ``by`` (Live); ``suite``,
``scenario`` (Workbench); ``sql``, ``limit`` (Explore).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from typing import Any, Final

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from toolwatch.app.dashboard.time_range import DEFAULT, RANGES, TimeSpan, parse_day, resolve

_SPAN_KEYS: Final = ("range", "from", "to")


def param(key: str) -> str | None:
    value = st.query_params.get(key)
    return str(value) if value not in (None, "") else None


def set_params(**values: Any) -> None:
    """Write (or, for ``None``, remove) query parameters."""
    for key, value in values.items():
        if value is None or value == "":
            if key in st.query_params:
                del st.query_params[key]
        else:
            st.query_params[key] = str(value)


def kept_params() -> dict[str, str]:
    """The page's parameters other than the time range's: a link to another range keeps them."""
    return {k: str(v) for k, v in st.query_params.to_dict().items() if k not in _SPAN_KEYS}


def choice(
    where: DeltaGenerator | Any,
    label: str,
    options: Sequence[str],
    key: str,
    *,
    default: str | None = None,
    format_func: Callable[[str], str] = str,
    widget: str = "selectbox",
    **kwargs: Any,
) -> str:
    """A selectbox or radio (``widget``) whose value lives in the URL parameter ``key``."""
    options = list(options)
    if not options:
        return ""
    fallback = default if default in options else options[0]
    wanted = param(key)
    index = options.index(wanted) if wanted in options else options.index(fallback)
    state = f"w_{key}"
    if state in st.session_state and st.session_state[state] not in options:
        del st.session_state[state]

    def sync() -> None:
        value = st.session_state.get(state)
        set_params(**{key: None if value == fallback else value})

    draw = where.radio if widget == "radio" else where.selectbox
    picked = draw(
        label, options, index=index, format_func=format_func, key=state, on_change=sync, **kwargs
    )
    value = str(picked) if picked is not None else fallback
    if wanted is not None and wanted not in options:
        set_params(**{key: None})  # an invalid value in a pasted link is dropped
    return value


def flag(
    where: DeltaGenerator | Any, label: str, key: str, *, widget: str = "checkbox", **kwargs: Any
) -> bool:
    """A checkbox or toggle (``widget``) whose value lives in the URL parameter ``key``
    (``1`` when on, absent when off): a link that reloads the page (a session id in the
    Sessions list) keeps it, where the widget alone started afresh, off."""
    state = f"w_{key}"

    def sync() -> None:
        set_params(**{key: "1" if st.session_state.get(state) else None})

    draw = where.toggle if widget == "toggle" else where.checkbox
    on = param(key) == "1"
    if param(key) is not None and not on:
        set_params(**{key: None})  # an invalid value in a pasted link is dropped
    return bool(draw(label, value=on, key=state, on_change=sync, **kwargs))


def text(
    where: DeltaGenerator | Any, label: str, key: str, default: str = "", **kwargs: Any
) -> str:
    """A text area whose value lives in the URL parameter ``key`` (e.g. an Explore query)."""
    state = f"w_{key}"
    if state not in st.session_state:
        st.session_state[state] = param(key) or default

    def sync() -> None:
        value = st.session_state.get(state, "")
        set_params(**{key: None if value == default else value})

    return str(where.text_area(label, key=state, on_change=sync, **kwargs))


def time_range(data_days: tuple[date, date] | None = None) -> TimeSpan:
    """The sidebar's global time range (see the module docstring); ``data_days``: the store's
    first and last day, offered as the custom range's bounds."""
    carried = st.session_state.setdefault("_span", {})
    if param("range") is None and carried.get("range"):  # a page switch dropped the URL
        set_params(**carried)
    keys = list(RANGES)
    span_key = choice(
        st.sidebar,
        "Time range",
        keys,
        "range",
        default=DEFAULT,
        format_func=lambda k: RANGES[k][0],
        help="applies to calls and alerts on every page (Sessions, Live, Corpus, Explore); "
        "relative ranges end now",
    )
    first, last = param("from"), param("to")
    if span_key == "custom":
        lo = parse_day(first) or (data_days[0] if data_days else date.today())
        hi = parse_day(last) or (data_days[1] if data_days else date.today())

        def sync_days() -> None:
            picked = st.session_state.get("w_days")
            if isinstance(picked, (tuple, list)) and len(picked) == 2:
                set_params(**{"from": picked[0].isoformat(), "to": picked[1].isoformat()})

        st.sidebar.date_input("Days (UTC)", value=(lo, hi), key="w_days", on_change=sync_days)
        first, last = lo.isoformat(), hi.isoformat()
        set_params(**{"from": first, "to": last})
    else:
        set_params(**{"from": None, "to": None})
    span = resolve(span_key, first, last)
    carried.clear()
    carried.update({k: param(k) for k in _SPAN_KEYS if param(k)})
    return span


def current_span() -> TimeSpan:
    """The span chosen in this run's sidebar (all time before the sidebar has run)."""
    span = st.session_state.get("_span_now")
    return span if isinstance(span, TimeSpan) else TimeSpan(DEFAULT)


def remember_span(span: TimeSpan) -> None:
    st.session_state["_span_now"] = span
