"""The suite: every scenario × agent × mitigation, and the pass table per fault type."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from toolwatch.injection.faults.scenario import Scenario
from toolwatch.injection.mitigations.stack import (
    MITIGATION_NAMES,
    parse_mitigations,
)
from toolwatch.injection.workbench.report import report_rows
from toolwatch.injection.workbench.runner import (
    RunReport,
    WorkbenchConfig,
    mitigation_key,
    run_scenario,
)
from toolwatch.injection.workbench.trajectory import Trajectory


@dataclass
class SuiteResult:
    """Every report of a suite run, in a fixed order (scenario id, agent)."""

    run_id: str
    config: WorkbenchConfig
    agents: tuple[str, ...]
    mitigations: tuple[str, ...]
    reports: list[RunReport]

    def rows(self, now: datetime | None = None) -> list[dict[str, Any]]:
        now = now or datetime.now(UTC)
        out: list[dict[str, Any]] = []
        for report in self.reports:
            out.extend(report_rows(report, run_id=self.run_id, config=self.config, now=now))
        return out

    def summary(self) -> dict[str, Any]:
        """Pass-rate matrix and mitigation impact; a pure function of the verdicts, so two
        runs with the same seed and library give the same summary."""
        return summarize(self.rows(now=datetime(2000, 1, 1, tzinfo=UTC)))


def _rate(passed: int, exercised: int) -> float | None:
    return None if exercised == 0 else round(passed / exercised, 4)


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregate run rows: per agent × fault type (faulted runs) and per mitigation."""
    cells: dict[tuple[str, str, str], list[int]] = {}
    fixes: dict[tuple[str, str, str], int] = {}
    clean_solved: dict[str, list[int]] = {}
    for r in rows:
        if r["mode"] == "clean":
            c = clean_solved.setdefault(r["agent"], [0, 0])
            if r["task_solved"] is not None:
                c[0] += int(bool(r["task_solved"]))
                c[1] += 1
            continue
        key = (r["agent"], r["fault_type"], r["mitigation"])
        cell = cells.setdefault(key, [0, 0, 0])  # passed, exercised, not exercised
        if r["exercised"]:
            cell[0] += int(bool(r["passed"]))
            cell[1] += 1
        else:
            cell[2] += 1
        if r.get("fix_confirmed"):
            fixes[key] = fixes.get(key, 0) + 1
    agents = sorted({k[0] for k in cells})
    faults = sorted({k[1] for k in cells})
    mitigations = ["none", *sorted({k[2] for k in cells} - {"none"}, key=_mitigation_order)]
    matrix = {
        a: {
            f: {
                "passed": cells.get((a, f, "none"), [0, 0, 0])[0],
                "exercised": cells.get((a, f, "none"), [0, 0, 0])[1],
                "not_exercised": cells.get((a, f, "none"), [0, 0, 0])[2],
                "pass_rate": _rate(*cells.get((a, f, "none"), [0, 0, 0])[:2]),
            }
            for f in faults
        }
        for a in agents
    }
    impact = {
        a: {
            f: {
                m: {
                    "pass_rate": _rate(*cells.get((a, f, m), [0, 0, 0])[:2]),
                    "exercised": cells.get((a, f, m), [0, 0, 0])[1],
                    "fixed": fixes.get((a, f, m), 0),
                }
                for m in mitigations
                if (a, f, m) in cells
            }
            for f in faults
        }
        for a in agents
    }
    return {
        "agents": agents,
        "fault_types": faults,
        "mitigations": mitigations,
        "clean_solved": {a: {"solved": v[0], "of": v[1]} for a, v in sorted(clean_solved.items())},
        "pass_matrix": matrix,
        "mitigation_impact": impact,
    }


def _mitigation_order(key: str) -> tuple[int, list[int]]:
    """Single mitigations in stacking order, then combinations, the full stack last."""
    parts = key.split("+")
    return (len(parts), [MITIGATION_NAMES.index(p) for p in parts if p in MITIGATION_NAMES])


#: AgentCheck's "+All" (the paper's): retry, schema validation and the scanner, no verifier.
PAPER_ALL: Final = ("retry", "schema", "scan")


