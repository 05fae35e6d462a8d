"""One table for every window: an HTML table whose rows turn into blocks on a phone.

Streamlit's grid (``st.dataframe``) draws on a canvas at its columns' own width: on a 390 px
phone its columns ran past their box with no scroll bar in sight, and since the server cannot
know the window's width, the earlier fix sent every table twice (a desktop grid and a phone
layout, CSS hiding one). This table is sent once. Each cell carries its column's name
(``data-label``); at most :data:`PHONE_PX` wide (a CSS ``@media`` rule) a row is a block of
``name value`` lines, an empty cell none; wider, it is a plain table whose cells wrap, in a box
that scrolls with the browser's own scroll bars when the table is taller than ``height`` or
wider than the page (on a phone the page itself scrolls: no box in a box).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

#: At most this window width (px) a table's rows are blocks (a phone, also turned sideways).
PHONE_PX = 640
#: The tallest a table's box grows (px) before its rows scroll inside it.
HEIGHT_PX = 440
#: The sticky header's grey tint, over the page's own background (see ``_CSS``).
HEADER_TINT = "rgba(128, 128, 128, .12)"


@dataclass(frozen=True)
class Col:
    """How one column is shown: its header (``label``), its cells' format (a ``str.format``
    pattern, a ``strftime`` pattern for times, or a function), a tooltip for its header,
    ``whole`` to keep a cell on one line on a desktop (ids, times), and ``wrap`` to let a cell
    break inside a long word too (a tool id with no space), so that many such columns side by
    side fit their box instead of running past it."""

    label: str | None = None
    fmt: str | Callable[[Any], str] | None = None
    help: str | None = None
    whole: bool = False
    wrap: bool = False


def _missing(value: Any) -> bool:
    if value is None or value is pd.NaT:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        return bool(pd.isna(value)) if not isinstance(value, (list, tuple, dict)) else False
    except (TypeError, ValueError):
        return False


def _default_format(dtype: Any) -> str | Callable[[Any], str]:
    """The house formats: counts with separators, scores with two decimals, times UTC."""
    if pd.api.types.is_bool_dtype(dtype):
        return lambda v: "true" if v else "false"
    if pd.api.types.is_integer_dtype(dtype):
        return "{:,.0f}"
    if pd.api.types.is_float_dtype(dtype):
        return "{:.2f}"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "%Y-%m-%d %H:%M:%S"
    return str


def cell_text(value: Any, fmt: str | Callable[[Any], str]) -> str:
    """``value`` as its cell shows it: blank when missing (never "None" or "nan")."""
    if _missing(value):
        return ""
    if callable(fmt):
        return fmt(value)
    if "%" in fmt and "{" not in fmt:
        return pd.Timestamp(value).strftime(fmt)
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return str(value)


def _breakable(label: str) -> str:
    """A header that may wrap after ``+`` too (``retry+schema+scan``: a line break there, not
    a column as wide as the whole name)."""
    return re.sub(r"(?<=\w)\+(?=\w)", "+<wbr>", label)


#: The words that may follow a figure and leave it a figure: units (``12.50 s``, ``3 ms``,
#: ``4 MB``; a one-letter word is always one) and ``of`` before a number (``3 of 11``).
UNIT_WORD = r"(?:(?:ms|µs|us|min|[kKMGT]i?B)\b|of\s+\d)"
#: A cell written as a figure: a number (``8,729``, ``-0.25``), a share or a count of a whole
#: (``4.3 %``, ``75%``, ``3/4``), maybe with more after a space (``12.50 s``, ``100% +1``,
#: ``75% 3/4 (n.e. 1)``, ``1 (time·point)``); not a date, a time or a version (``2025-01-06``,
#: ``03:04``, ``1.2.3``), nor a count named by a noun (``5 tools``, ``12 calls``): text, whose
#: words would be right-aligned out of line with the column's header.
FIGURE = re.compile(
    r"[-+−]?\d[\d,]*(?:\.\d+)?(?:%|×|/\d[\d,]*)?"
    rf"(?:\s(?!\s*(?!{UNIT_WORD})[^\W\d_]{{2,}}).*)?",
    re.DOTALL,
)
#: What a table writes for a missing figure.
NO_FIGURE = frozenset({"", "—", "–", "-"})


def _numeric(dtype: Any, texts: Sequence[str]) -> bool:
    """A column of numbers, or of figures the page wrote as text (the Corpus facts, a split's
    counts): right-aligned on a desktop, so that their digits line up."""
    if pd.api.types.is_bool_dtype(dtype):
        return False
    if pd.api.types.is_numeric_dtype(dtype):
        return True
    shown = [s for s in texts if s not in NO_FIGURE]
    return bool(shown) and all(FIGURE.fullmatch(s) for s in shown)


def table_html(
    frame: pd.DataFrame,
    columns: dict[str, Col] | None = None,
    *,
    key: str,
    links: Sequence[str | None] | None = None,
    link_column: str | None = None,
    height: int | None = HEIGHT_PX,
) -> str:
    """``frame`` as the responsive table (see the module): ``columns`` name and format its
    columns (the rest by type); ``links`` (one a row) make ``link_column``'s cells links. The
    ``th`` carry the frame's own column names (``data-col``), for tests that read it back.
    ``height=None``: no box height, every row in the page (a short table read whole)."""
    columns = columns or {}
    names = [str(c) for c in frame.columns]
    specs = [columns.get(n, Col()) for n in names]
    formats = [spec.fmt or _default_format(frame.dtypes.iloc[i]) for i, spec in enumerate(specs)]
    texts = [[cell_text(v, formats[i]) for v in frame.iloc[:, i]] for i in range(len(names))]
    numeric = [_numeric(frame.dtypes.iloc[i], texts[i]) for i in range(len(names))]
    whole = [
        spec.whole or pd.api.types.is_datetime64_any_dtype(frame.dtypes.iloc[i])
        for i, spec in enumerate(specs)
    ]
    labels = [html.escape(spec.label or n) for n, spec in zip(names, specs, strict=True)]
    key = re.sub(r"[^A-Za-z0-9_-]", "_", key)

    def classes(i: int) -> str:
        found = [c for c, on in (("n", numeric[i]), ("w", whole[i]), ("a", specs[i].wrap)) if on]
        return f' class="{" ".join(found)}"' if found else ""

    head = "".join(
        f'<th data-col="{html.escape(n)}"{classes(i)}'
        + (f' title="{html.escape(specs[i].help or "")}"' if specs[i].help else "")
        + f">{_breakable(labels[i])}</th>"
        for i, n in enumerate(names)
    )
    body = []
    linked = names.index(link_column) if link_column in names else -1
    for r in range(len(frame)):
        cells = []
        for i in range(len(names)):
            text = html.escape(texts[i][r])
            href = links[r] if links is not None and i == linked else None
            if text and href:
                text = f'<a href="{html.escape(href)}" target="_self">{text}</a>'
            label = f' data-label="{labels[i]}"' if text else ""
            cells.append(f"<td{label}{classes(i)}>{text}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    style = f' style="max-height: {int(height)}px"' if height is not None else ""
    return (
        f'{_CSS}<div class="tw-table tw-table-{key}"{style}>'
        f"<table><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def table(
    frame: pd.DataFrame,
    columns: dict[str, Col] | None = None,
    *,
    key: str,
    links: Sequence[str | None] | None = None,
    link_column: str | None = None,
    height: int | None = HEIGHT_PX,
) -> None:
    """Draw :func:`table_html` (``key`` names it: ``.tw-table-KEY``)."""
    st.html(
        table_html(frame, columns, key=key, links=links, link_column=link_column, height=height)
    )


_CSS = f"""<style>
.tw-table {{
  overflow: auto; border: 1px solid rgba(128, 128, 128, .25); border-radius: .5rem;
  font-size: .875rem; margin-bottom: .5rem;
}}
.tw-table table {{
  width: 100%; border-collapse: separate; border-spacing: 0; margin: 0;
  font-variant-numeric: tabular-nums;
}}
.tw-table th, .tw-table td {{
  padding: .3rem .55rem; border: 0; border-bottom: 1px solid rgba(128, 128, 128, .15);
  text-align: left; vertical-align: top; overflow-wrap: normal;
}}
/* The sticky header is opaque (rows scrolling under it do not show through) in any theme:
   the page's background is inherited down to it by the elements that hold a table, which have
   none of their own, under a grey tint. */
