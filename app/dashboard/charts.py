"""Altair charts of the dashboard: pure functions from frames to chart specs (no Streamlit).

Keeping them apart from the pages lets the tests check what a chart encodes (its data and
fields) without a browser.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import altair as alt
import pandas as pd

#: Any top-level chart these functions return (altair's ``properties`` widens the types).
Spec: TypeAlias = alt.Chart | alt.LayerChart | alt.VConcatChart | alt.FacetChart

PASS_SCALE = alt.Scale(domain=[0, 1], scheme="redyellowgreen")
#: Marks that stand out from the data: the study's figures, divergence steps, thresholds.
MARKER = "#e45756"


def marker_ticks(data: pd.DataFrame, size: int, **encoding: Any) -> alt.Chart:
    """Thick ticks in the marker colour (the study's figure beside ours, a divergence step)."""
    return alt.Chart(data).mark_tick(color=MARKER, thickness=3, size=size).encode(**encoding)


def detection_bars(table: pd.DataFrame, title: str) -> Spec:
    """Our detection rate per kind (bar + 95 % interval) with the study's published rate.

    ``table``: ``kind, label, rate, ci_low, ci_high, study_rate`` (study_rate may be NaN).
    """
    order = list(table["label"])
    base = alt.Chart(table).encode(
        y=alt.Y("label:N", title=None, sort=order, axis=alt.Axis(labelLimit=260)),
    )
    bars = base.mark_bar(color="#4c78a8", opacity=0.85).encode(
        x=alt.X(
            "rate:Q",
            title="detection rate",
            scale=alt.Scale(domain=[0, 1]),
            axis=alt.Axis(format="%"),
        ),
        tooltip=[
            alt.Tooltip("label:N", title="kind"),
            alt.Tooltip("rate:Q", format=".1%", title="ours"),
            alt.Tooltip("ci_low:Q", format=".1%", title="95% low"),
            alt.Tooltip("ci_high:Q", format=".1%", title="95% high"),
            alt.Tooltip("study_rate:Q", format=".0%", title="study"),
        ],
    )
    errors = base.mark_rule(color="#1f2d3d").encode(x="ci_low:Q", x2="ci_high:Q")
    published = marker_ticks(
        table.dropna(subset=["study_rate"]), 18, y=alt.Y("label:N", sort=order), x="study_rate:Q"
    )
    return alt.layer(bars, errors, published).properties(title=title, height=alt.Step(26))


def roc_chart(
    points: pd.DataFrame,
    areas: pd.DataFrame,
    target: float | None,
    order: Sequence[str] | None = None,
) -> Spec:
    """Detection rate against session false-alarm rate, one line per kind (AUC in the legend,
    kinds in ``order`` of their labels when given)."""
    named = points.merge(areas, on="kind")
    named["curve"] = named["label"] + "  (AUC " + named["auc"].map("{:.2f}".format) + ")"
    curves = list(dict.fromkeys(named["curve"]))
    if order is not None:
        rank = {label: i for i, label in enumerate(order)}
        curves.sort(key=lambda c: rank.get(c.rsplit("  (AUC", 1)[0], len(rank)))
    lines = (
        alt.Chart(named)
        .mark_line(interpolate="linear", strokeWidth=2)
        .encode(
            x=alt.X(
                "false_alarm:Q",
                title="normal sessions alarming (false-alarm rate)",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%"),
            ),
            y=alt.Y(
                "detection:Q",
                title="injected runs detected",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%"),
            ),
            color=alt.Color(
                "curve:N",
                title="kind (area under curve)",
                sort=curves,
                legend=alt.Legend(labelLimit=420, orient="bottom", columns=2),
            ),
            order=alt.Order("step:Q", sort="descending"),
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
    return alt.layer(*layers).properties(height=420)


def latency_chart(
    latencies: pd.DataFrame, study_points: pd.DataFrame, order: Sequence[str]
) -> Spec:
    """Distribution of calls-to-detection per kind (box plot), the study's median as a tick."""
    order = list(order)
    box = (
        alt.Chart(latencies)
        .mark_boxplot(extent="min-max", size=18)
        .encode(
            y=alt.Y("label:N", title=None, sort=order, axis=alt.Axis(labelLimit=260)),
            x=alt.X("latency:Q", title="calls from the insertion point to the first alarm"),
        )
    )
    layers: list[alt.Chart] = [box]
    if not study_points.empty:
        layers.append(
            marker_ticks(
                study_points,
                22,
                y=alt.Y("label:N", sort=order),
                x="latency:Q",
                tooltip=["label:N", alt.Tooltip("latency:Q", title="study median")],
            )
        )
    return alt.layer(*layers).properties(height=alt.Step(26))


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
    width = 760
    x = alt.X(
        "index:Q",
        title="call in stream",
        scale=alt.Scale(domain=[-0.5, len(calls) - 0.5], nice=False, zero=False),
        axis=alt.Axis(tickMinStep=1, format="d"),
    )
    tooltip = [
        "index:Q",
        "tool:N",
        alt.Tooltip("gap_s:Q", format=".2f", title="gap s"),
        "response_group:Q",
        "input_bytes:Q",
        "output_bytes:Q",
        "failed:N",
        "label:N",
    ]
    highlight = (
        alt.Chart(calls[calls["injected"]])
        .mark_rect(color="#f58518", opacity=0.18)
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
            y=alt.Y("tool:N", title=None, sort=None),
            color=alt.Color(
                "failed:N",
                scale=alt.Scale(domain=[False, True], range=["#4c78a8", MARKER]),
                title="failed",
            ),
            shape=alt.Shape(
                "injected:N",
                scale=alt.Scale(domain=[False, True], range=["circle", "diamond"]),
                title="injected",
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
            y=alt.Y("gap_plot:Q", title="gap (s, log)", scale=alt.Scale(type="log")),
            color=alt.Color(
                "same_response:N",
                title="same response",
                scale=alt.Scale(domain=[True, False], range=["#72b7b2", "#b279a2"]),
            ),
            tooltip=tooltip,
        )
        .transform_calculate(gap_plot="max(datum.gap_s, 0.001)")
    )
    sizes = (
        alt.Chart(calls)
        .transform_fold(["input_bytes", "output_bytes"], as_=["direction", "bytes"])
        .transform_filter("datum.bytes != null")
        .transform_calculate(bytes_plot="max(datum.bytes, 1)")
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("bytes_plot:Q", title="bytes (log)", scale=alt.Scale(type="log")),
            color=alt.Color("direction:N", title="size"),
            tooltip=tooltip,
        )
    )
    panels = [panel(tools, 18 * n_tools + 20), panel(gaps, 90), panel(sizes, 90)]
    if scores is not None and statistic is not None:
        cue_lines = (
            alt.Chart(scores)
            .mark_line(point=True)
            .encode(
                x=x,
                y=alt.Y("score:Q", title="cue score"),
                color=alt.Color("cue:N"),
                tooltip=["index:Q", "cue:N", alt.Tooltip("score:Q", format=".2f")],
            )
        )
        stat = (
            alt.Chart(calls)
            .mark_line(point=True, color="#1f2d3d")
            .encode(
                x=x,
                y=alt.Y(f"{statistic}:Q", title=statistic),
                tooltip=["index:Q", "tool:N", alt.Tooltip(f"{statistic}:Q", format=".2f")],
            )
        )
        layers: list[alt.Chart] = [stat]
        if threshold is not None:
            layers.append(
                alt.Chart(pd.DataFrame({"threshold": [threshold]}))
                .mark_rule(color=MARKER, strokeDash=[6, 3])
                .encode(y="threshold:Q")
            )
        alerts = calls[calls["alert"]]
        if not alerts.empty:
            layers.append(
                alt.Chart(alerts)
                .mark_point(shape="triangle-down", size=160, filled=True, color=MARKER)
                .encode(x=x, y=f"{statistic}:Q", tooltip=["index:Q", "tool:N", "alert_by:N"])
            )
        panels += [
            panel(cue_lines, 120),
            alt.layer(highlight, *layers).properties(width=width, height=140),
        ]
    return alt.vconcat(*panels).resolve_scale(color="independent", shape="independent")


def heatmap(
    cells: pd.DataFrame, x: str, y: str, x_title: str, y_title: str, text: str = "text"
) -> Spec:
    """Pass rates as coloured cells with their text (``rate`` in [0, 1], NaN = none); the text
    turns white on the dark ends of the scale."""
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
            title="pass rate",
            legend=alt.Legend(format="%", orient="bottom", direction="horizontal"),
        ),
        tooltip=[f"{y}:N", f"{x}:N", f"{text}:N"],
    )
    labels = base.mark_text(fontSize=12).encode(
        text=f"{text}:N",
        color=alt.condition(
            "datum.rate < 0.2 || datum.rate > 0.8", alt.value("white"), alt.value("black")
        ),
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
            color=alt.Color("tool:N", title="tool"),
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


def alerts_per_hour_chart(
    per_hour: pd.DataFrame, title: str, now: pd.Timestamp | None = None
) -> Spec:
    """Alerts per UTC hour, stacked by the explaining cue; each bar spans its hour. With
    ``now``, the axis runs to the current hour and covers at least the last 24 hours, so quiet
    hours show as gaps rather than vanishing."""
    scale: alt.Scale | Any = alt.Undefined
    if now is not None:
        end = pd.Timestamp(now).floor("h") + pd.Timedelta(hours=1)
        start = end - pd.Timedelta(hours=24)
        if not per_hour.empty:
            start = min(start, pd.Timestamp(per_hour["hour"].min()).floor("h"))
        # ISO strings: epoch numbers are not read as times once a time unit is applied
        scale = alt.Scale(domain=[start.isoformat(), end.isoformat()])
    return (
        alt.Chart(per_hour)
        .mark_bar()
        .encode(
            x=alt.X(
                "utcyearmonthdatehours(hour):T",
                title="hour (UTC)",
                scale=scale,
                axis=alt.Axis(format="%m-%d %H:00", labelAngle=0),
            ),
            y=alt.Y("alerts:Q", title="alerts", axis=alt.Axis(tickMinStep=1, format="d")),
            color=alt.Color("cue:N", title="explaining cue"),
            tooltip=[
                alt.Tooltip("utcyearmonthdatehours(hour):T", format="%Y-%m-%d %H:00", title="hour"),
                "cue:N",
                "alerts:Q",
            ],
        )
        .properties(title=title, height=220)
    )


def calls_per_day_chart(per_day: pd.DataFrame) -> Spec:
    return (
        alt.Chart(per_day)
        .mark_bar()
        .encode(
            x=alt.X("day:T", title="day (UTC)"),
            y=alt.Y("calls:Q", title="calls"),
            color=alt.Color("source:N"),
            tooltip=["day:T", "source:N", "calls:Q"],
        )
        .properties(height=200)
    )
