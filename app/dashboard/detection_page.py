"""Detection: the study-style table at a chosen false-alarm target, ROC curves, latency.

Everything comes from the ``experiments`` / ``experiment_runs`` views written by
``toolwatch experiment``; the study's published figures (:mod:`toolwatch.study`) sit beside.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from toolwatch import study
from toolwatch.app.dashboard import (
    charts,
    detection_latency,
    detection_split,
    hints,
    html_table,
    ui,
)
from toolwatch.app.dashboard import detection_view as dv
from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard import url_state as url
from toolwatch.app.dashboard.html_table import Col
from toolwatch.detection import CUE_SETS, DETECTORS
from toolwatch.injection.experiment.config import THIN_TEST
from toolwatch.injection.experiment.formats import rate_ci, target_pct
from toolwatch.injection.experiment.levels import (
    level_sentence,
    thin_calibration_text,
    thin_test_text,
)
from toolwatch.injection.experiment.validity import CellLike, breaches_in, reacts_to_insertion

VARIANT_LABELS = {
    "standard": "with response ids",
    "no_response_ids": "response ids dropped (ablation)",
}
#: Points per ROC curve drawn (the areas use every threshold).
ROC_POINTS = 400
#: What the main table's short headers mean (their help, and the caption under the table).
LATENCY_HELP = (
    "the median number of calls from the insertion point to the first alarm (1 = the inserted "
    "call itself), over the detected runs"
)
AUC_HELP = (
    "per call, the study's measure: how well the all-cue score ranks each inserted call above "
    "every other call (0.5 = chance)"
)
MODE_TARGET = "target false-alarm rate"
MODE_OPERATING = "operating point"
#: URL value of the threshold mode -> its label
MODES = {"target": MODE_TARGET, "operating": MODE_OPERATING}


@st.cache_data(show_spinner="Reading the experiment's runs…", max_entries=8)
def _maxima(root: str, key: tuple[str, ...], run_id: str, variant: str) -> pd.DataFrame:
    with q.open_store(Path(root)) as con:
        return q.experiment_run_maxima(con, run_id, variant)


@st.cache_data(show_spinner="Reading the runs' maxima…", max_entries=16)
def _roc_data(
    root: str, key: tuple[str, ...], run_id: str, variant: str, cue_set: str, detector: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ROC points (at most :data:`ROC_POINTS` per curve, for the chart) and exact areas."""
    with q.open_store(Path(root)) as con:
        maxima = q.experiment_roc_maxima(con, run_id, variant, cue_set, detector)
    points, areas = dv.roc_curves(maxima)
    return dv.thin_curves(points, ROC_POINTS), areas


@st.cache_data(show_spinner="Evaluating the threshold…", max_entries=32)
def _cells_at(
    root: str,
    key: tuple[str, ...],
    run_id: str,
    variant: str,
    target: float,
    boot: int,
    seed: int,
    above: bool = False,
) -> pd.DataFrame:
    maxima = _maxima(root, key, run_id, variant)
    return dv.cells_at_target(maxima, target, boot, seed, above=above)


def cue_sets(stored: pd.DataFrame) -> list[str]:
    """The study's cue sets, then those beyond it that the run stored (novelty, provenance:
    the report's "Beyond the study" section), so each of the report's statistics can be shown."""
    extra = sorted(set(stored["cue_set"]) - set(CUE_SETS)) if not stored.empty else []
    return [*CUE_SETS, *extra]


