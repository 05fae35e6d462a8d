"""A store of past data in a real browser (``toolwatch app``, headless Chromium): where the
time range, or a query's "this week" counted back from now, holds none of the store's calls,
the page says so with the store's span and a link that shows them; the link's page is checked
against independent SQL. A result that is empty over the whole store stays bare.

The store is the committed dev-real slice (real calls of months before today).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from support.app import rows
from support.browser import browser, chromium_or_skip, open_page, running_app
from support.dev_real import dev_real_store
from toolwatch.app.dashboard import explore as ex

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def past(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    executable = chromium_or_skip()
    root = tmp_path_factory.mktemp("past") / "store"
    dev_real_store(root)
    (span,) = rows(root, "SELECT min(start_time)::DATE AS a, max(start_time)::DATE AS b FROM calls")
    log = tmp_path_factory.mktemp("logs") / "app.log"
    with running_app(root, log) as base, browser(executable) as page:
        yield {"root": root, "base": base, "page": page, "days": (span["a"], span["b"])}


def _visit(past: dict[str, Any], path: str) -> Any:
    loaded = open_page(past["page"], past["base"], path)
    assert loaded.exceptions == [], (path, loaded.exceptions)
    return loaded


def _link(past: dict[str, Any], text: str) -> str:
    """The query string of the page's link named ``text``."""
    href = past["page"].get_by_role("link", name=text).get_attribute("href")
    assert href, text
    return "?" + urllib.parse.urlsplit(href).query


def _span_text(past: dict[str, Any]) -> str:
    first, last = past["days"]
    return f"the store's calls run {first:%Y-%m-%d} – {last:%Y-%m-%d} (UTC)"


def test_this_week_on_a_past_store_links_to_its_last_week(past: dict[str, Any]) -> None:
    page = _visit(past, "explore")  # the default query: failures per tool this week
    assert "No rows counting back from now" in page.text
    assert _span_text(past) in page.text
    link = _link(past, "run it as of that call")
    shown = _visit(past, "explore" + link)
    # the saved question counted back from the store's last call instead of now
    last = "(SELECT max(start_time) FROM calls)"
    expected = rows(past["root"], ex.SAVED[0].sql.replace("now()", last))
    assert expected, "the slice has failures in its last week"
    table = next(t for t in shown.tables if t and "failure_pct" in t[0])
    assert [(r[0], int(r[2]), int(r[3])) for r in table[1:]] == [
        (e["tool"], e["calls"], e["failures"]) for e in expected
    ]
    assert "No rows counting back from now" not in shown.text


@pytest.mark.parametrize(
    ("page_name", "count", "said"),
    [
        ("sessions", "count(DISTINCT session_id)", "in {:,} sessions"),
        ("corpus", "count(*)", "{:,}"),
    ],
)
def test_a_range_without_calls_names_the_stores_span(
    past: dict[str, Any], page_name: str, count: str, said: str
) -> None:
    page = _visit(past, f"{page_name}?range=7d")
    assert f"No calls in the time range (last week); {_span_text(past)}" in page.text
    link = _link(past, "show those dates")
    first, last = past["days"]
    assert f"from={first.isoformat()}" in link and f"to={last.isoformat()}" in link
    shown = _visit(past, page_name + link)
    assert "No calls in the time range" not in shown.text
    (n,) = rows(past["root"], f"SELECT {count} AS n FROM calls")
    assert said.format(n["n"]) in shown.text


def test_explore_in_a_range_without_calls_keeps_the_query(past: dict[str, Any]) -> None:
    sql = "SELECT tool, count(*) AS calls FROM calls GROUP BY tool ORDER BY calls DESC, tool"
    page = _visit(past, "explore?" + urllib.parse.urlencode({"sql": sql, "range": "7d"}))
    assert f"No rows in the time range (last week); {_span_text(past)}" in page.text
    shown = _visit(past, "explore" + _link(past, "show those dates"))
    table = next(t for t in shown.tables if t and t[0] == ["tool", "calls"])
    assert [(r[0], int(r[1])) for r in table[1:]] == [
        (e["tool"], e["calls"]) for e in rows(past["root"], sql)
    ]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM calls WHERE tool = 'no such tool'",
        "SELECT * FROM calls WHERE tool = 'no such tool' AND start_time >= now() - INTERVAL 7 DAY",
    ],
)
def test_a_result_empty_over_the_whole_store_stays_bare(past: dict[str, Any], sql: str) -> None:
    page = _visit(past, "explore?" + urllib.parse.urlencode({"sql": sql}))
    assert "0 rows" in page.text
    assert "the store's calls run" not in page.text


def test_this_week_in_a_range_without_calls_links_to_the_whole_store(past: dict[str, Any]) -> None:
    page = _visit(past, "explore?range=7d&limit=100")  # the saved "this week" in "last week"
    assert "No rows counting back from now" in page.text
    link = urllib.parse.parse_qs(_link(past, "run it as of that call")[1:])
    assert link["range"] == ["all"] and link["limit"] == ["100"]
    assert "now()" not in link["sql"][0] and "FROM calls" in link["sql"][0]