def mitigation_name(key: str) -> str:
    """A mitigation set as the suite's table names it (the full stack ``all (+verify)``, the
    paper's ``all (paper)``), the same name on the Workbench page."""
    if key == mitigation_key(MITIGATION_NAMES):
        return "all (+verify)"
    return "all (paper)" if key == mitigation_key(PAPER_ALL) else key


def _pct(rate: float | None) -> str:
    return "  -  " if rate is None else f"{rate * 100:4.0f}%"


def render_summary(summary: Mapping[str, Any]) -> str:
    """The pass-rate matrix (agent × fault type) and the mitigation-impact table, as text."""
    faults: list[str] = summary["fault_types"]
    lines = ["Pass rate of faulted runs (passed / exercised; n.e. = not exercised)", ""]
    header = "agent      " + " ".join(f"{f:>7}" for f in faults)
    lines.append(header)
    for agent, row in summary["pass_matrix"].items():
        cells = []
        for f in faults:
            c = row[f]
            cells.append(f"{_pct(c['pass_rate']):>7}")
        lines.append(f"{agent:<10} " + " ".join(cells))
        detail = " ".join(f"{row[f]['passed']}/{row[f]['exercised']}".rjust(7) for f in faults)
        lines.append(f"{'':<10} {detail}")
        ne = {f: row[f]["not_exercised"] for f in faults if row[f]["not_exercised"]}
        if ne:
            lines.append(f"{'':<10} n.e.: " + ", ".join(f"{f}={n}" for f, n in ne.items()))
    for agent, solved in summary["clean_solved"].items():
        lines.append(f"clean runs of {agent}: expected value in {solved['solved']}/{solved['of']}")
    lines += ["", "Mitigation impact (pass rate of faulted runs; fixed = fix_confirmed runs)"]
    mitigations: list[str] = summary["mitigations"]
    # each column as wide as its whole name (``schema+scan+verify`` was cut to 13 characters)
    widths = {m: max(14, len(mitigation_name(m)) + 1) for m in mitigations}
    for agent, table in summary["mitigation_impact"].items():
        lines.append("")
        lines.append(
            f"{agent:<10} " + " ".join(f"{mitigation_name(m):>{widths[m]}}" for m in mitigations)
        )
        for f in faults:
            row = table.get(f, {})
            cells = []
            for m in mitigations:
                c = row.get(m)
                if c is None:
                    cells.append(" " * widths[m])
                    continue
                fixed = f" +{c['fixed']}" if c["fixed"] else ""
                cells.append(f"{_pct(c['pass_rate']) + fixed:>{widths[m]}}")
            lines.append(f"{f:<10} " + " ".join(cells))
    return "\n".join(lines)


async def run_suite(
    scenarios: Sequence[Scenario],
    agents: Sequence[str],
    *,
    mitigations: Sequence[Sequence[str] | str] = (),
    config: WorkbenchConfig | None = None,
    concurrency: int = 16,
    run_id: str | None = None,
    on_done: Callable[[RunReport], None] | None = None,
    after_clean: Callable[[Scenario, Trajectory], None] | None = None,
) -> SuiteResult:
    """Every scenario × agent, each with its mitigated runs; ``concurrency`` runs overlap.

    Runs share nothing, so overlapping them only hides the waiting (delays, timeouts,
    backoff); results are ordered by (scenario id, agent) whatever the completion order.
    """
    config = config or WorkbenchConfig()
    run_id = run_id or uuid.uuid4().hex[:12]
    sets = [parse_mitigations(m) for m in mitigations]
    sets = [s for s in dict.fromkeys(sets) if s]
    gate = asyncio.Semaphore(max(1, concurrency))
    units = [(sc, a) for sc in sorted(scenarios, key=lambda s: s.id) for a in agents]

    async def one(sc: Scenario, agent: str) -> RunReport:
        async with gate:
            report = await run_scenario(
                sc, agent, mitigations=sets, config=config, run_id=run_id, after_clean=after_clean
            )
        if on_done is not None:
            on_done(report)
        return report

    reports = await asyncio.gather(*(one(sc, a) for sc, a in units))
    return SuiteResult(
        run_id, config, tuple(agents), tuple(mitigation_key(s) for s in sets), list(reports)
    )