def render() -> None:
    s = ui.settings()
    st.title("Detection")
    st.caption(
        "Injected anomalies against normal test streams (the study's protocol): detection "
        "within the window, at a threshold chosen on normal streams only."
    )
    with q.open_store(s.store) as con:
        if not q.has_rows(con, q.EXPERIMENTS):
            st.info(
                f"No experiment results in the store {s.store} yet. Fill it with "
                f"{hints.experiment_hint(con, s.store)}."
            )
            return
        runs = q.experiment_list(con)
        chosen = _choose_run(runs)
        config = json.loads(chosen["config_json"])
        split = json.loads(chosen["split_json"])
        variants = [v for v in chosen["variants"] if v in VARIANT_LABELS] or list(
            chosen["variants"]
        )
        c1, c2, c3 = st.columns([2, 2, 3])
        variant = url.choice(
            c1,
            "Corpus",
            variants,
            "variant",
            format_func=lambda v: VARIANT_LABELS.get(v, v),
            widget="radio",
        )
        stored = q.experiment_cells(con, chosen["run_id"], variant)
        cue_set = url.choice(c2, "Cue set", cue_sets(stored), "cue_set")
        detector = url.choice(c2, "Detector", list(DETECTORS), "detector", default="cusum")
        has_max = q.has_column(con, q.EXPERIMENT_RUNS, "window_max")
        mode_key = url.choice(
            c3,
            "Threshold",
            list(MODES),
            "mode",
            format_func=lambda m: MODES[m],
            widget="radio",
            horizontal=True,
        )
        mode = MODES[mode_key]
        stored_target = float(chosen["fa_target"])
        target = stored_target
        if mode == MODE_TARGET:
            if has_max:
                percent = c3.slider(
                    "Target: % of normal test streams that ever alarm",
                    min_value=0.0,
                    max_value=25.0,
                    value=round(100 * stored_target, 1),
                    step=0.5,
                    format="%.1f%%",
                    key="target",
                    help=f"The experiment's own target is {dv.pct(stored_target, 1)} "
                    "(the study's 5 %); other targets are evaluated from the stored runs.",
                )
                target = percent / 100
            else:
                c3.caption(
                    f"Target {dv.pct(stored_target, 1)} (the experiment's). Other targets need "
                    "the per-run maxima that newer `toolwatch experiment` runs save."
                )
        v = View(
            root=s.store,
            key=q.fingerprint(s.store, q.EXPERIMENTS, q.EXPERIMENT_RUNS),
            run=chosen,
            config=config,
            variant=variant,
            cue_set=cue_set,
            detector=detector,
            mode=mode,
            target=target,
            stored_target=stored_target,
            stored=stored,
            has_max=has_max,
            split=split,
        )
        cells, source = _cells(v)
        upper = next_level_cells(v)
        # statistics whose controls are detected above their false alarms (one pass per page)
        breached = breaches_in(cells.itertuples(index=False))
        _headline(v, cells, upper, breached)
        if "ci_exact" in cells and not cells["ci_exact"].all():
            st.warning(approximate_intervals(v))
        ui.flush()
        _table(v, cells, upper)
        _grid(cells, breached)
        st.caption(source)
        _roc(v)
        latency_note = (
            f"Shown at the experiment's own target {dv.pct(v.stored_target, 1)}: latency is "
            "recorded per run at the stored thresholds."
            if v.mode == MODE_TARGET and not v.at_stored_target
            else ""
        )
        detection_latency.show(
            q.experiment_latencies(
                con, v.run["run_id"], v.variant, v.cue_set, v.detector, v.threshold_mode
            ),
            f"{v.cue_set} · {v.detector}",
            latency_note,
        )
        detection_split.show(chosen, config, split, s.store)


@dataclass(frozen=True)
class View:
    """What the page shows: the run, corpus variant, statistic and threshold the user chose."""

    root: Path
    key: tuple[str, ...]  # file fingerprint of the experiment tables (cache key)
    run: dict[str, Any]
    config: dict[str, Any]
    variant: str
    cue_set: str
    detector: str
    mode: str
    target: float
    stored_target: float
    stored: pd.DataFrame  # the stored cells of this run and variant
    has_max: bool  # runs carry window maxima (other targets, ROC)
    split: dict[str, Any]  # the run's saved split summary (streams / calls per split)

    @property
    def at_stored_target(self) -> bool:
        return math.isclose(self.target, self.stored_target, abs_tol=1e-9)

    @property
    def threshold_mode(self) -> str:
        return "operating_point" if self.mode == MODE_OPERATING else "fa_target"

    def pick(self, cells: pd.DataFrame) -> pd.DataFrame:
        """The cells of the chosen cue set and detector."""
        return cells[(cells["cue_set"] == self.cue_set) & (cells["detector"] == self.detector)]


def _choose_run(runs: pd.DataFrame) -> dict[str, Any]:
    def describe(i: int) -> str:
        r = runs.iloc[i]
        created = pd.Timestamp(r["created"]).strftime("%Y-%m-%d %H:%M UTC")
        seeds = len(str(r["seeds"]).split(","))
        streams = ui.counted(r["normal_sessions"], "test stream")
        return f"{r['run_id']} · {created} · {streams} × {ui.counted(seeds, 'seed')}"

    ids = [str(r) for r in runs["run_id"]]
    position = {run_id: i for i, run_id in enumerate(ids)}
    run_id = url.choice(
        st, "Experiment run", ids, "run", format_func=lambda r: describe(position[r])
    )
    return dict(runs.iloc[position.get(run_id, 0)])


