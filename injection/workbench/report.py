"""One scenario's report: the store rows (``workbench_runs``), the text report and its JSON."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, Final

from toolwatch import tables
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.injection.workbench.checks import task_solved
from toolwatch.injection.workbench.runner import PhaseResult, RunReport, WorkbenchConfig
from toolwatch.injection.workbench.trajectory import Aliases
from toolwatch.words import counted

#: Store table of workbench runs (one row per agent run).
RUNS_TABLE: Final = tables.WORKBENCH_RUNS.name


def runs_schema() -> Any:
    """The ``workbench_runs`` Arrow schema (from the table registry)."""
    return SCHEMAS[RUNS_TABLE]


def report_rows(
    report: RunReport, *, run_id: str, config: WorkbenchConfig, now: datetime | None = None
) -> list[dict[str, Any]]:
    """One content-free row per agent run (clean, faulted, each mitigated)."""
    now = now or datetime.now(UTC)
    sc = report.scenario
    common = {
        "run_id": run_id,
        "time": now,
        "scenario_id": sc.id,
        "fault_type": sc.fault_type,
        "domain": sc.domain,
        "agent": report.agent,
        "seed": config.seed,
        "config": config.to_json(),
    }
    rows = [
        {
            **common,
            "mode": "clean",
            "mitigation": "none",
            "status": "not_exercised",
            "passed": False,
            "exercised": False,
            "check_reason": "clean run (no fault)",
            "check_evidence": None,
            "divergence_step": None,
            "divergence_reason": None,
            "failure_detection": None,
            "recovery_action": None,
            "uncertainty_communication": None,
            "fix_confirmed": None,
            "task_solved": report.clean_solved,
            "steps": len(report.clean.steps),
            "injected_calls": 0,
            "session_id": report.clean.conversation_id,
        }
    ]
    phases: list[tuple[str, str, PhaseResult]] = [("faulted", "none", report.faulted)]
    phases += [("mitigated", k, v) for k, v in report.mitigated.items()]
    for mode, mitigation, phase in phases:
        d = phase.divergence
        rows.append(
            {
                **common,
                "mode": mode,
                "mitigation": mitigation,
                "status": phase.check.status,
                "passed": phase.check.passed,
                "exercised": phase.check.status != "not_exercised",
                "check_reason": phase.check.reason,
                "check_evidence": "; ".join(phase.check.evidence),
                "divergence_step": None if d is None else d.step,
                "divergence_reason": None if d is None else d.reason,
                **phase.labels.as_dict(),
                "fix_confirmed": report.fix_confirmed(mitigation) if mode == "mitigated" else None,
                "task_solved": task_solved(sc, phase.trajectory),
                "steps": len(phase.trajectory.steps),
                "injected_calls": sum(1 for x in phase.deliveries if x.applied),
                "session_id": phase.trajectory.conversation_id,
            }
        )
    return rows


def render_report(report: RunReport) -> str:
    """A human-readable account of one reproduce → intervene → mitigate run."""
    sc = report.scenario
    lines = [
        f"scenario {sc.id} ({sc.fault_type} {sc.fault.action} on {sc.fault.tool}, "
        f"{sc.fault.occurrence.describe()}), agent {report.agent}",
        f"  clean:    {counted(len(report.clean.steps), 'call')}, task solved: "
        f"{report.clean_solved}",
    ]

    def phase_lines(
        title: str, p: PhaseResult, fix: tuple[bool | None, str] | None = None
    ) -> list[str]:
        applied = sum(1 for d in p.deliveries if d.applied)
        d = p.divergence
        div = "none" if d is None else f"step {d.step} ({d.reason})"
        out = [
            f"  {title}: {counted(len(p.trajectory.steps), 'call')}, fault applied {applied}x, "
            f"first divergence: {div}",
            f"    check {p.check.check}: {p.check.status.upper()} — {p.check.reason}",
            "    labels: " + ", ".join(f"{k}={v}" for k, v in p.labels.as_dict().items()),
        ]
        out.append("    evidence: " + "; ".join(p.check.evidence))
        failing = [g for g in p.guards if g.status == "fail"]
        out.append(
            "    guards: "
            + (", ".join(f"{g.check} FAIL ({'; '.join(g.evidence)})" for g in failing) or "ok")
        )
        if p.trajectory.error:
            out.append(f"    agent error: {p.trajectory.error}")
        if fix is not None:
            out.append(f"    fix_confirmed: {fix[0]} — {fix[1]}")
        return out

    lines += phase_lines("faulted", report.faulted)
    for key, phase in report.mitigated.items():
        lines += phase_lines(f"mitigated [{key}]", phase, report.fix_verdict(key))
    return "\n".join(lines)


def report_json(report: RunReport) -> dict[str, Any]:
    """Content-free JSON of a report (trajectory summaries, verdicts, labels)."""

    aliases = Aliases()  # one numbering for the whole report: clean first
    clean = report.clean.summary(aliases)

    def phase(p: PhaseResult) -> dict[str, Any]:
        d = p.divergence
        return {
            "trajectory": p.trajectory.summary(aliases),
            "check": asdict(p.check),
            "guards": [asdict(g) for g in p.guards],
            "labels": p.labels.as_dict(),
            "divergence": None
            if d is None
            else {
                **asdict(d),
                "left": aliases.step_key(d.left),
                "right": aliases.step_key(d.right),
            },
            "deliveries": [asdict(d) for d in p.deliveries],
        }

    return {
        "scenario_id": report.scenario.id,
        "fault_type": report.scenario.fault_type,
        "agent": report.agent,
        "clean": clean,
        "clean_solved": report.clean_solved,
        "faulted": phase(report.faulted),
        "mitigated": {
            k: {
                **phase(v),
                "fix_confirmed": report.fix_verdict(k)[0],
                "fix_reason": report.fix_verdict(k)[1],
            }
            for k, v in report.mitigated.items()
        },
    }
