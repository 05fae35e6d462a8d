"""Chart specs that must hold whatever the store holds (``app/dashboard/charts.py``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolwatch.app.dashboard import charts, lanes, time_charts
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


def _timeline(tools: list[str]) -> dict[str, Any]:
    """The timeline spec of a stream calling ``tools`` in that order."""
    n = len(tools)
    calls = pd.DataFrame(
        {
            "index": range(n),
            "tool": tools,
            "gap_s": [None, *[1.0 + i for i in range(n - 1)]],
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
    return dict(charts.timeline_chart(calls, None, None, None).to_dict(validate=False))


def _lanes(spec: dict[str, Any]) -> dict[str, str]:
    """Each tool's lane in a timeline spec."""
    return {
        row["tool"]: row["lane"]
        for data in spec["datasets"].values()
        for row in data
        if "lane" in row
    }


def test_a_very_long_tool_name_keeps_the_timeline_readable() -> None:
    """A stream with a 4,096-byte MCP tool name (the longest a span carries) drew its lane label
    whole (labelLimit 0): tens of thousands of pixels of label and the panels off the page. The
    label is now cut at a width; the lanes of two such tools stay apart and the tooltip keeps
    the whole name."""
    prefix = "mcp__" + "s" * 300 + "__"
    one = prefix + "a" * (MAX_STRING_BYTES - len(prefix) - 1) + "1"
    two = prefix + "a" * (MAX_STRING_BYTES - len(prefix) - 1) + "2"
    spec = _timeline([one, two, "Read", one, two, "Read"])
    (axis,) = _axes(spec, "lane")
    assert 0 < _at_width(axis["labelLimit"], DESKTOP_PX) <= 300, axis
    assert 0 < _at_width(axis["labelLimit"], PHONE_PX) <= PHONE_PX / 2, axis  # room for calls
    lanes = {row["lane"] for data in spec["datasets"].values() for row in data if "lane" in row}
    assert len(lanes) == 3  # the two long tools are two lanes, not one
    assert {row["tool"] for data in spec["datasets"].values() for row in data} >= {one, two}


def _legends(spec: Any) -> list[dict[str, Any]]:
    """Every legend of a (nested) Vega-Lite spec."""
    found = []
    if isinstance(spec, dict):
        if isinstance(spec.get("legend"), dict):
            found.append(spec["legend"])
        for value in spec.values():
            found += _legends(value)
    elif isinstance(spec, list):
        for value in spec:
            found += _legends(value)
    return found


def _at_width(value: Any, width: float) -> Any:
    """A legend property as Vega evaluates it in a container ``width`` px wide: a number, or
    an expression of ``containerSize()[0]`` with ``&&`` and one ``a ? b : c`` (the forms
    :func:`charts.bottom_legend` writes)."""
    if not isinstance(value, dict):
        return value
    expr = value["expr"].replace("isValid(width)", "True").replace("containerSize()[0]", str(width))
    expr = expr.replace("&&", " and ")
    test, _, rest = expr.partition("?")
    yes, _, no = rest.partition(":")
    return eval(f"({yes}) if ({test}) else ({no})", {"max": max})


#: A phone (390 px less Streamlit's 16 px margins) and the main column of a 1,400 px window.
PHONE_PX, DESKTOP_PX = 358, 940


def _kinds_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    kinds = [f"kind{i}" for i in range(9)]
    labels = [f"a long kind label number {i}" for i in range(9)]
    points = pd.DataFrame(
        {
            "kind": [k for k in kinds for _ in range(2)],
            "step": [0, 1] * len(kinds),
            "false_alarm": [0.0, 1.0] * len(kinds),
            "detection": [0.0, 1.0] * len(kinds),
        }
    )
    areas = pd.DataFrame({"kind": kinds, "label": labels, "auc": [0.5] * len(kinds)})
    return points, areas


def test_legends_under_the_detection_charts_fit_a_phone() -> None:
    """At 390 px the ROC legend's two columns of long labels ran off the screen (four kinds'
    colours and areas unseen) and the detection bars' legend lost 'study (published)': below
    600 px every bottom legend now stacks one entry a row with labels cut at the container's
    width, while a desktop keeps its layout (ROC: two columns, labels up to 420 px; the bars:
    one row)."""
    points, areas = _kinds_frames()
    roc = charts.roc_chart(points, areas, 0.05).to_dict(validate=False)
    table = pd.DataFrame(
        {
            "kind": ["a", "b"],
            "label": ["burst", "runaway"],
            "rate": [0.5, 0.9],
            "ci_low": [0.4, 0.8],
            "ci_high": [0.6, 1.0],
            "study_rate": [0.6, None],
        }
    )
    bars = charts.detection_bars(table, "t").to_dict(validate=False)
    latency = charts.latency_chart(
        pd.DataFrame({"label": ["burst"], "latency": [2]}),
        pd.DataFrame({"label": ["burst"], "latency": [3]}),
        ["burst"],
    ).to_dict(validate=False)
    (roc_legend,) = _legends(roc)
    bar_legends = _legends(bars) + _legends(latency)
    assert bar_legends
    for legend in [roc_legend, *bar_legends]:
        assert legend["orient"] == "bottom"
        assert _at_width(legend["columns"], PHONE_PX) == 1, legend
        assert _at_width(legend["labelLimit"], PHONE_PX) <= PHONE_PX - 40, legend
    assert _at_width(roc_legend["columns"], DESKTOP_PX) == 2
    assert _at_width(roc_legend["labelLimit"], DESKTOP_PX) == 420
    for legend in bar_legends:
        assert _at_width(legend["columns"], DESKTOP_PX) == 0  # all entries in one row
    # the ROC's plot keeps its height however tall its legend (only the width fits the page)
    assert roc["autosize"]["type"] == "fit-x" and roc["height"] == charts.ROC_PLOT_PX


