"""Query results as text (``toolwatch sql``, ``toolwatch store info``): table, CSV, JSON."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from toolwatch.collector.store.result_formats import MAX_CELL, format_table, write_csv, write_json


def _table() -> pa.Table:
    return pa.table(
        {
            "tool": ["Read", "mcp__x__" + "y" * 100, None],
            "n": pa.array([3, 12345, None], pa.int64()),
            "share": [0.5, float("nan"), 1 / 3],
            "ok": [True, False, None],
        }
    )


def test_table_aligns_numbers_right_and_text_left_with_a_row_footer() -> None:
    lines = format_table(_table()).splitlines()
    assert lines[0].split() == ["tool", "n", "share", "ok"]
    assert set(lines[1]) == {"─"}
    assert lines[2].startswith("Read ") and lines[2].endswith("3        0.5   true")
    assert lines[3].split()[0] == "mcp__x__" + "y" * (MAX_CELL - 9) + "…"
    assert lines[3].endswith("12345        nan   false")
    assert lines[4].startswith("NULL ") and lines[4].endswith("NULL   0.333333   NULL")
    # right-aligned: every number ends where its header ends
    assert len({len(line.split("  ok")[0]) for line in lines[:1]}) == 1
    assert len({line.index("0.5") + 3 for line in lines[2:3]} | {lines[0].index("share") + 5}) == 1
    assert lines[-1] == "(3 rows)"
    assert all(line == line.rstrip() for line in lines)


def test_table_never_cuts_an_id_to_the_terminal_width() -> None:
    ids = ["sim-15847239-90ba-ee88-37bf-" + "a" * 40, "x"]
    text = format_table(pa.table({"session_id": ids, "calls": [1, 2]}))
    assert ids[0] in text.splitlines()[2]


def test_table_shows_the_first_rows_and_says_so() -> None:
    text = format_table(_table(), max_rows=1)
    assert len(text.splitlines()) == 4
    assert text.endswith("(3 rows, first 1 shown; --max-rows 0 shows all)\n")
    assert format_table(_table().slice(0, 1)).endswith("(1 row)\n")


def test_csv_leaves_nulls_empty() -> None:
    out = io.StringIO()
    write_csv(pa.table({"a": [1, None], "b": ["x", None]}), out)
    assert out.getvalue() == "a,b\n1,x\n,\n"


def _csv_and_duckdb_copy(con: Any, sql: str, tmp_path: Path) -> tuple[str, str]:
    """``sql``'s result as ``write_csv`` writes it, and as DuckDB's own ``COPY TO csv`` does."""
    copy = tmp_path / "copy.csv"
    con.execute(f"COPY ({sql}) TO '{copy}' (HEADER)")
    out = io.StringIO()
    write_csv(con.sql(sql).to_arrow_table(), out)
    return out.getvalue(), copy.read_text()


def test_csv_writes_non_finite_numbers_and_booleans_as_duckdb_copy_does(tmp_path: Path) -> None:
    """NaN and ±Infinity are numbers, not NULL (an empty field): written as DuckDB's own COPY
    TO csv writes them, and read back as the same numbers; booleans were ``True``/``False``."""
    import duckdb

    sql = (
        "SELECT * FROM (VALUES ('nan'::DOUBLE, 'inf'::DOUBLE, '-inf'::DOUBLE, NULL::DOUBLE, "
        "0.5::DOUBLE, true, NULL::BOOLEAN), (-0.25, 1e300, 'nan'::FLOAT, 2.0, 3.0, false, "
        "false)) t(a, b, c, d, e, f, g)"
    )
    con = duckdb.connect()
    text, copy = _csv_and_duckdb_copy(con, sql, tmp_path)
    assert (
        text
        == copy
        == ("a,b,c,d,e,f,g\nnan,inf,-inf,,0.5,true,\n-0.25,1e+300,nan,2.0,3.0,false,false\n")
    )
    ours = tmp_path / "ours.csv"
    ours.write_text(text)
    back = con.sql(
        f"SELECT a, b, c, d FROM read_csv('{ours}', types={{'a': 'DOUBLE', 'b': 'DOUBLE', "
        "'c': 'DOUBLE', 'd': 'DOUBLE'})"
    ).fetchall()
    assert math.isnan(back[0][0]) and back[0][1:] == (math.inf, -math.inf, None)


def test_json_writes_times_decimals_and_bytes_plainly() -> None:
    when = datetime(2026, 8, 4, 9, 30, tzinfo=UTC)
    table = pa.table(
        {
            "t": pa.array([when], pa.timestamp("us", tz="UTC")),
            "d": pa.array([Decimal("1.50")], pa.decimal128(5, 2)),
            "b": pa.array([b"\x01\xff"], pa.binary()),
        }
    )
    out = io.StringIO()
    write_json(table, out)
    assert json.loads(out.getvalue()) == [
        {"t": "2026-08-04T09:30:00+00:00", "d": "1.50", "b": "01ff"}
    ]


def test_json_writes_non_finite_numbers_as_null() -> None:
    """NaN, Infinity and -Infinity were written as such: not JSON (a strict parser refuses)."""
    inf = float("inf")
    table = pa.table(
        {
            "a": [float("nan"), 1.5],
            "b": [inf, -inf],
            "l": pa.array([[1.0, -inf], None], pa.list_(pa.float64())),
            "s": [{"x": float("nan")}, {"x": 2.0}],
        }
    )
    out = io.StringIO()
    write_json(table, out)
    strict = json.loads(out.getvalue(), parse_constant=_refuse)
    assert strict == [
        {"a": None, "b": None, "l": [1.0, None], "s": {"x": None}},
        {"a": 1.5, "b": None, "l": None, "s": {"x": 2.0}},
    ]


def test_csv_writes_a_list_struct_or_map_cell_as_the_json_output_does() -> None:
    """A nested cell was Python's text, ``[0.1, None]``, ``{'t': datetime.datetime(2026, …)}``,
    ``[('k', 1.5)]``: no reader parses it. It is now JSON on one line, the value
    ``--format json`` writes (NULL and NaN ``null``, times ISO 8601, a map its pairs)."""
    import duckdb

    table = duckdb.sql(
        "SELECT [0.5, NULL, 'nan'::DOUBLE] AS l, "
        "{'t': TIMESTAMPTZ '2026-08-04 09:30:00+00', 's': 'a,\"b é', 'n': NULL} AS s, "
        "MAP {'k': 1.5::DOUBLE} AS m, [[1, 2], []] AS ll, [true] AS b, 'x' AS plain"
    ).to_arrow_table()
    out = io.StringIO()
    write_csv(table, out)
    header, row = csv.reader(io.StringIO(out.getvalue()))
    assert row[0] == "[0.5, null, null]"
    assert row[1] == '{"t": "2026-08-04T09:30:00+00:00", "s": "a,\\"b é", "n": null}'
    assert row[2:5] == ['[["k", 1.5]]', "[[1, 2], []]", "[true]"]
    as_json = io.StringIO()
    write_json(table, as_json)
    (expected,) = json.loads(as_json.getvalue())
    cells = dict(zip(header, row, strict=True))
    assert {k: json.loads(cells[k]) for k in ("l", "s", "m", "ll", "b")} == {
        k: expected[k] for k in ("l", "s", "m", "ll", "b")
    }
    assert cells["plain"] == "x"


def _refuse(name: str) -> None:
    raise ValueError(f"not JSON: {name}")


def test_a_large_double_is_shown_whole() -> None:
    """A sum of bytes cast to double read 1.36114e+07 in the table (CSV and JSON were exact)."""
    values = [13611354.0, 1234567.891, 999999.5, -2e6, 0.5, 1 / 3, 1e20, 1e-7]
    lines = format_table(pa.table({"x": values})).splitlines()
    assert [line.strip() for line in lines[2:-1]] == [
        "13611354",
        "1234567.9",
        "999999.5",
        "-2000000",
        "0.5",
        "0.333333",
        "1e+20",
        "1e-07",
    ]


def test_csv_writes_floats_as_stored_and_times_as_duckdb_copy_does(tmp_path: Path) -> None:
    """A FLOAT (single precision) was written widened to a double, 0.10000000149011612, and a
    time with a ``T`` where the table and DuckDB's COPY write a space."""
    import duckdb

    sql = (
        "SELECT * FROM (VALUES (0.1::FLOAT, 1e20::FLOAT, 0.33333334::FLOAT, 0.1::DOUBLE, "
        "TIMESTAMP '2026-08-04 09:30:00.25', DATE '2026-08-04'), (16777216::FLOAT, "
        "'nan'::FLOAT, NULL::FLOAT, 2.5::DOUBLE, NULL::TIMESTAMP, NULL::DATE)) t(a, b, c, d, e, f)"
    )
    con = duckdb.connect()
    text, copy = _csv_and_duckdb_copy(con, sql, tmp_path)
    assert (
        text
        == copy
        == (
            "a,b,c,d,e,f\n0.1,1e+20,0.33333334,0.1,2026-08-04 09:30:00.25,2026-08-04\n"
            "16777216.0,nan,,2.5,,\n"
        )
    )
    # a zoned time carries its offset (DuckDB's COPY spells it +00): read back as the instant
    zoned = "SELECT TIMESTAMPTZ '2026-08-04 09:30:00.1+00' AS t, 0.1::FLOAT AS f"
    out = io.StringIO()
    write_csv(con.sql(zoned).to_arrow_table(), out)
    assert out.getvalue() == "t,f\n2026-08-04 09:30:00.1+00:00,0.1\n"
    ours = tmp_path / "ours.csv"
    ours.write_text(out.getvalue())
    assert con.sql(
        f"SELECT t = TIMESTAMPTZ '2026-08-04 09:30:00.1+00' FROM '{ours}'"
    ).fetchall() == [(True,)]


