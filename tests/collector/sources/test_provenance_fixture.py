"""The committed provenance fixture: content-free, and the normal ranges the docs quote."""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from pathlib import Path

import pytest

from support.paths import FIXTURES
from toolwatch.conventions import DEST_SEEN_VALUES, EGRESS_CLASSES, ENCODINGS

FIXTURE = FIXTURES / "provenance" / "dev_real_egress.csv"
DEV_REAL = Path("/work/shared/corpora/dev-real/calls.parquet")
_CONTENT = re.compile(r"[/\\~@\s]|://|\.[A-Za-z]{2,4}$")


def _rows() -> list[dict[str, str]]:
    with FIXTURE.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_fixture_holds_numbers_names_and_enums_only() -> None:
    rows = _rows()
    assert len(rows) == 986
    for row in rows:
        assert row["egress"] in EGRESS_CLASSES and row["egress"] != "none"
        assert row["reused_encoding"] in ENCODINGS and row["dest_seen"] in DEST_SEEN_VALUES
        for name in ("reused_longest", "reused_total", "payload_longest", "payload_total"):
            assert row[name].isdigit(), name
        for value in row.values():
            assert not _CONTENT.search(value) and len(value) <= 59, value


def test_the_normal_payload_ranges_are_the_documented_ones() -> None:
    """Per class, normal payload maxima (web 40, browser 25, shell 68, script 163 bytes) and
    the raw-reuse figures the issue quoted (web p90 51 B; shell at most 188 B off-machine)."""
    by: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in _rows():
        by[row["egress"]].append(row)
    counts = {c: len(v) for c, v in by.items()}
    assert counts == {"web": 590, "shell": 288, "browser": 55, "script": 53}
    top = {c: max(int(r["payload_longest"]) for r in v) for c, v in by.items()}
    assert top == {"web": 40, "browser": 25, "shell": 68, "script": 163}
    web = sorted(int(r["reused_longest"]) for r in by["web"])
    assert web[int(0.9 * len(web))] == 51 and web[-1] == 330
    assert max(int(r["reused_longest"]) for r in by["shell"]) == 188
    encodings = {r["reused_encoding"] for v in by.values() for r in v}
    assert encodings == {"none", "verbatim", "json"}  # no normal call reuses url/base64/hex


@pytest.mark.skipif(not DEV_REAL.is_file(), reason="the dev-real corpus is not on this machine")
def test_the_fixture_joins_dev_real_with_the_same_tools() -> None:
    import pyarrow.parquet as pq

    calls = pq.read_table(DEV_REAL, columns=["session_id", "agent_id", "call_id", "tool"])
    tools = {
        (s, a or "", c): t
        for s, a, c, t in zip(
            *(calls.column(n).to_pylist() for n in calls.column_names), strict=True
        )
    }
    rows = _rows()
    assert all(tools.get((r["session_id"], r["agent_id"], r["call_id"])) == r["tool"] for r in rows)