def _cells(v: View) -> tuple[pd.DataFrame, str]:
    """The cells to show and a sentence saying where they come from."""
    boot = int(v.config.get("bootstrap", 2000))
    resamples = ui.counted(boot, "bootstrap resample")
    seed = int(v.config.get("bootstrap_seed", 0))
    stored = v.stored
    if v.mode == MODE_OPERATING:
        cells = stored[stored["threshold_mode"] == "operating_point"]
        return cells, (
            "Operating point: the model's threshold (top 0.1 % of calibration call statistics); "
            "its false-alarm rate is the share of normal test streams that alarm at it. "
            f"95 % intervals: {resamples} of streams (seed {seed})."
        )
    if v.at_stored_target:
        cells = stored[stored["threshold_mode"] == "fa_target"]
        return cells, (
            f"As stored by `toolwatch experiment` (run {v.run['run_id']}). 95 % intervals: "
            f"{resamples} of streams (seed {seed})."
        )
    computed = _cells_at(
        str(v.root), v.key, v.run["run_id"], v.variant, float(v.target), boot, seed
    )
    auc = stored[stored["threshold_mode"] == "fa_target"][["kind", "cue_set", "auc"]]
    auc = auc.drop_duplicates(["kind", "cue_set"])
    cells = computed.merge(auc, on=["kind", "cue_set"], how="left")
    cells["median_latency"] = math.nan
    exact = bool(cells["ci_exact"].all())
    return cells, (
        f"Evaluated at {dv.pct(v.target, 1)} from the runs' stored window maxima with the "
        f"experiment's threshold rule; 95 % intervals: {resamples} of streams (seed {seed})"
        + (
            f", as `toolwatch experiment --rerun {v.run['run_id']} --target-fa "
            f"{v.target:g}` prints them"
            if exact
            else ", approximate (see above)"
        )
        + ". Latency is recorded at the experiment's own thresholds only."
    )


def next_level_cells(v: View) -> pd.DataFrame:
    """On a thin test split at a target, detection at the next reachable level above it (the
    report's ``fa_next`` column): stored at the run's own target, computed from the window
    maxima at any other (what ``--rerun RUN --target-fa X`` prints); else none."""
    n = int(v.split.get("test", [0])[0])
    if v.mode != MODE_TARGET or not n or n >= THIN_TEST or v.target >= 1:
        return v.stored.iloc[0:0]
    if v.at_stored_target:
        return v.stored[v.stored["threshold_mode"] == "fa_next"]
    if not v.has_max:
        return v.stored.iloc[0:0]
    boot = int(v.config.get("bootstrap", 2000))
    seed = int(v.config.get("bootstrap_seed", 0))
    key = (str(v.root), v.key, v.run["run_id"], v.variant, float(v.target), boot, seed)
    return _cells_at(*key, above=True)


def approximate_intervals(v: View) -> str:
    """Why a run saved before ``experiment_runs.stream_index`` gets approximate intervals at
    another target: said on the page, never a different number shown silently."""
    return (
        f"The 95 % intervals at {dv.pct(v.target, 1)} are approximate: run {v.run['run_id']} was "
        "saved before the experiment stored each test stream's place in its resampling order, "
        "so the page resamples the streams in name order and an interval can differ from what "
        f"`toolwatch experiment --rerun {v.run['run_id']} --target-fa {v.target:g}` prints "
        "(the rates and runs are exact). A run saved by this version is reproduced exactly."
    )


def _headline(
    v: View,
    cells: pd.DataFrame,
    upper: pd.DataFrame,
    breached: Mapping[tuple[str, str], CellLike],
) -> None:
    picked = v.pick(cells)
    if picked.empty:
        st.warning(f"No results for {v.cue_set}·{v.detector} in this run.")
        return
    first = picked.iloc[0]
    n = int(v.stored["normal_sessions"].iloc[0]) if not v.stored.empty else 0
    reached = float(first["fa_reached"])
    k = round(reached * n)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Threshold", f"{float(first['threshold']):.2f}", help=f"on {v.cue_set}·{v.detector}")
    m2.metric(
        "False alarms reached",
        dv.pct(reached, 1),
        help="share of normal test streams whose statistic ever crosses the threshold",
    )
    m3.metric("Normal streams alarming", f"{k} / {n}")
    if v.mode == MODE_TARGET:  # the stored target as asked (5.25% stays 5.25%), as the CLI
        m4.metric("Target", target_pct(v.target) if v.at_stored_target else dv.pct(v.target, 1))
    else:
        m4.metric("Mode", "operating point")
    if (breach := breached.get((v.cue_set, v.detector))) is not None:
        st.warning(
            reacts_to_insertion(f"{v.cue_set}·{v.detector}", breach)
            + ", so its detection rates measure the edit, not the anomaly."
        )
    for warning in split_warnings(v, cells, upper):
        st.warning(warning)


