"""Altair charts of the dashboard: pure functions from frames to chart specs (no Streamlit).

Keeping them apart from the pages lets the tests check what a chart encodes (its data and
fields) without a browser.

Every chart has axis titles with units and a legend for each colour or mark it uses; colours
come from one colour-blind-safe palette (Okabe & Ito's, :data:`PALETTE`: hues that stay apart
under every common colour-vision deficiency), with line dashes as a second cue where a chart
needs more than its hues, and pass rates on viridis (never a red-green scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import altair as alt
import pandas as pd

from toolwatch.app.dashboard.lanes import (
    LANE_LABEL_PX,
    PHONE_LANE_LABEL_PX,
    lane_labels,
    panel_width,
    phone_label_expr,
)

#: Any top-level chart these functions return (altair's ``properties`` widens the types).
Spec: TypeAlias = alt.Chart | alt.LayerChart | alt.VConcatChart | alt.FacetChart

#: Okabe & Ito's colour-blind-safe palette (yellow left out: unreadable on white), then greys.
PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#999999",  # grey
    "#5F5F5F",  # dark grey
)
#: Line dashes paired with the palette (solid for the first five hues), a second cue.
DASHES: tuple[list[int], ...] = ([1, 0],) * 5 + ([6, 3], [2, 2], [6, 3], [2, 2])
PASS_SCALE = alt.Scale(domain=[0, 1], scheme="viridis")
#: Marks that stand out from the data: the study's figures, divergence steps, thresholds.
MARKER = "#D55E00"
#: Our own figures (bars, points) beside the MARKER.
OURS = "#0072B2"


def category_scale(domain: Sequence[Any] | None = None) -> alt.Scale:
    """The palette as a categorical scale (cycled when there are more values than hues)."""
    if domain is None:
        return alt.Scale(range=list(PALETTE))
    values = list(domain)
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(values))]
    return alt.Scale(domain=values, range=colours)


#: Below this chart-container width (px: a phone, 390 px wide) a legend under a chart stacks its
#: entries one a row and cuts its labels at the container's width: a row of entries, or two
#: columns of long labels, ran off the right edge there and hid the last entries.
NARROW_PX = 600
#: Vega expression: true in a narrow container (0 = not known yet: drawn as on a wide page).
#: It names the ``width`` signal, which Streamlit sets when the page is resized (a phone turned,
#: a window narrowed), so Vega evaluates it again then: ``containerSize()`` alone is no signal,
#: and a legend laid out at load kept that layout until the page reran.
NARROW = f"isValid(width) && containerSize()[0] > 0 && containerSize()[0] < {NARROW_PX}"


def bottom_legend(columns: int = 0, label_limit: int = 160, **options: Any) -> alt.Legend:
    """A legend below the chart that fits any width: ``columns`` entries a row on a wide page
    (0: all in one row), one a row in a container narrower than :data:`NARROW_PX`, where a
    label is cut at the container's width rather than at ``label_limit``."""
    return alt.Legend(
        orient="bottom",
        columns=alt.ExprRef(expr=f"{NARROW} ? 1 : {columns}"),
        labelLimit=alt.ExprRef(expr=f"{NARROW} ? max(80, containerSize()[0] - 60) : {label_limit}"),
        **options,
    )


def legend_colour(
    names: Sequence[str],
    colours: Sequence[str],
    title: str | None = None,
    legend: alt.Legend | None = None,
) -> Any:
    """A colour encoding on the constant field ``what`` (set by :func:`as_what`), so layers
    that each draw one kind of mark share one legend naming them (``legend``: by default
    :func:`bottom_legend`)."""
    return alt.Color(
        "what:N",
        title=title,
        scale=alt.Scale(domain=list(names), range=list(colours)),
        legend=legend or bottom_legend(),
    )


def as_what(chart: alt.Chart, name: str) -> alt.Chart:
    """``chart`` with ``what = name`` on every row (see :func:`legend_colour`)."""
    return chart.transform_calculate(what="'" + name.replace("'", "\\'") + "'")