PLAYWRIGHT = "mcp__plugin_playwright_playwright__browser_network_requests"


def test_a_long_lane_label_is_cut_in_the_middle_keeping_the_tool_name() -> None:
    """A server-qualified MCP tool's lane label was cut at its end by Vega
    ("plugin_playwright_playwright · browser_network…"), hiding the tool part; the label now
    keeps the start of the server and the tool name (its own start and end when that alone is
    too long), two tools cut alike keep a lane each, and the tooltip has the whole name."""
    prefix = "mcp__" + "s" * 300 + "__"
    one = prefix + "a" * (MAX_STRING_BYTES - len(prefix) - 1) + "1"
    two = prefix + "a" * (MAX_STRING_BYTES - len(prefix) - 1) + "2"
    middle = ["mcp__srv__" + "x" * 30 + c + "y" * 30 for c in "pq"]  # differ in the middle only
    got = _lanes(_timeline([PLAYWRIGHT, one, two, *middle, "Read", "mcp__github__search"]))
    assert got[PLAYWRIGHT] == "plugin_playw… · browser_network_requests"
    limit = lanes.LANE_LABEL_CHARS
    assert got["Read"] == "Read" and got["mcp__github__search"] == "github · search"
    for tool, end in ((one, "1"), (two, "2")):
        assert got[tool].startswith("ssssssssss… · aaaa") and got[tool].endswith("a" + end)
        assert "…a" in got[tool] and len(got[tool]) == limit
    assert got[middle[0]].startswith("srv · xxx") and got[middle[0]].endswith("yyy")
    assert got[middle[1]] == got[middle[0]] + " #2"
    assert len(set(got.values())) == len(got)


#: The main column beside the sidebar in a 1,400 px window, and what the timeline's legends on
#: the right take (titles "same response", labels "output_bytes", their padding).
COLUMN_PX, LEGENDS_PX = 940, 160


def _widths(spec: Any) -> list[int]:
    found = []
    if isinstance(spec, dict):
        if isinstance(spec.get("width"), int):
            found.append(spec["width"])
        for value in spec.values():
            found += _widths(value)
    elif isinstance(spec, list):
        for value in spec:
            found += _widths(value)
    return found


def test_the_timeline_fits_a_1400_px_window() -> None:
    """The timeline's legends on the right were cut at a 1,400 px window: 640 px panels beside
    260 px lane labels did not leave them room. The panels now take what the lane labels leave
    (6 px a character, at most the label limit): whole 640 px with short names, narrower with
    long ones, never past the column."""
    for tools, wide in (
        (["Read", "Bash", "mcp__github__search"], True),
        ([PLAYWRIGHT, "Read", "mcp__" + "s" * 300 + "__" + "a" * 3000], False),
    ):
        spec = _timeline(tools)
        longest = max(len(lane) for lane in _lanes(spec).values())
        (axis,) = _axes(spec, "lane")
        label_px = min(_at_width(axis["labelLimit"], DESKTOP_PX), 6 * longest)
        widths = set(_widths(spec))
        assert len(widths) == 1, widths  # the panels stay aligned
        (width,) = widths
        assert width + label_px + LEGENDS_PX <= COLUMN_PX, (width, label_px)
        assert (width == 640) is wide


def _day_axes(spec: dict[str, Any]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each row of the calls-per-day chart: its x encoding and its data rows."""
    found = []
    for row in spec["vconcat"]:
        data = spec["datasets"][row["data"]["name"]]
        found.append((row["encoding"]["x"], data))
    return found


def test_calls_per_day_labels_each_day_once_on_a_short_store() -> None:
    """On a one- or two-day store the Corpus 'Calls per day' time axis ticked every few hours,
    each tick labelled with the same date. A source spanning up to a month now gets one
    labelled bar per day (empty days included); a longer one keeps its time axis."""
    day = pd.Timestamp("2026-08-05")
    per_day = pd.DataFrame(
        {
            "day": [
                day,
                day + pd.Timedelta(days=2),
                day,
                *(day + pd.Timedelta(days=i) for i in (0, 60)),
            ],
            "source": ["import", "import", "otlp", "simulated", "simulated"],
            "calls": [10, 5, 3, 100, 200],
        }
    )
    spec = time_charts.calls_per_day_chart(per_day).to_dict(validate=False)
    (imported, x1), (otlp, x2), (simulated, x3) = ((data, x) for x, data in _day_axes(spec))
    assert x1["type"] == x2["type"] == "ordinal" and x3["type"] == "temporal"
    assert [(r["date"], r["calls"]) for r in imported] == [
        ("2026-08-05", 10),
        ("2026-08-06", 0),
        ("2026-08-07", 5),
    ]
    assert [(r["date"], r["calls"]) for r in otlp] == [("2026-08-05", 3)]
    assert len(simulated) == 2


def test_the_timelines_size_legend_says_input_and_output_in_words() -> None:
    """The size panel's legend showed the raw column names ``input_bytes``/``output_bytes``."""
    spec = _timeline(["Read", "Grep"])
    scales = [
        layer["encoding"]["color"]["scale"]["domain"]
        for panel in spec["vconcat"]
        for layer in [panel, *panel.get("layer", [])]
        if layer.get("encoding", {}).get("color", {}).get("field") == "direction"
    ]
    assert scales == [["input", "output"]]
