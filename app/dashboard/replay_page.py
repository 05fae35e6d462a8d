"""Replay: a saved ``toolwatch replay`` — per week the normal streams alarming against the
target and twice the target, the threshold and the injected copies detected, the adaptive
model beside the frozen one, and detection at one threshold for the whole replay.

Every figure is the report's own string (:mod:`toolwatch.injection.experiment.replay_report`)
of the summary the ``replays`` rows give back
(:func:`~toolwatch.injection.experiment.replay_storage.summary_from_rows`), so the page shows
what the command printed for that run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from toolwatch.app.dashboard import hints, html_table, time_charts, ui
from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard import url_state as url
from toolwatch.injection.experiment.formats import target_pct
from toolwatch.injection.experiment.replay import BEYOND_P, MODELS, THIN_WEEK
from toolwatch.injection.experiment.replay_report import (
    alarm_text,
    artefact_lines,
    beyond_text,
    counts_line,
    detection_text,
    header,
    kinds_of,
    level_text,
    p_value,
    short,
    total_cells,
    week_cells,
    week_name,
)
from toolwatch.injection.experiment.replay_storage import summary_from_rows


def render() -> None:
    s = ui.settings()
    st.title("Replay")
    st.caption(
        "The store's test split driven through the live scorer in time order "
        "(`toolwatch replay`): the share of normal streams alerts would flag week after week, "
        "the adaptive model beside the frozen one, and injected copies caught."
    )
    with q.open_store(s.store) as con:
        if not q.has_rows(con, q.REPLAYS):
            st.info(
                f"No replay results in the store {s.store} yet. Fill it with "
                f"{hints.experiment_hint(con, s.store, 'replay')}."
            )
            return
        run_id = _choose_run(q.replay_list(con))
        data = summary_from_rows(q.replay_rows(con, run_id))
    _headline(data)
    ui.flush()
    _chart(data)
    _weeks(data)
    _models(data)
    _configuration(data, s.store)


def _choose_run(runs: pd.DataFrame) -> str:
    def describe(run_id: str) -> str:
        r = runs[runs["run_id"] == run_id].iloc[0]
        created = pd.Timestamp(r["created"]).strftime("%Y-%m-%d %H:%M UTC")
        seeds = len(str(r["seeds"]).split(","))
        return (
            f"{run_id} · {created} · {ui.counted(r['streams'], 'normal stream')} over "
            f"{ui.counted(r['weeks'], 'week')} × {ui.counted(seeds, 'seed')} · "
            f"{r['statistic']} at {target_pct(float(r['fa_target']))}"
        )

    ids = [str(r) for r in runs["run_id"]]
    return url.choice(st, "Replay run", ids, "replay", format_func=describe)


def _target(data: dict[str, Any]) -> float:
    return float(data["config"]["experiment"]["target_fa"])


def _headline(data: dict[str, Any]) -> None:
    target = _target(data)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Target", target_pct(target), help="share of normal streams asked to alarm")
    for where, model in zip((m2, m3), MODELS, strict=True):
        t = data["totals"][model]
        where.metric(  # "adaptive: normal streams alarming" was cut off beside three others
            f"{model}: alarming",
            alarm_text(t["alarmed"], t["streams"]),
            help="normal long test streams that alarmed at least once, over the whole replay",
        )
    thin = sum(1 for w in data["weeks"] if w["thin"])
    m4.metric("Weeks", f"{len(data['weeks'])}", help=f"{thin} thin (< {THIN_WEEK} streams)")
    st.caption(" ".join(header(data)))


def _chart(data: dict[str, Any]) -> None:
    target = _target(data)
    rows = [
        {
            "week": w["week"],
            "what": model,
            "rate": w["alarmed"][model] / w["streams"],
            "alarming": alarm_text(w["alarmed"][model], w["streams"]),
        }
        for w in data["weeks"]
        for model in MODELS
        if w["streams"]
    ]
    names = [*MODELS, f"target {target_pct(target)}", f"2× target {target_pct(2 * target)}"]
    st.subheader("Normal streams alarming per week")
    ui.chart(time_charts.weekly_alarms_chart(pd.DataFrame(rows), target, names))


#: A week keeps its date on one line ("2026-08-31 thin" broke after each hyphen).
WHOLE = html_table.Col(whole=True)


def _weeks(data: dict[str, Any]) -> None:
    """The report's weekly table, with each model's weeks above twice the target marked and
    those above it beyond chance given their p-value (the report lists them below its table)."""
    kinds = kinds_of(data)
    marks = {}
    for model in MODELS:
        t = data["totals"][model]
        beyond = {b["week"]: p_value(b["p"]) for b in t["weeks_over_2x_target_beyond_chance"]}
        marks[model] = (set(t["weeks_over_2x_target"]), beyond)
    rows = []
    for w in data["weeks"]:
        row: dict[str, str] = {"week": week_name(w), "streams": str(w["streams"])}
        for model in MODELS:
            over, beyond = marks[model]
            cells = week_cells(data, w, model)
            row.update(_model_columns(model, kinds, cells))
            chance = beyond.get(w["week"])
            marked = (["yes"] if w["week"] in over else []) + ([f"({chance})"] if chance else [])
            row[f"{model}: above 2× target"] = " ".join(marked)
        rows.append(row)
    total: dict[str, str] = {"week": "all", "streams": str(data["totals"]["adaptive"]["streams"])}
    for model in MODELS:
        total.update(_model_columns(model, kinds, total_cells(data, model)))
    rows.append(total)
    target = _target(data)
    st.subheader("Per week")
    # one table, a block per week on a phone (a grid showed its first three of ten columns)
    html_table.table(pd.DataFrame(rows).fillna(""), {"week": WHOLE}, key="weeks")
    st.caption(
        f"Weeks of the streams' first call (Monday, UTC); a week marked thin has fewer than "
        f"{THIN_WEEK} streams (one alarm there is already 1/n). Alarming: normal long streams "
        "that alarmed, k/n (the adaptive model's with its 95 % Wilson interval); threshold: the "
        "model's at the week's end; each kind: its injected copies detected in their window. "
        f"Above 2× target: a week after the first with more than {target_pct(2 * target)} "
        "alarming, beyond chance when its one-sided binomial p-value with each stream alarming "
        f"at {target_pct(2 * target)} is below {BEYOND_P:g} (shown after it)."
    )


def _model_columns(model: str, kinds: list[str], cells: list[str]) -> dict[str, str]:
    alarming = f"{model}: alarming" + (" (95% CI)" if model == "adaptive" else "")
    named = [alarming, f"{model}: threshold", *(f"{model}: {short(k)}" for k in kinds)]
    return dict(zip(named, cells, strict=True))


def _models(data: dict[str, Any]) -> None:
    """Adaptive beside frozen over the whole replay, and detection at one threshold for the
    whole replay (the experiment's rule; on a thin split also at the next level up)."""
    kinds = kinds_of(data)
    n_weeks = len(data["weeks"])
    rows = []
    for model in MODELS:
        t = data["totals"][model]
        oracle = t["oracle"]
        up = oracle.get("next_level")
        row = {
            "model": model,
            "normal streams alarming": alarm_text(
                t["alarmed"], t["streams"], interval=model == "adaptive"
            ),
            "weeks above 2× target": f"{len(t['weeks_over_2x_target'])} of {n_weeks - 1}",
            f"of them ≥ {THIN_WEEK} streams": str(len(t["full_weeks_over_2x_target"])),
            "beyond chance": beyond_text(t["weeks_over_2x_target_beyond_chance"]),
            "one threshold: alarming, threshold": level_text(oracle, t["streams"]),
            **{f"one threshold: {short(k)}": detection_text(oracle["detection"][k]) for k in kinds},
        }
        if up is not None:
            row["next level: alarming, threshold"] = level_text(up, t["streams"])
            row.update(
                {f"next level: {short(k)}": detection_text(up["detection"][k]) for k in kinds}
            )
        rows.append(row)
    st.subheader("Adaptive beside frozen")
    html_table.table(pd.DataFrame(rows).fillna(""), key="models")
    st.caption(
        "One threshold: the experiment's rule applied to the replayed scores — the one "
        "threshold for the whole replay at which at most the target of the normal streams "
        "alarm (it looks at the whole replay); next level: the next reachable level above the "
        "target, given when there are fewer than 50 normal streams. "
        + counts_line(data)
        + "."
        + "".join(f" {line}." for line in artefact_lines(data))
    )


def _configuration(data: dict[str, Any], store: Path) -> None:
    with st.expander("Split and configuration (saved with the results)"):
        split = data["split"]
        rows = [
            {"split": name, "streams": ui.count(split[name][0]), "calls": ui.count(split[name][1])}
            for name in ("train", "calibration", "test")
        ]
        html_table.table(pd.DataFrame(rows), key="replay_split", height=None)
        st.json(data["config"], expanded=False)
        st.caption(
            f"Re-run exactly: `toolwatch replay --store {hints.store_arg(store)} "
            f"--rerun {data['run_id']}`"
        )


if __name__ == "__main__":
    render()