def marker_ticks(data: pd.DataFrame, size: int, **encoding: Any) -> alt.Chart:
    """Thick ticks in the marker colour (the study's figure beside ours, a divergence step)."""
    return alt.Chart(data).mark_tick(color=MARKER, thickness=3, size=size).encode(**encoding)


def detection_bars(table: pd.DataFrame, title: str) -> Spec:
    """Our detection rate per kind (bar + 95 % interval) with the study's published rate.

    ``table``: ``kind, label, rate, ci_low, ci_high, study_rate`` (study_rate may be NaN).
    """
    order = list(table["label"])
    names = ["ours", "ours: 95% interval", "study (published)"]
    colour = legend_colour(names, [OURS, "#1f2d3d", MARKER])
    base = alt.Chart(table).encode(
        y=alt.Y("label:N", title=None, sort=order, axis=alt.Axis(labelLimit=300)),
    )
    bars = as_what(base.mark_bar(opacity=0.85), names[0]).encode(
        x=alt.X(
            "rate:Q",
            title="injected runs detected (%)",
            scale=alt.Scale(domain=[0, 1]),
            axis=alt.Axis(format="%"),
        ),
        color=colour,
        tooltip=[
            alt.Tooltip("label:N", title="kind"),
            alt.Tooltip("rate:Q", format=".1%", title="ours"),
            alt.Tooltip("ci_low:Q", format=".1%", title="95% low"),
            alt.Tooltip("ci_high:Q", format=".1%", title="95% high"),
            alt.Tooltip("study_rate:Q", format=".1%", title="study"),
        ],
    )
    errors = as_what(base.mark_rule(strokeWidth=2), names[1]).encode(
        x="ci_low:Q", x2="ci_high:Q", color=colour
    )
    published = as_what(
        alt.Chart(table.dropna(subset=["study_rate"])).mark_tick(thickness=3, size=18),
        names[2],
    ).encode(y=alt.Y("label:N", sort=order), x="study_rate:Q", color=colour)
    return alt.layer(bars, errors, published).properties(title=title, height=alt.Step(26))


#: The ROC plot's own height (axes and legend come on top): as on a 1,400 px page before.
ROC_PLOT_PX = 200


def roc_chart(
    points: pd.DataFrame,
    areas: pd.DataFrame,
    target: float | None,
    order: Sequence[str] | None = None,
) -> Spec:
    """Detection rate against session false-alarm rate, one line per kind (AUC in the legend,
    kinds in ``order`` of their labels when given); palette hues, dashed for the last ones."""
    named = points.merge(areas, on="kind")
    named["curve"] = named["label"] + "  (AUC " + named["auc"].map("{:.2f}".format) + ")"
    curves = list(dict.fromkeys(named["curve"]))
    if order is not None:
        rank = {label: i for i, label in enumerate(order)}
        curves.sort(key=lambda c: rank.get(c.rsplit("  (AUC", 1)[0], len(rank)))
    lines = (
        alt.Chart(named)
        .mark_line(interpolate="linear", strokeWidth=2.5)
        .encode(
            x=alt.X(
                "false_alarm:Q",
                title="normal test streams alarming (false-alarm rate, %)",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%"),
            ),
            y=alt.Y(
                "detection:Q",
                title="injected runs detected (%)",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%"),
            ),
            color=alt.Color(
                "curve:N",
                title="kind (area under curve)",
                sort=curves,
                scale=category_scale(curves),
                legend=bottom_legend(columns=2, label_limit=420, symbolStrokeWidth=3),
            ),
            strokeDash=alt.StrokeDash(
                "curve:N",
                sort=curves,
                scale=alt.Scale(
                    domain=curves, range=[DASHES[i % len(DASHES)] for i in range(len(curves))]
                ),
                legend=None,
            ),
            order=alt.Order("step:Q", sort="descending"),
            tooltip=[
                alt.Tooltip("label:N", title="kind"),
                alt.Tooltip("false_alarm:Q", format=".1%", title="false alarms"),
                alt.Tooltip("detection:Q", format=".1%", title="detected"),
            ],
        )
    )
    diagonal = (
        alt.Chart(pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]}))
        .mark_line(strokeDash=[4, 4], color="#999999")
        .encode(x="x:Q", y="y:Q")
    )
    layers: list[alt.Chart] = [diagonal, lines]
    if target is not None:
        layers.append(
            alt.Chart(pd.DataFrame({"target": [target]}))
            .mark_rule(color="#1f2d3d", strokeDash=[6, 3], strokeWidth=1.5)
            .encode(x="target:Q", tooltip=[alt.Tooltip("target:Q", format=".1%")])
        )
    # the plot is ROC_PLOT_PX high and the legend adds to it (fit-x: only the width fits the
    # page), so a phone's legend of one kind a row does not squash the curves
    return alt.layer(*layers).properties(
        height=ROC_PLOT_PX, autosize=alt.AutoSizeParams(type="fit-x", contains="padding")
    )


