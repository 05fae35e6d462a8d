"""The suite's text tables (``toolwatch workbench suite``), from run rows."""

from __future__ import annotations

import re
from typing import Any

from toolwatch.injection.workbench.suite import render_summary, summarize


def _row(agent: str, mitigation: str, passed: bool, mode: str = "faulted") -> dict[str, Any]:
    return {
        "agent": agent,
        "mode": mode,
        "fault_type": "C1",
        "mitigation": mitigation,
        "exercised": True,
        "passed": passed,
        "fix_confirmed": passed and mitigation != "none",
        "task_solved": None,
    }


def test_the_impact_table_prints_whole_mitigation_names_in_their_columns() -> None:
    """A combination longer than 13 characters was cut (``schema+scan+verify`` printed as
    ``schema+scan+v``); every name is now whole, over its own column's cells."""
    sets = ["none", "scan", "schema+scan+verify", "retry+schema+scan", "retry+schema+scan+verify"]
    rows = [_row("naive", m, passed=m != "none") for m in sets]
    text = render_summary(summarize(rows))
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("naive ") and "scan" in line)
    header, cells = lines[start], lines[start + 1]
    names = re.split(r" {2,}", header.strip())[1:]
    assert names == ["none", "scan", "all (paper)", "schema+scan+verify", "all (+verify)"]
    assert cells.startswith("C1 ") and len(cells) == len(header)
    # each cell ends where its name ends: the columns line up
    ends = [header.index(n) + len(n) for n in names]
    values = re.split(r" {2,}", cells.strip())[1:]
    assert values == ["0%", "100% +1", "100% +1", "100% +1", "100% +1"]
    assert [cells.index(v, e - len(v)) + len(v) for v, e in zip(values, ends, strict=True)] == ends