def _level(v: View, cells: pd.DataFrame) -> str:
    """The level the chosen statistic reached in ``cells``, said as the report says it."""
    cells = v.pick(cells)
    if cells.empty:
        return "–"
    n = int(cells["normal_sessions"].iloc[0])
    return level_sentence(float(cells["fa_reached"].iloc[0]), n)


def _stored(v: View, mode: str) -> pd.DataFrame:
    return v.stored[v.stored["threshold_mode"] == mode]


def split_warnings(v: View, cells: pd.DataFrame, upper: pd.DataFrame) -> list[str]:
    """The report's warnings about the run's split (``--json``'s ``warnings``), in its words:
    a thin test split (coarse levels; the two nearest the target shown, of the statistic
    shown: at another target than the run's, the levels nearest it, not the stored ones) and
    a thin calibration split (the operating point rests on it)."""
    found = []
    n = int(v.split.get("test", [0])[0])
    if n:
        if v.mode == MODE_TARGET:
            target, below, above = v.target, _level(v, cells), _level(v, upper)
        else:  # the operating point: the run's own target and levels, as its report
            target = v.stored_target
            below, above = _level(v, _stored(v, "fa_target")), _level(v, _stored(v, "fa_next"))
        thin = thin_test_text(n, target, below, above, both_shown=not upper.empty)
        found.append(thin)
    streams, calls = (v.split.get("calibration") or [0, 0])[:2]
    found.append(thin_calibration_text(int(streams), int(calls), v.config.get("model", {})))
    return [w for w in found if w]


def _table(v: View, cells: pd.DataFrame, upper_cells: pd.DataFrame) -> None:
    cue_set, detector = v.cue_set, v.detector
    picked = v.pick(cells).set_index("kind")
    kinds = dv.kind_order(list(picked.index))
    upper = v.pick(upper_cells).set_index("kind")
    next_level = _level(v, upper_cells)
    next_column = f"at {next_level}"
    rows = []
    bars = []
    for kind in kinds:
        c = picked.loc[kind]
        study_auc = dv.study_auc(kind, cue_set)
        rows.append(
            {
                "kind": ui.label(kind),
                "detected (95% CI)": rate_ci(c["rate"], c["ci_low"], c["ci_high"]),
                "runs": f"{int(c['detected'])}/{int(c['runs'])}",
                **({next_column: _rate_text(upper, kind)} if not upper.empty else {}),
                "latency": ui.number(c.get("median_latency"), "{:g}"),
                "AUC": ui.number(c.get("auc"), "{:.2f}"),
                "study: detected": dv.study_rate(kind, cue_set, detector) or "–",
                "study: AUC": ui.number(study_auc, "{:.2f}"),
                "study: latency": dv.study_latency(kind) or "–",
            }
        )
        published = (
            study.DETECTION_ALL_CUSUM.get(kind)
            if (cue_set, detector)
            == (
                "all",
                "cusum",
            )
            else None
        )
        bars.append(
            {
                "kind": kind,
                "label": ui.label(kind),
                "rate": float(c["rate"]),
                "ci_low": float(c["ci_low"]),
                "ci_high": float(c["ci_high"]),
                "study_rate": published[0] if published else math.nan,
            }
        )
    which = "operating point" if v.mode == MODE_OPERATING else "target false-alarm rate"
    st.subheader(f"Detection — {cue_set} · {detector} at the {which}")
    st.caption(
        f"Every row at the same threshold; false alarms reached: "
        f"{dv.pct(float(picked['fa_reached'].iloc[0]), 1) if len(picked) else '–'} (above)."
    )
    # one table, a block per kind on a phone; on a desktop every column in the 968 px main
    # column of a 1,366 px laptop (main.PAGE_CSS): short headers, their meaning in the help and
    # the caption below; the next level with its unit, "at 10.0% = 1/10 streams", as the report
    html_table.table(
        pd.DataFrame(rows),
        {
            next_column: Col(
                help=f"detection at the next reachable false-alarm level above the target, "
                f"{next_level} (the test split is thin), with the runs detected",
            ),
            "latency": Col(help=LATENCY_HELP),
            "AUC": Col(help=AUC_HELP),
        },
        key="kinds",
    )
    st.caption(f"latency: {LATENCY_HELP}. AUC: {AUC_HELP}.")
    if bars:
        ui.chart(
            charts.detection_bars(
                pd.DataFrame(bars), "detection rate per kind: ours and the study's"
            ),
        )