def latency_chart(
    latencies: pd.DataFrame, study_points: pd.DataFrame, order: Sequence[str]
) -> Spec:
    """Calls-to-detection per kind: whiskers min–max, box the middle half (quartiles), a thick
    black tick the median (visible even when every run took one call), and the study's
    median as a tick in the marker colour; each named in the legend."""
    order = list(order)
    names = ["min – max", "middle half (quartiles)", "median", "study: median"]
    colour = legend_colour(names, ["#5F5F5F", "#56B4E9", "#000000", MARKER])
    y = alt.Y("label:N", title=None, sort=order, axis=alt.Axis(labelLimit=300))
    x_title = "calls from the insertion point to the first alarm (calls; 1 = the inserted call)"
    stats = alt.Chart(latencies).transform_aggregate(
        lo="min(latency)",
        q1="q1(latency)",
        median="median(latency)",
        q3="q3(latency)",
        hi="max(latency)",
        runs="count()",
        groupby=["label"],
    )
    tooltip = [
        alt.Tooltip("label:N", title="kind"),
        alt.Tooltip("runs:Q", title="detected runs"),
        alt.Tooltip("median:Q", title="median"),
        alt.Tooltip("q1:Q", title="25th percentile"),
        alt.Tooltip("q3:Q", title="75th percentile"),
        alt.Tooltip("lo:Q", title="min"),
        alt.Tooltip("hi:Q", title="max"),
    ]
    whiskers = as_what(stats.mark_rule(strokeWidth=1.5), names[0]).encode(
        y=y, x=alt.X("lo:Q", title=x_title), x2="hi:Q", color=colour, tooltip=tooltip
    )
    box = as_what(stats.mark_bar(size=16, opacity=0.8), names[1]).encode(
        y=y, x="q1:Q", x2="q3:Q", color=colour, tooltip=tooltip
    )
    median = as_what(stats.mark_tick(thickness=4, size=22), names[2]).encode(
        y=y, x="median:Q", color=colour, tooltip=tooltip
    )
    layers: list[alt.Chart] = [whiskers, box, median]
    if not study_points.empty:
        layers.append(
            as_what(alt.Chart(study_points).mark_tick(thickness=3, size=26), names[3]).encode(
                y=alt.Y("label:N", sort=order),
                x="latency:Q",
                color=colour,
                tooltip=["label:N", alt.Tooltip("latency:Q", title="study median")],
            )
        )
    return alt.layer(*layers).properties(height=alt.Step(30))


