"""Explore: results the page could not show (repeated column names, a column name altair reads
as a type, values pandas cannot hold, more data than a browser message carries) are shown or
refused in one line — through :func:`run_query` and through the page under
``streamlit.testing`` on a small simulated store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from support.app import rows, shown_tables
from toolwatch.app.dashboard import explore as ex
from toolwatch.app.dashboard.settings import MAIN_SCRIPT
from toolwatch.collector.store.parquet_store import Store


@pytest.fixture
def store(small_store: Path) -> Path:
    return small_store


@pytest.fixture
def explore(monkeypatch: pytest.MonkeyPatch, store: Path) -> Iterator[AppTest]:
    """The Explore page on the store, before its first run (set ``query_params``, then run)."""
    monkeypatch.delenv("TOOLWATCH_MODEL", raising=False)
    monkeypatch.setenv("TOOLWATCH_STORE", str(store))
    at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=60)
    at.run()
    at.switch_page("explore_page.py")
    yield at


def run_page(at: AppTest, sql: str, **params: str) -> AppTest:
    """Open the page with ``sql`` in its link (a later query as if typed in the editor)."""
    at.query_params.update({"sql": sql, **params})
    if "w_sql" in at.session_state:
        at.session_state["w_sql"] = sql
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def columns(store: Path, view: str) -> list[str]:
    return Store(store).query(f"SELECT * FROM {view} LIMIT 0").column_names


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


def test_repeated_column_names_are_made_unique_and_said(store: Path, explore: AppTest) -> None:
    result = ex.run_query(store, "SELECT 1 AS a, 2 AS a, 3 AS a_1, 4 AS a")
    assert result.ok
    assert list(result.frame.columns) == ["a", "a_2", "a_1", "a_3"]  # a_1 was the user's own
    assert result.frame.iloc[0].tolist() == [1, 2, 3, 4]
    assert result.notes == ("2 repeated column names are shown as 'a_2', 'a_3'",)
    one = ex.run_query(store, "SELECT 1 AS a, 2 AS a")
    assert one.notes == ("a repeated column name 'a' is shown as 'a_1'",)
    joined = (
        "SELECT * FROM sessions s JOIN streams t ON s.session_id = t.session_id "
        "ORDER BY ALL LIMIT 5"
    )
    at = run_page(explore, joined)
    assert not at.error
    table = shown_tables(at)["result"].frame
    assert len(table) == 5 and "session_id" in table.columns and "session_id_1" in table.columns
    assert (table["session_id"] == table["session_id_1"]).all()
    shared = [c for c in columns(store, "streams") if c in columns(store, "sessions")]
    assert shared[:3] == ["session_id", "source", "calls"] and len(shared) > 3
    assert any(
        c.startswith(
            f"5 rows · {len(shared)} repeated column names are shown as 'session_id_1', "
            f"'source_1', 'calls_1' and {len(shared) - 3} more · "
        )
        for c in captions(at)
    ), captions(at)


def test_a_long_result_is_shown_a_page_at_a_time(explore: AppTest) -> None:
    """Explore's results are one HTML table (a phone shows each row as a block); 10,000 rows
    of it were slow to draw, so the page shows 1,000 at a time, every row a page away."""
    at = run_page(explore, "SELECT range AS i, 'x' || range AS s FROM range(2500)", limit="10000")
    assert not at.error
    first = shown_tables(at)["result"].frame
    assert list(first["i"]) == [str(i) for i in range(1_000)]  # as returned: 1000, not 1,000
    pager = at.selectbox(key="result_page")
    assert pager.options == ["1–1,000 of 2,500", "1,001–2,000 of 2,500", "2,001–2,500 of 2,500"]
    pager.set_value((2_000, 2_500)).run()
    last = shown_tables(at)["result"].frame
    assert list(last["s"]) == [f"x{i}" for i in range(2_000, 2_500)]


def test_a_column_name_with_a_colon_or_dot_is_charted(store: Path, explore: AppTest) -> None:
    sql = 'SELECT tool, count(*) AS "calls: all", count(*) AS "a.b" FROM calls GROUP BY tool'
    at = run_page(explore, sql)
    assert not at.error
    expected = {
        r["tool"]: r["n"]
        for r in rows(store, "SELECT tool, count(*) AS n FROM calls GROUP BY tool")
    }
    [chart] = at.get("vega_lite_chart")
    spec = json.loads(chart.proto.spec)
    [dataset] = chart.proto.datasets
    values = pa.ipc.open_stream(dataset.data.data).read_all().to_pandas()
    assert dict(zip(values["x"], values["y"], strict=True)) == expected
    assert set(values["what"]) == {"calls: all"}
    assert spec["encoding"]["y"]["title"] == "calls: all"
    assert any(c.startswith("calls: all by tool") for c in captions(at))
    at.selectbox(key="chart_y").set_value("a.b").run()
    assert not at.exception and not at.error
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    assert spec["encoding"]["y"]["title"] == "a.b"
    # a backslash in an axis title makes the browser draw nothing: said instead
    at = run_page(explore, 'SELECT tool, count(*) AS "n\\x" FROM calls GROUP BY tool')
    assert not at.get("vega_lite_chart")
    assert any("rename 'n\\\\x'" in i.value for i in at.info), [i.value for i in at.info]


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        (
            "SELECT 1 AS n, DATE '10000-01-01' AS d",
            "column 'd' (date32[day]) cannot be shown: year 10000 is out of range; "
            "cast it to VARCHAR",
        ),
        (
            "SELECT union_value(k := 1) AS u",
            "column 'u' (sparse_union<k: int32=0>) cannot be shown",
        ),
    ],
)
def test_values_pandas_cannot_hold_are_a_one_line_error(
    store: Path, explore: AppTest, sql: str, error: str
) -> None:
    result = ex.run_query(store, sql)
    assert error in result.error and "\n" not in result.error
    at = run_page(explore, sql)
    assert [e.value for e in at.error] == [result.error]


def test_results_are_capped_by_size(store: Path) -> None:
    sql = "SELECT i, repeat('x', 1000) AS s FROM range(5000) t(i)"
    result = ex.run_query(store, sql, limit=100_000, max_bytes=1_000_000)
    assert result.ok and result.size_capped and result.truncated
    shown = len(result.frame)
    # every kept row is 1,000 characters plus offsets and i: the most whole rows under 1 MB
    assert 900 < shown < 1_000
    assert result.frame["i"].tolist() == list(range(shown))
    whole = ex.run_query(store, sql, limit=100_000)  # 5 MB: under the default cap
    assert whole.ok and not whole.size_capped and len(whole.frame) == 5_000
    one = ex.run_query(store, "SELECT repeat('x', 2000000) AS s", max_bytes=1_000_000)
    assert one.error.startswith("the first row alone is over 1 MB, more than the page shows")


def test_the_page_says_a_result_was_cut_by_size(
    explore: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ex, "MAX_BYTES", 1_000_000)
    at = run_page(explore, "SELECT repeat('x', 3000) AS s FROM range(100000)", limit="100000")
    assert not at.error
    shown = len(shown_tables(at)["result"].frame)
    assert 300 < shown < 334
    assert any(
        c.startswith(f"the first {shown:,} rows (the 1 MB the page shows at most;")
        for c in captions(at)
    ), captions(at)


def test_the_csv_download_writes_cells_as_toolwatch_sql_does(store: Path) -> None:
    """The download was pandas' CSV: a time ``2026-08-04 09:30:00.250000+00:00``, NaN as an
    empty cell (read back as NULL), a nested FLOAT widened; it is now the rows as
    ``toolwatch sql --format csv`` writes them."""
    result = ex.run_query(
        store,
        "SELECT TIMESTAMPTZ '2026-08-04 09:30:00.25+00' AS t, 'nan'::DOUBLE AS d, "
        "0.1::FLOAT AS f, [0.1::FLOAT] AS l, NULL::INTEGER AS n",
    )
    assert result.ok
    assert ex.csv_bytes(result).decode() == (
        "t,d,f,l,n\n2026-08-04 09:30:00.25+00:00,nan,0.1,[0.1],\n"
    )