def _rate_text(cells: pd.DataFrame, kind: str) -> str:
    if kind not in cells.index:
        return "–"
    c = cells.loc[kind]
    return f"{rate_ci(c['rate'], c['ci_low'], c['ci_high'])} {int(c['detected'])}/{int(c['runs'])}"


def _grid(cells: pd.DataFrame, breached: Mapping[tuple[str, str], CellLike]) -> None:
    with st.expander("Every cue set × detector"):
        grid = cells.assign(
            label=cells["kind"].map(ui.label),
            cell=cells["cue_set"] + "·" + cells["detector"],
            text=[
                rate_ci(r, lo, hi)
                for r, lo, hi in zip(cells["rate"], cells["ci_low"], cells["ci_high"], strict=True)
            ],
        )
        order = [f"{c}·{d}" for c in cue_sets(cells) for d in DETECTORS]
        pivot = grid.pivot_table(index="label", columns="cell", values="text", aggfunc="first")
        pivot = pivot.reindex(columns=[c for c in order if c in pivot.columns])
        pivot = pivot.reindex([ui.label(k) for k in dv.kind_order(list(cells["kind"].unique()))])
        # on a phone a block per kind (the grid showed its first two of seven columns)
        frame = pivot.reset_index().rename(columns={"label": "kind"}).fillna("")
        html_table.table(frame, key="grid")
        if breached:
            st.caption(
                "Controls detected above the false-alarm level (these statistics react to the "
                "insertion itself): " + ", ".join(f"{c}·{d}" for c, d in breached)
            )
        fa = grid.drop_duplicates("cell").set_index("cell")
        st.caption(
            "False alarms reached: "
            + ", ".join(
                f"{c} {dv.pct(float(fa.loc[c, 'fa_reached']), 1)}" for c in order if c in fa.index
            )
        )


def _roc(v: View) -> None:
    cue_set, detector = v.cue_set, v.detector
    st.subheader(f"ROC — {cue_set} · {detector}")
    if not v.has_max:
        st.info(
            "ROC curves need each run's window maximum, which this store's experiment rows do "
            "not have; re-run `toolwatch experiment` to save them."
        )
        return
    points, areas = _roc_data(str(v.root), v.key, v.run["run_id"], v.variant, cue_set, detector)
    if points.empty:
        st.info("No runs for this cue set and detector.")
        return
    points = points.assign(label=points["kind"].map(ui.label))
    order = [ui.label(k) for k in dv.kind_order(list(areas["kind"]))]
    ui.chart(
        charts.roc_chart(points, areas, v.target if v.mode == MODE_TARGET else None, order),
    )
    per_call = v.stored[v.stored["threshold_mode"] == "fa_target"]
    per_call = per_call[per_call["cue_set"] == cue_set].drop_duplicates("kind").set_index("kind")
    rows = []
    for kind in dv.kind_order(list(areas["kind"])):
        area = float(areas.loc[areas["kind"] == kind, "auc"].iloc[0])
        rows.append(
            {
                "kind": ui.label(kind),
                f"AUC, sessions ({cue_set}·{detector})": f"{area:.2f}",
                f"AUC per call ({cue_set})": ui.number(
                    per_call["auc"].get(kind, math.nan), "{:.2f}"
                ),
                "study: AUC per call": ui.number(dv.study_auc(kind, "all"), "{:.2f}"),
            }
        )
    html_table.table(
        pd.DataFrame(rows),
        {
            f"AUC, sessions ({cue_set}·{detector})": Col(
                help="P(an injected run's window maximum > a normal session's maximum): "
                "how well this detector separates whole sessions — the curve above"
            ),
            f"AUC per call ({cue_set})": Col(
                help="the study's measure: how well the cue score ranks each inserted call "
                "above every other call (not a detector property)"
            ),
        },
        key="areas",
    )
    st.caption(
        "Two areas under two curves: **sessions** (this detector, alarm or not per session, "
        "the curve above) and **per call** (the study's: each inserted call ranked against "
        "every other call by the cue score). Curve: each threshold's share of normal test "
        "streams alarming (x) against the share of injected runs detected within their window "
        "(y); the dashed dark line is the chosen target."
    )


if __name__ == "__main__":
    render()