def timeline_chart(
    calls: pd.DataFrame,
    scores: pd.DataFrame | None,
    statistic: str | None,
    threshold: float | None,
) -> Spec:
    """A session stream call by call: tools, gaps, sizes, then cue scores and the detector.

    ``calls``: ``index, tool, gap_s, same_response, response_group, input_bytes,
    output_bytes, failed, label, injected, alert``; ``scores``: ``index, cue, score``
    (long form) or None; ``statistic``/``threshold``: the detector column in ``calls``.
    """
    lanes = lane_labels(list(calls["tool"]))
    calls = calls.assign(lane=calls["tool"].map(lanes))
    width = panel_width(list(lanes.values()))
    x = alt.X(
        "index:Q",
        title="call in stream (0 = first)",
        scale=alt.Scale(domain=[-0.5, len(calls) - 0.5], nice=False, zero=False),
        axis=alt.Axis(tickMinStep=1, format="d"),
    )
    tooltip = [
        alt.Tooltip("index:Q", title="call"),
        alt.Tooltip("tool:N", title="tool"),
        alt.Tooltip("gap_s:Q", format=".2f", title="gap (s)"),
        alt.Tooltip("response_group:Q", title="response"),
        alt.Tooltip("input_bytes:Q", format=",", title="input (bytes)"),
        alt.Tooltip("output_bytes:Q", format=",", title="output (bytes)"),
        "failed:N",
        "label:N",
    ]
    highlight = (
        alt.Chart(calls[calls["injected"]])
        .mark_rect(color=PALETTE[1], opacity=0.18)
        .encode(x=alt.X("lo:Q"), x2="hi:Q", tooltip=["label:N"])
        .transform_calculate(lo="datum.index - 0.5", hi="datum.index + 0.5")
    )

    def panel(chart: alt.Chart, height: int) -> Spec:
        return alt.layer(highlight, chart).properties(width=width, height=height)

    tools = (
        alt.Chart(calls)
        .mark_point(filled=True, size=60)
        .encode(
            x=x,
            y=alt.Y(
                "lane:N",
                title="tool",
                sort=None,
                axis=alt.Axis(
                    labelLimit=alt.ExprRef(
                        expr=f"{NARROW} ? {PHONE_LANE_LABEL_PX} : {LANE_LABEL_PX}"
                    ),
                    labelExpr=phone_label_expr(lanes, NARROW),
                ),
            ),
            color=alt.Color(
                "failed:N",
                scale=alt.Scale(domain=[False, True], range=[OURS, MARKER]),
                title="failed",
                legend=bottom_legend(),
            ),
            shape=alt.Shape(
                "injected:N",
                scale=alt.Scale(domain=[False, True], range=["circle", "diamond"]),
                title="injected",
                legend=bottom_legend(),
            ),
            tooltip=tooltip,
        )
    )
    n_tools = max(1, calls["tool"].nunique())
    gaps = (
        alt.Chart(calls[calls["gap_s"].notna()])
        .mark_circle(size=45, opacity=0.9)
        .encode(
            x=x,
            y=alt.Y(
                "gap_plot:Q", title="gap to the previous call (s, log)", scale=alt.Scale(type="log")
            ),
            color=alt.Color(
                "same_response:N",
                title="same response",
                scale=alt.Scale(domain=[True, False], range=[PALETTE[2], PALETTE[3]]),
                legend=bottom_legend(),
            ),
            tooltip=tooltip,
        )
        .transform_calculate(gap_plot="max(datum.gap_s, 0.001)")
    )
    sizes = (
        alt.Chart(calls)
        .transform_fold(["input_bytes", "output_bytes"], as_=["field", "bytes"])
        .transform_filter("datum.bytes != null")
        .transform_calculate(
            bytes_plot="max(datum.bytes, 1)",
            direction="datum.field == 'input_bytes' ? 'input' : 'output'",  # a legend in words
        )
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("bytes_plot:Q", title="size (bytes, log)", scale=alt.Scale(type="log")),
            color=alt.Color(
                "direction:N",
                title="size",
                scale=alt.Scale(domain=["input", "output"], range=[PALETTE[0], PALETTE[1]]),
                legend=bottom_legend(),
            ),
            tooltip=tooltip,
        )
    )
    panels = [panel(tools, 18 * n_tools + 20), panel(gaps, 90), panel(sizes, 90)]
    if scores is not None and statistic is not None:
        cues = list(dict.fromkeys(scores["cue"]))
        cue_lines = (
            alt.Chart(scores)
            .mark_line(point=True)
            .encode(
                x=x,
                y=alt.Y("score:Q", title="cue score (standardised)"),
                color=alt.Color(
                    "cue:N", title="cue", scale=category_scale(cues), legend=bottom_legend()
                ),
                tooltip=["index:Q", "cue:N", alt.Tooltip("score:Q", format=".2f")],
            )
        )
        names = [statistic, "threshold (operating point)", "alert"]
        colour = legend_colour(names, ["#1f2d3d", MARKER, MARKER], "detector")
        stat = as_what(alt.Chart(calls).mark_line(point=True), names[0]).encode(
            x=x,
            y=alt.Y(f"{statistic}:Q", title=f"{statistic} (standardised)"),
            color=colour,
            tooltip=["index:Q", "tool:N", alt.Tooltip(f"{statistic}:Q", format=".2f")],
        )
        layers: list[alt.Chart] = [stat]
        if threshold is not None:
            layers.append(
                as_what(
                    alt.Chart(pd.DataFrame({"threshold": [threshold]})).mark_rule(
                        strokeDash=[6, 3]
                    ),
                    names[1],
                ).encode(y="threshold:Q", color=colour)
            )
        alerts = calls[calls["alert"]]
        if not alerts.empty:
            layers.append(
                as_what(
                    alt.Chart(alerts).mark_point(shape="triangle-down", size=160, filled=True),
                    names[2],
                ).encode(
                    x=x,
                    y=f"{statistic}:Q",
                    color=colour,
                    tooltip=["index:Q", "tool:N", "alert_by:N"],
                )
            )
        panels += [
            panel(cue_lines, 120),
            alt.layer(highlight, *layers).properties(width=width, height=140),
        ]
    # fit-x: Streamlit gives every panel the container's width and Vega narrows them by the lane
    # labels and axes, so the timeline fits a phone as well as a 1,400 px window (it kept its
    # own 886 px and ran off a 390 px screen); legends sit under their panels for the same reason
    return (
        alt.vconcat(*panels)
        .resolve_scale(color="independent", shape="independent")
        .properties(autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    )


def heatmap(
    cells: pd.DataFrame, x: str, y: str, x_title: str, y_title: str, text: str = "text"
) -> Spec:
    """Pass rates as coloured cells with their text (``rate`` in [0, 1], NaN = none) on
    viridis; the text turns white on the scale's dark (low) half."""
    base = alt.Chart(cells).encode(
        x=alt.X(
            f"{x}:N",
            title=x_title,
            sort=None,
            axis=alt.Axis(labelAngle=0, labelLimit=200, orient="top"),
        ),
        y=alt.Y(f"{y}:N", title=y_title, sort=None),
    )
    rects = base.mark_rect().encode(
        color=alt.Color(
            "rate:Q",
            scale=PASS_SCALE,
            title="pass rate (%)",
            legend=alt.Legend(format="%", orient="bottom", direction="horizontal"),
        ),
        tooltip=[f"{y}:N", f"{x}:N", f"{text}:N"],
    )
    labels = base.mark_text(fontSize=12).encode(
        text=f"{text}:N",
        color=alt.condition("datum.rate < 0.55", alt.value("white"), alt.value("black")),
    )
    return alt.layer(rects, labels).properties(height=alt.Step(30))


def trajectories_chart(steps: pd.DataFrame, divergence: pd.DataFrame) -> Spec:
    """Runs side by side, one row each, step by step: tool (colour), failure (shape),
    injected responses (outlined), the first divergence from the clean run (rule)."""
    rows = list(dict.fromkeys(steps["run"]))
    points = (
        alt.Chart(steps)
        .mark_point(size=220, filled=True, strokeWidth=3)
        .encode(
            x=alt.X("step:O", title="step (tool call)", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("run:N", title=None, sort=rows, axis=alt.Axis(labelLimit=260)),
            color=alt.Color(
                "tool:N", title="tool", scale=category_scale(sorted(set(steps["tool"])))
            ),
            shape=alt.Shape(
                "outcome:N",
                title="outcome",
                scale=alt.Scale(domain=["ok", "failed"], range=["circle", "cross"]),
            ),
            stroke=alt.condition("datum.injected", alt.value(MARKER), alt.value(None)),
            tooltip=[
                "run:N",
                "step:O",
                "tool:N",
                "outcome:N",
                "error_type:N",
                "label:N",
                "input_bytes:Q",
                "output_bytes:Q",
            ],
        )
    )
    layers: list[alt.Chart] = [points]
    if not divergence.empty:
        layers.append(
            marker_ticks(
                divergence,
                30,
                x="step:O",
                y=alt.Y("run:N", sort=rows),
                tooltip=["run:N", "step:O", "reason:N"],
            )
        )
    return alt.layer(*layers).properties(height=46 * max(1, len(rows)))