def test_json_writes_single_precision_floats_as_stored() -> None:
    table = pa.table({"f": pa.array([0.1, None, 16777217.0], pa.float32())})
    out = io.StringIO()
    write_json(table, out)
    assert '"f": 0.1' in out.getvalue()
    assert json.loads(out.getvalue()) == [{"f": 0.1}, {"f": None}, {"f": 16777216.0}]


def test_nested_single_precision_floats_are_written_as_stored() -> None:
    """A FLOAT inside a list, struct or map (``[0.1::FLOAT]``, ``{'x': 0.1::FLOAT}``) was
    widened on the way out, ``0.10000000149011612``, in JSON and CSV alike: only top-level
    columns were read back as stored. Every nested one is now the float32's shortest
    decimal, as is a half-precision value (0.1, not its exact 0.0999755859375)."""
    import duckdb

    con = duckdb.connect()
    table = con.sql(
        "SELECT [0.1::FLOAT, NULL, 0.33333334::FLOAT] AS l, "
        "{'x': 0.1::FLOAT, 'y': [16777217::FLOAT]} AS s, MAP {'a': 0.2::FLOAT} AS m, "
        "[0.1::DOUBLE] AS d"
    ).to_arrow_table()
    out = io.StringIO()
    write_json(table, out)
    assert "0.1000000" not in out.getvalue() and "0.2000000" not in out.getvalue()
    assert json.loads(out.getvalue()) == [
        {
            "l": [0.1, None, 0.33333334],
            "s": {"x": 0.1, "y": [16777216.0]},
            "m": [["a", 0.2]],
            "d": [0.1],
        }
    ]
    out = io.StringIO()
    write_csv(table, out)
    assert out.getvalue().splitlines()[1] == (
        '"[0.1, null, 0.33333334]","{""x"": 0.1, ""y"": [16777216.0]}","[[""a"", 0.2]]",[0.1]'
    )
    # from numpy: pyarrow before 19 builds no float16 array from Python floats
    half = pa.table({"h": pa.array(np.array([0.1, 0.0], np.float16), mask=np.array([0, 1], bool))})
    out = io.StringIO()
    write_json(half, out)
    assert json.loads(out.getvalue()) == [{"h": 0.1}, {"h": None}]
