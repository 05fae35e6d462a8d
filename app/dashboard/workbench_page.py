"""Workbench: clean vs faulted vs mitigated runs side by side, pass rates, mitigation impact.

Rows come from the ``workbench_runs`` view (``toolwatch workbench``), aggregated by the
workbench's own :func:`~toolwatch.injection.workbench.runner.summarize`; each run's tool calls come
from the ``calls`` view (the runs are instrumented, one session per run).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from toolwatch import study
from toolwatch.app.dashboard import charts, html_table, ui
from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard import url_state as url
from toolwatch.injection.faults.taxonomy import FAULT_ACTIONS
from toolwatch.injection.workbench.suite import mitigation_name, summarize

STEP_COLUMNS = (
    "run",
    "step",
    "tool",
    "outcome",
    "error_type",
    "label",
    "injected",
    "input_bytes",
    "output_bytes",
)
STATUS = {
    "pass": ":green[**PASS**]",
    "fail": ":red[**FAIL**]",
    "not_exercised": ":gray[**NOT EXERCISED**]",
}


def render() -> None:
    s = ui.settings()
    st.title("Workbench")
    st.caption("Reproduce → intervene → mitigate: one fault injected into recorded responses.")
    with q.open_store(s.store) as con:
        suites = ui.listing_or_explain(
            con, q.WORKBENCH_RUNS, s.store, "workbench runs", q.workbench_suites
        )
        if suites is None:
            return

        def describe(i: int) -> str:
            r = suites.iloc[i]
            when = pd.Timestamp(r["time"]).strftime("%Y-%m-%d %H:%M UTC")
            scenarios = ui.counted(r["scenarios"], "scenario")
            return f"{r['run_id']} · {when} · {scenarios} · agents {r['agents']}"

        ids = [str(r) for r in suites["run_id"]]
        position = {run_id: i for i, run_id in enumerate(ids)}
        run_id = url.choice(
            st, "Workbench run", ids, "suite", format_func=lambda r: describe(position[r])
        )
        rows = q.workbench_rows(con, run_id)
        summary = summarize(rows)
        _pass_matrix(summary)
        _impact(summary)
        _trajectories(con, rows)


def _fault_name(fault: str) -> str:
    action = FAULT_ACTIONS.get(fault)
    return f"{fault} {action}" if action else fault


def _pass_matrix(summary: dict[str, Any]) -> None:
    st.subheader("Pass rate of faulted runs (agent × fault type)")
    cells = []
    for agent, row in summary["pass_matrix"].items():
        for fault, c in row.items():
            text = f"{ui.pct(c['pass_rate'])} {c['passed']}/{c['exercised']}"
            if c["not_exercised"]:
                text += f" (n.e. {c['not_exercised']})"
            cells.append(
                {
                    "agent": agent,
                    "fault": fault,
                    "rate": math.nan if c["pass_rate"] is None else float(c["pass_rate"]),
                    "short": f"{ui.pct(c['pass_rate'])}",
                    "text": text,
                }
            )
    if not cells:
        st.info("This run has no faulted runs.")
        return
    frame = pd.DataFrame(cells)
    ui.chart(
        charts.heatmap(frame, "fault", "agent", "fault type", "agent", text="short"),
    )
    table = frame.pivot(index="agent", columns="fault", values="text")
    order = [f for f in summary["fault_types"] if f in table.columns]
    html_table.table(table[order].fillna("").reset_index(), key="pass_matrix", height=None)
    clean = summary.get("clean_solved", {})
    if clean:
        st.caption(
            "Clean runs with the expected answer: "
            + ", ".join(f"{a} {v['solved']}/{v['of']}" for a, v in clean.items())
            + ". n.e. = not exercised (the faulty tool was never called): not counted."
        )


def _impact(summary: dict[str, Any]) -> None:
    st.subheader("Mitigation impact (pass rate of faulted runs; +n = runs the mitigation fixed)")
    agents = list(summary["mitigation_impact"])
    if not agents:
        return
    tabs = st.tabs(agents)
    for tab, agent in zip(tabs, agents, strict=True):
        cells = []
        for fault, per in summary["mitigation_impact"][agent].items():
            for mitigation, c in per.items():
                fixed = f" +{c['fixed']}" if c["fixed"] else ""
                cells.append(
                    {
                        "fault": fault,
                        "mitigation": mitigation_name(mitigation),
                        "rate": math.nan if c["pass_rate"] is None else float(c["pass_rate"]),
                        "text": f"{ui.pct(c['pass_rate'])}{fixed}",
                    }
                )
        frame = pd.DataFrame(cells)
        with tab:
            ui.chart(
                charts.heatmap(frame, "mitigation", "fault", "mitigation", "fault type"),
            )
            table = frame.pivot(index="fault", columns="mitigation", values="text")
            names = [mitigation_name(m) for m in summary["mitigations"]]
            order = [m for m in names if m in table.columns]
            with st.expander("As a table"):
                shown = table[order].fillna("").reset_index()
                whole = {m: html_table.Col(whole=True) for m in order}  # "100% +1" one line
                html_table.table(shown, whole, key=f"impact_{agent}")
    st.caption(
        "The published workbench: timeouts pass "
        f"{study.WORKBENCH['timeout_pass_without_retry']} without and "
        f"{study.WORKBENCH['timeout_pass_with_retry']} with retry; data-quality faults stay "
        f"unresolved in {study.WORKBENCH['data_quality_unresolved_with_all_mitigations']} even "
        "with all mitigations (the paper's: retry, schema, scan)."
    )


def _run_name(row: dict[str, Any]) -> str:
    if row["mode"] == "mitigated":
        return f"mitigated: {mitigation_name(row['mitigation'])}"
    return str(row["mode"])


def _trajectories(con: Any, rows: list[dict[str, Any]]) -> None:
    st.subheader("Trajectories")
    scenarios = sorted({r["scenario_id"] for r in rows})
    c1, c2, c3 = st.columns(3)
    scenario = url.choice(c1, "Scenario", scenarios, "scenario")
    unit = [r for r in rows if r["scenario_id"] == scenario]
    agents = sorted({r["agent"] for r in unit})
    agent = c2.selectbox("Agent", agents, key="agent")
    unit = [r for r in unit if r["agent"] == agent]
    mitigations = [r["mitigation"] for r in unit if r["mode"] == "mitigated"]
    shown_mitigations = c3.multiselect(
        "Mitigated runs",
        mitigations,
        default=mitigations[:2],
        key="mitigations",
        format_func=mitigation_name,
    )
    unit = [r for r in unit if r["mode"] != "mitigated" or r["mitigation"] in shown_mitigations]
    if not unit:
        st.info("No runs for this scenario and agent.")
        return
    first = unit[0]
    st.caption(
        f"Scenario `{scenario}` — fault {_fault_name(first['fault_type'])}"
        + (f", domain {first['domain']}" if first.get("domain") else "")
    )
    calls = q.calls_of_sessions(con, [r["session_id"] for r in unit])
    step_frame = _steps(unit, calls)
    divergence = pd.DataFrame(
        [
            {
                "run": _run_name(r),
                "step": int(r["divergence_step"]),
                "reason": r["divergence_reason"],
            }
            for r in unit
            if r["mode"] != "clean" and r["divergence_step"] is not None
        ],
        columns=["run", "step", "reason"],
    )
    if step_frame.empty:
        st.info(
            "The runs' tool calls are not in the store (the workbench ran with --no-telemetry)."
        )
    else:
        ui.chart(charts.trajectories_chart(step_frame, divergence))
        table = _side_by_side(unit, step_frame).reset_index()
        # one table (a phone: a block per step, its runs' calls as lines), its cells wrapping
        # inside a tool's name too, so every run's column is inside a 1,400 px window
        runs = {str(c): html_table.Col(wrap=True) for c in table.columns if c != "step"}
        html_table.table(table, runs, key="steps")
        st.caption(
            "One column per run, one row per tool call: ✓ ok, ✗ failed (error class), "
            "⚑ the fault's label on an injected response, ◀ the run's first divergence from "
            "the clean run."
        )
    per_row = 3
    for start in range(0, len(unit), per_row):
        columns = st.columns(per_row)
        for col, r in zip(columns, unit[start : start + per_row], strict=False):
            with col:
                _run_card(r, step_frame[step_frame["run"] == _run_name(r)])


def _steps(unit: list[dict[str, Any]], calls: pd.DataFrame) -> pd.DataFrame:
    """One row per tool call of each run, in run order then step order."""
    parts = []
    for r in unit:
        mine = calls[calls["session_id"] == r["session_id"]].reset_index(drop=True)
        parts.append(
            pd.DataFrame(
                {
                    "run": _run_name(r),
                    "step": np.arange(len(mine)),
                    "tool": mine["tool"],
                    "outcome": np.where(mine["failed"].astype(bool), "failed", "ok"),
                    "error_type": mine["error_type"],
                    "label": mine["label"],
                    "injected": mine["label"].notna().to_numpy(bool),
                    "input_bytes": mine["input_bytes"],
                    "output_bytes": mine["output_bytes"],
                }
            )
        )
    columns = list(STEP_COLUMNS)
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


def _side_by_side(unit: list[dict[str, Any]], steps: pd.DataFrame) -> pd.DataFrame:
    """Steps × runs: what each run called at each step, failures, injections, divergence."""
    cells = steps.assign(
        text=[
            f"{tool} "
            + ("✓" if outcome == "ok" else f"✗ {error or 'failed'}")
            + (f" ⚑ {label}" if isinstance(label, str) else "")
            for tool, outcome, error, label in zip(
                steps["tool"], steps["outcome"], steps["error_type"], steps["label"], strict=True
            )
        ]
    )
    diverges = {
        _run_name(r): int(r["divergence_step"])
        for r in unit
        if r["mode"] != "clean" and r["divergence_step"] is not None
    }
    cells["text"] = [
        f"{text}  ◀" if diverges.get(run) == step else text
        for run, step, text in zip(cells["run"], cells["step"], cells["text"], strict=True)
    ]
    table = cells.pivot(index="step", columns="run", values="text")
    order = [_run_name(r) for r in unit if _run_name(r) in table.columns]
    return table[order].fillna("")


def _run_card(r: dict[str, Any], steps: pd.DataFrame) -> None:
    st.markdown(f"**{_run_name(r)}**")
    if r["mode"] == "clean":
        st.write(
            f"task solved: {_yes_no(r['task_solved'])} · {ui.counted(len(steps), 'tool call')}"
        )
        return
    st.write(STATUS.get(r["status"], r["status"]) + f" — {r['check_reason']}")
    if r.get("check_evidence"):  # runs saved before the column have none
        st.caption(f"evidence: {r['check_evidence']}")
    if r["divergence_step"] is None:
        st.write("no divergence from the clean run")
    else:
        st.write(f"diverges at step {r['divergence_step']}: {r['divergence_reason']}")
    st.write(
        f"failure detection: {r['failure_detection']} · recovery: {r['recovery_action']} · "
        f"uncertainty: {r['uncertainty_communication']}"
    )
    if r["mode"] == "mitigated":
        fix = r["fix_confirmed"]
        st.write(
            "fix confirmed: "
            + (
                "n/a (the faulted run did not fail, or this run was not exercised)"
                if fix is None
                else _yes_no(fix)
            )
        )
    labelled = int(steps["injected"].sum())
    note = ""
    if r["injected_calls"] > labelled:
        note = (
            f" ({r['injected_calls'] - labelled} without a label on a call: timed out before "
            "the reply, or a fault in the tool list)"
        )
    st.write(
        f"injected responses: {r['injected_calls']}{note} · task solved: "
        f"{_yes_no(r['task_solved'])}"
    )


def _yes_no(value: bool | None) -> str:
    return "–" if value is None else ("yes" if value else "no")


if __name__ == "__main__":
    render()
