"""The responsive HTML table (``app/dashboard/html_table.py``): one table, its rows once."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from toolwatch.app.dashboard import explore_page
from toolwatch.app.dashboard.html_table import PHONE_PX, Col, table_html


def _cells(text: str) -> list[list[tuple[str | None, str]]]:
    """Each body row's cells as (data-label or None, inner HTML)."""
    body = text.split("<tbody>", 1)[1]
    return [
        [
            (label or None, inner)
            for label, inner in re.findall(r"<td(?: data-label=\"([^\"]*)\")?[^>]*>(.*?)</td>", tr)
        ]
        for tr in re.findall(r"<tr>(.*?)</tr>", body)
    ]


def test_each_row_is_sent_once_with_its_column_names_and_no_empty_pairs() -> None:
    """The phone layout comes from CSS over the one table (a row a block, each cell after its
    ``data-label``); an empty cell has no label, so a phone shows no "name" without a value,
    and missing values are blank, never "None" or "nan"."""
    frame = pd.DataFrame(
        {
            "session_id": ["s-1", "s-<2>"],
            "calls": pd.array([8729, None], dtype="Int64"),
            "score": [0.456, np.nan],
            "when": pd.to_datetime(["2025-01-02 03:04:05", None]),
            "note": ["a & b", None],
        }
    )
    text = table_html(frame, {"session_id": Col("session", whole=True)}, key="k")
    rows = _cells(text)
    assert rows == [
        [
            ("session", "s-1"),
            ("calls", "8,729"),
            ("score", "0.46"),
            ("when", "2025-01-02 03:04:05"),
            ("note", "a &amp; b"),
        ],
        [("session", "s-&lt;2&gt;"), (None, ""), (None, ""), (None, ""), (None, "")],
    ]
    assert text.count("<tbody>") == 1 and 'class="tw-table tw-table-k"' in text
    assert re.findall(r'<th data-col="([^"]*)"', text) == list(frame.columns)
    assert f"@media (max-width: {PHONE_PX}px)" in text and "td:empty" in text
    assert "None" not in text and "nan" not in text


def test_a_link_column_and_own_formats() -> None:
    frame = pd.DataFrame({"id": ["a b", "c"], "v": [3.0, 0.25], "ok": [True, False]})
    text = table_html(
        frame,
        {"v": Col("value", "{:g}", help="as written"), "ok": Col(fmt=lambda v: "yes" if v else "")},
        key="x",
        links=["?session=a+b", None],
        link_column="id",
    )
    rows = _cells(text)
    assert rows[0] == [
        ("id", '<a href="?session=a+b" target="_self">a b</a>'),
        ("value", "3"),
        ("ok", "yes"),
    ]
    assert rows[1] == [("id", "c"), ("value", "0.25"), (None, "")]
    assert '<th data-col="v" class="n" title="as written">value</th>' in text


def test_a_header_wraps_after_a_join_of_names() -> None:
    """A mitigation set named in full ("retry+schema+scan") made its column as wide as the
    whole name; the header may now break after each ``+`` between names (not in "(+x)")."""
    frame = pd.DataFrame({"retry+schema+scan": ["1"], "all (+verify)": ["2"]})
    text = table_html(frame, key="impact")
    assert ">retry+<wbr>schema+<wbr>scan</th>" in text and ">all (+verify)</th>" in text
    assert 'data-label="retry+schema+scan"' in text  # a phone's label, as named


def test_explore_pages_a_long_result() -> None:
    """A result of 100,000 rows drawn as one HTML table is slow in a browser: Explore shows
    a page of 1,000 at a time (every row a page away, all in the CSV)."""
    assert explore_page.pages(0) == [(0, 0)]
    assert explore_page.pages(1_000) == [(0, 1_000)]
    assert explore_page.pages(2_500) == [(0, 1_000), (1_000, 2_000), (2_000, 2_500)]


def test_a_short_table_can_have_no_box_height() -> None:
    """The Corpus facts are read whole: ``height=None`` draws no box height (the default box
    scrolls past 440 px), and a ``wrap`` column's cells may break inside a word."""
    frame = pd.DataFrame({"fact": ["calls"], "otlp": ["8,729"]})
    assert 'style="max-height: 440px"' in table_html(frame, key="f")
    text = table_html(frame, {"otlp": Col(wrap=True)}, key="f", height=None)
    assert "max-height: 440px" not in text and '<div class="tw-table tw-table-f">' in text
    assert '<td data-label="otlp" class="n a">8,729</td>' in text  # a figure, right-aligned
    assert ".tw-table .a { overflow-wrap: anywhere; }" in text


def test_figures_written_as_text_are_right_aligned() -> None:
    """The Corpus facts and the split tables write their figures as text (``8,729``,
    ``4.3 %``, ``12.50 s``, ``–``), which left them left-aligned, their digits out of line;
    a column whose every cell is such a figure (or a dash for none) is a number column now,
    while dates, times, versions and names stay left."""
    frame = pd.DataFrame(
        {
            "fact": ["calls", "gaps · median"],
            "otlp": ["8,729", "12.50 s"],
            "study": ["4.3 %", "—"],
            "matrix": ["75% 3/4 (n.e. 1)", "100% +1"],
            "week": ["2025-01-06", "2025-01-13 thin"],
            "time": ["03:04:05", "12:00:00"],
            "version": ["1.2.3", "1.2"],
            "none": ["—", ""],
        }
    )
    text = table_html(frame, key="facts")
    aligned = dict(re.findall(r'<th data-col="([^"]*)"( class="n")?', text))
    assert {k for k, v in aligned.items() if v} == {"otlp", "study", "matrix"}
    assert '<td data-label="otlp" class="n">8,729</td>' in text


def test_counts_named_by_a_noun_are_text() -> None:
    """A column of ``5 tools`` (a number, a space, a noun) was a figure column, right-aligned
    on a desktop: it is text, left-aligned as its header; a unit (``3 ms``, ``4 MB``) or a
    count of a whole (``3 of 11``) after a number still makes a figure."""
    frame = pd.DataFrame(
        {
            "tools": ["5 tools", "12  tools"],
            "streams": ["1,171 streams", "—"],
            "noted": ["2 calls (1 failed)", "0 calls"],
            "weeks": ["3 of 11", "0 of 11"],
            "took": ["3 ms", "4 MB"],
            "latency": ["1 (time·point)", "–"],
        }
    )
    text = table_html(frame, key="nouns")
    aligned = dict(re.findall(r'<th data-col="([^"]*)"( class="n")?', text))
    assert {k for k, v in aligned.items() if v} == {"weeks", "took", "latency"}
