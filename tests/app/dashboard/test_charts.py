"""Chart specs that must hold whatever the store holds (``app/dashboard/charts.py``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolwatch.app.dashboard import charts
from toolwatch.record import MAX_STRING_BYTES


def _axes(spec: Any, field: str) -> list[dict[str, Any]]:
    """Every axis drawn for ``field`` anywhere in a (nested) Vega-Lite spec."""
    found = []
    if isinstance(spec, dict):
        y = spec.get("encoding", {}).get("y")
        if isinstance(y, dict) and y.get("field") == field:
            found.append(y.get("axis", {}))
        for value in spec.values():
            found += _axes(value, field)
    elif isinstance(spec, list):
        for value in spec:
            found += _axes(value, field)
    return found


def test_a_very_long_tool_name_keeps_the_timeline_readable() -> None:
    """A stream with a 4,096-byte MCP tool name (the longest a span carries) drew its lane label
    whole (labelLimit 0): tens of thousands of pixels of label and the panels off the page. The
    label is now cut at a width; the lanes of two such tools stay apart and the tooltip keeps
    the whole name."""
    prefix = "mcp__" + "s" * 300 + "__"
    one = prefix + "a" * (MAX_STRING_BYTES - len(prefix) - 1) + "1"
    two = prefix + "a" * (MAX_STRING_BYTES - len(prefix) - 1) + "2"
    n = 6
    calls = pd.DataFrame(
        {
            "index": range(n),
            "tool": [one, two, "Read", one, two, "Read"],
            "gap_s": [None, 1.0, 2.0, 3.0, 0.5, 1.5],
            "same_response": [False] * n,
            "response_group": range(n),
            "input_bytes": [10] * n,
            "output_bytes": [100] * n,
            "failed": [False] * n,
            "label": [None] * n,
            "injected": [False] * n,
            "alert": [False] * n,
        }
    )
    spec = charts.timeline_chart(calls, None, None, None).to_dict(validate=False)
    (axis,) = _axes(spec, "lane")
    assert 0 < axis["labelLimit"] <= 300, axis
    lanes = {row["lane"] for data in spec["datasets"].values() for row in data if "lane" in row}
    assert len(lanes) == 3  # the two long tools are two lanes, not one
    assert {row["tool"] for data in spec["datasets"].values() for row in data} >= {one, two}
