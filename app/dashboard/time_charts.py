"""Altair charts over calendar time: alerts per hour (Live), calls per day (Corpus), normal
streams alarming per week (Replay). Pure functions from frames to chart specs, as
:mod:`.charts`, whose palette and legends they share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import pandas as pd

from toolwatch.app.dashboard.charts import (
    MARKER,
    OURS,
    PALETTE,
    Spec,
    bottom_legend,
    category_scale,
    legend_colour,
)

#: The alerts-per-hour plot's height (px).
HOURS_PLOT_PX = 220


def alerts_per_hour_chart(
    per_hour: pd.DataFrame, title: str, now: pd.Timestamp | None = None, subtitle: str = ""
) -> Spec:
    """Alerts per UTC hour, stacked by the explaining cue; each bar spans its hour. With
    ``now``, the axis runs to the current hour and covers at least the last 24 hours, so quiet
    hours show as gaps rather than vanishing. The title's detail goes in ``subtitle``, a line
    of its own, and the legend under the plot (:func:`bottom_legend`): on a 390 px phone a
    one-line title ran off the screen and a legend on the right took a third of the plot."""
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
            y=alt.Y("alerts:Q", title="alerts per hour", axis=alt.Axis(tickMinStep=1, format="d")),
            color=alt.Color(
                "cue:N",
                title="explaining cue",
                scale=category_scale(sorted(set(per_hour["cue"]))),
                legend=bottom_legend(),
            ),
            tooltip=[
                alt.Tooltip("utcyearmonthdatehours(hour):T", format="%Y-%m-%d %H:00", title="hour"),
                "cue:N",
                "alerts:Q",
            ],
        )
        .properties(
            title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined, anchor="start"),
            height=HOURS_PLOT_PX,
            # the plot keeps its height under a legend stacked one entry a row on a phone
            autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
        )
    )


#: A source whose calls span at most this many days gets a bar per day with its own label (a band
#: axis, empty days included): a time axis over a day or two ticked every few hours, each tick
#: labelled with the same date.
FEW_DAYS = 31
DAYS_PX = 680
#: The widest a day's bar is drawn (px), and the share of its day's band it takes.
DAY_BAR_MAX_PX, DAY_BAR_SHARE = 36, 0.7
#: The calls-per-day chart's parts beside a row's plot: the y axis with its title and padding.
DAYS_CHROME_PX = 80


def calls_per_day_chart(per_day: pd.DataFrame) -> Spec:
    """Calls per UTC day, one row per source with its own date axis: a collector's live calls
    of today do not stretch a months-old import or simulation across an empty axis."""
    sources = sorted(set(per_day["source"]))
    colour = alt.Color(
        "source:N", title="source", scale=category_scale(sources), legend=bottom_legend()
    )
    rows = [_day_row(per_day[per_day["source"] == src], src, colour) for src in sources]
    return alt.vconcat(*rows).resolve_scale(x="independent", y="independent")


def _day_row(part: pd.DataFrame, source: str, colour: alt.Color) -> alt.Chart:
    """One source's calls per day: a labelled bar per day over :data:`FEW_DAYS` days or fewer,
    a time axis over more."""
    days = pd.to_datetime(part["day"])
    y = alt.Y("calls:Q", title="calls per day", axis=alt.Axis(format=",d"))
    calls = alt.Tooltip("calls:Q", format=",", title="calls")
    if (days.max() - days.min()).days < FEW_DAYS:
        every = pd.date_range(days.min(), days.max(), freq="D").strftime("%Y-%m-%d")
        counts = dict(zip(days.dt.strftime("%Y-%m-%d"), part["calls"], strict=True))
        data = pd.DataFrame(
            {"date": every, "source": source, "calls": [int(counts.get(d, 0)) for d in every]}
        )
        x = alt.X("date:O", title="day (UTC)", sort=None, axis=alt.Axis(labelAngle=0))
        tooltip = [alt.Tooltip("date:N", title="day (UTC)"), "source:N", calls]
        bar = alt.Chart(data).mark_bar(size=_day_bar_size(len(every)))
    else:
        x = alt.X(
            "day:T",
            title="day (UTC)",
            scale=alt.Scale(type="utc"),  # the days are UTC: local time shifted their labels
            axis=alt.Axis(format="%Y-%m-%d", labelAngle=0, labelFlush=True),
        )
        tooltip = [
            alt.Tooltip("utcyearmonthdate(day):T", format="%Y-%m-%d", title="day (UTC)"),
            "source:N",
            calls,
        ]
        bar = alt.Chart(part).mark_bar()
    return bar.encode(x=x, y=y, color=colour, tooltip=tooltip).properties(
        height=160, width=DAYS_PX, title=alt.TitleParams(source, anchor="start")
    )


def _day_bar_size(days: int) -> alt.ExprRef:
    """A day's bar: :data:`DAY_BAR_SHARE` of its band, at least 4 and at most
    :data:`DAY_BAR_MAX_PX` px, from the container's width (Streamlit draws each row as wide as
    the page): a size fixed for :data:`DAYS_PX` overlapped the bars on a 390 px phone. The width
    before the container is known is :data:`DAYS_PX`; naming ``width`` re-sizes on a resize."""
    known = "isValid(width) && containerSize()[0] > 0"
    plot = f"({known} ? containerSize()[0] - {DAYS_CHROME_PX} : {DAYS_PX})"
    return alt.ExprRef(expr=f"max(4, min({DAY_BAR_MAX_PX}, {DAY_BAR_SHARE} * {plot} / {days}))")


def _mondays(weeks: pd.DataFrame) -> list[alt.DateTime]:
    """The weeks' Mondays (UTC), the x axis's ticks: Vega's own weekly ticks fell on Sundays in
    the browser's time zone, beside the Monday points, the first week unlabelled."""
    days = [pd.Timestamp(d) for d in sorted(set(weeks["week"]))] if not weeks.empty else []
    return [alt.DateTime(year=d.year, month=d.month, date=d.day, utc=True) for d in days]