[data-testid="stApp"] :has(.tw-table), .tw-table, .tw-table table, .tw-table thead,
.tw-table thead tr {{ background-color: inherit; }}
.tw-table th {{
  position: sticky; top: 0; z-index: 1; font-weight: 400;
  background-color: inherit; background-image: linear-gradient({HEADER_TINT}, {HEADER_TINT});
}}
.tw-table .n {{ text-align: right; }}
.tw-table .w {{ white-space: nowrap; }}
.tw-table .a {{ overflow-wrap: anywhere; }}
.tw-table tbody tr:hover {{ background: rgba(128, 128, 128, .08); }}
@media (max-width: {PHONE_PX}px) {{
  .tw-table {{ overflow-x: hidden; max-height: none !important; border: 0; border-radius: 0; }}
  .tw-table table, .tw-table tbody, .tw-table tr, .tw-table td {{ display: block; }}
  .tw-table thead {{ display: none; }}
  .tw-table tr {{ padding: .35rem 0; border-bottom: 1px solid rgba(128, 128, 128, .25); }}
  .tw-table td {{
    display: flex; gap: .6rem; padding: .05rem 0; border: 0; text-align: left;
    white-space: normal; overflow-wrap: anywhere; min-width: 0;
  }}
  .tw-table td.n, .tw-table td.w {{ text-align: left; white-space: normal; }}
  .tw-table td::before {{
    content: attr(data-label); flex: 0 0 38%; opacity: .65; font-size: .85em;
  }}
  .tw-table td:first-child {{ font-weight: 600; }}
  .tw-table td:empty {{ display: none; }}
}}
</style>"""