#: The weekly chart's plot height (px); its axes and legend come on top.
WEEKS_PLOT_PX = 200
#: Its y scale, padded by :data:`WEEKS_Y_PAD_PX` beyond the data (not rounded out to a "nice"
#: value, which would add a -20 % tick): a week at 100 % sat on the plot's top edge and one at
#: 0 % on the x axis, half their point cut.
WEEKS_Y_PAD_PX = 10
WEEKS_Y_SCALE = alt.Scale(padding=WEEKS_Y_PAD_PX, nice=False)


def weekly_alarms_chart(weeks: pd.DataFrame, target: float, names: Sequence[str]) -> Spec:
    """A replay's share of normal streams alarming per week, one line per model, with the
    target and twice the target as dashed rules (each named in the legend).

    ``weeks``: ``week`` (ISO Monday), ``what`` (the model), ``rate``, ``alarming`` (``k/n``);
    ``names``: the legend's entries, the models then the two rules' names.
    """
    colour = legend_colour(names, [OURS, PALETTE[1], "#1f2d3d", MARKER][: len(names)])
    lines = (
        alt.Chart(weeks)
        .mark_line(point=alt.OverlayMarkDef(size=60, filled=True), strokeWidth=2)
        .encode(
            x=alt.X(
                "week:T",
                title="week (Monday, UTC)",
                scale=alt.Scale(type="utc"),
                axis=alt.Axis(format="%Y-%m-%d", labelFlush=True, values=_mondays(weeks)),
            ),
            y=alt.Y(
                "rate:Q",
                title="normal streams alarming (%)",
                axis=alt.Axis(format="%"),
                scale=WEEKS_Y_SCALE,
            ),
            color=colour,
            tooltip=[
                alt.Tooltip("utcyearmonthdate(week):T", format="%Y-%m-%d", title="week"),
                alt.Tooltip("what:N", title="model"),
                alt.Tooltip("alarming:N", title="alarming"),
            ],
        )
    )
    levels = pd.DataFrame({"what": list(names[-2:]), "level": [target, 2 * target]})
    rules = (
        alt.Chart(levels)
        .mark_rule(strokeDash=[6, 3], strokeWidth=1.5)
        .encode(
            y="level:Q",
            color=colour,
            tooltip=[alt.Tooltip("what:N", title="line"), alt.Tooltip("level:Q", format=".1%")],
        )
    )
    # fit-x: only the width fits the page, so a phone's legend of one entry a row does not
    # squash the plot (with "fit" the 260 px held the legend too and left the lines a hairline)
    return alt.layer(lines, rules).properties(
        height=WEEKS_PLOT_PX, autosize=alt.AutoSizeParams(type="fit-x", contains="padding")
    )
