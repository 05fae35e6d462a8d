"""Reproduce → intervene → mitigate: clean, faulted and mitigated runs of one agent on a scenario.

1. **Reproduce**: the agent runs against the clean upstream (by default the scenario's own
   :class:`~toolwatch.injection.faults.server.ScenarioServer`, in process); every response
   it receives is recorded.
2. **Intervene**: the agent runs again against a :class:`ReplayServer` that answers from the
   recording and applies the scenario's fault through the one fault engine
   (:mod:`toolwatch.injection.faults.engine`) on every occurrence the rule makes due — retries
   included, so a retry recovers only if the rule lets it. Delays are real delays: the
   client's own deadline expires.
3. **Mitigate** (optional): the same faulted replay, with the agent's client wrapped in the
   chosen mitigations.

The two trajectories are compared (first divergence), each faulted/mitigated run gets its
primary check and labels, and ``fix_confirmed`` says whether the mitigation turned a failing
run into a passing one. Every run goes through ``mcp.Client`` — instrumented when
:func:`toolwatch.instrumentation.instrument` is active — so its calls land in the store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import mcp_types as types
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from toolwatch import tables
from toolwatch.injection.faults.effects import announce_injection
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.scenario import Scenario
from toolwatch.injection.faults.server import ScenarioServer
from toolwatch.injection.mitigations.stack import (
    MITIGATION_NAMES,
    apply_mitigations,
    parse_mitigations,
)
from toolwatch.injection.workbench.agents import Agent, AgentConfig, make_agent
from toolwatch.injection.workbench.checks import CheckResult, Labels, check, labels, task_solved
from toolwatch.injection.workbench.trajectory import (
    Divergence,
    Mode,
    Recording,
    RecordingClient,
    Trajectory,
    call_key,
    first_divergence,
)
from toolwatch.instrumentation.client.context import resolve

log = logging.getLogger(__name__)

#: Store table of workbench runs (one row per agent run).
RUNS_TABLE: Final = tables.WORKBENCH_RUNS.name


# =============================================================================================
# Configuration
# =============================================================================================


@dataclass
class WorkbenchConfig:
    """Everything that shapes a run; saved as JSON with every row."""

    agent: AgentConfig = field(default_factory=AgentConfig)
    seed: int = 0
    retry_attempts: int = 3
    retry_base_delay: float = 0.02
    retry_deadline: float = 5.0
    scanner_mode: str = "block"
    verify_max_age_days: float = 180.0

    def mitigation_options(self) -> dict[str, dict[str, Any]]:
        from datetime import timedelta

        return {
            "retry": {
                "attempts": self.retry_attempts,
                "base_delay": self.retry_base_delay,
                "deadline": self.retry_deadline,
            },
            "scan": {"mode": self.scanner_mode},
            "verify": {"max_age": timedelta(days=self.verify_max_age_days)},
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))


# =============================================================================================
# The replay server
# =============================================================================================


@dataclass(frozen=True)
class Delivery:
    """One call the replay server answered: was the fault applied, and how."""

    tool: str
    occurrence: int
    applied: bool
    note: str = ""


def _wire(value: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


class ReplayServer(MCPServer):
    """An ``MCPServer`` answering from a :class:`Recording`, with one fault armed (or none).

    Occurrences of each tool are counted from 1 for this server instance (one per run), and
    the fault engine decides per occurrence. A call that was never recorded (the faulted agent
    went somewhere new) is answered by ``fallback`` when given — the scenario server — or is
    a tool error saying so.
    """

    def __init__(
        self,
        recording: Recording,
        *,
        engine: FaultEngine | None = None,
        fallback: ScenarioServer | None = None,
        name: str = "replay",
    ) -> None:
        super().__init__(name=name, log_level="WARNING")
        self.recording = recording
        self.engine = engine
        self.fallback = fallback
        self.calls: Counter[str] = Counter()
        self.exact: Counter[str] = Counter()
        self.listings = 0
        self.deliveries: list[Delivery] = []
        self._listing_poisoned = False  # a C2/C4 description fault is in force

    def _clean_listing(self) -> list[dict[str, Any]]:
        if self.recording.tools is not None:
            return [_wire(t) for t in self.recording.tools.tools]
        if self.fallback is not None:
            return [t.to_wire() for t in self.fallback.scenario.tools]
        return []

    async def list_tools(self) -> list[types.Tool]:
        tools = self._clean_listing()
        if self.engine is not None:
            self.listings += 1
            nxt = self.calls[self.engine.fault.tool] + 1
            effect = self.engine.rewrite_listing(tools, listing=self.listings, next_call=nxt)
            self._listing_poisoned = self.engine.poisoned_after(
                tools, effect, self._listing_poisoned
            )
            tools = effect.tools
        return [types.Tool.model_validate(t) for t in tools]

    async def _clean(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        key = call_key(name, arguments)
        occurrence = self.exact[key]
        self.exact[key] += 1
        recorded = self.recording.lookup(name, arguments, occurrence)
        if recorded is not None:
            return _wire(recorded)
        if self.fallback is not None:
            return _wire(await self.fallback.call_tool(name, arguments))
        raise ToolError(f"no recorded response for this call of {name}")

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[Any, Any] | None = None,
    ) -> types.CallToolResult:
        self.calls[name] += 1
        n = self.calls[name]
        engine = self.engine
        if engine is None or not engine.targets(name):
            return types.CallToolResult.model_validate(await self._clean(name, arguments))
        if engine.counts_listings:
            listed = await self._clean(name, arguments)
            effect = engine.listed_call(listed, poisoned=self._listing_poisoned)
        else:
            plan = engine.plan(name, arguments, n, self._clean_listing())
            clean = await self._clean(name, plan.arguments) if plan.call_upstream else None
            effect = engine.apply(plan, clean)
        self.deliveries.append(Delivery(name, n, effect.applied, effect.note))
        try:
            request = None if context is None else context.request_context
        except ValueError:  # called outside a request (directly, in a test)
            request = None
        if request is None:
            return await effect.deliver()
        return await effect.deliver(lambda: announce_injection(request, name, engine.label))

    def applied(self, tool: str) -> bool | None:
        """Whether the latest call of ``tool`` had the fault applied (None: not the target)."""
        if self.engine is None or not self.engine.targets(tool):
            return False
        for d in reversed(self.deliveries):
            if d.tool == tool:
                return d.applied
        return False


# =============================================================================================
# One agent run
# =============================================================================================


def _current_response_id() -> str | None:
    _conversation, _agent, response_id, _position = resolve(take_position=False)
    return response_id


async def run_agent(
    scenario: Scenario,
    agent: Agent,
    server: Any,
    *,
    mode: Mode,
    conversation_id: str,
    mitigations: Sequence[str] = (),
    config: WorkbenchConfig | None = None,
    recording: Recording | None = None,
) -> Trajectory:
    """One run of ``agent`` on ``scenario`` through a real ``mcp.Client`` to ``server``."""
    config = config or WorkbenchConfig()
    names = parse_mitigations(list(mitigations))
    traj = Trajectory(
        scenario.id,
        agent.name,
        mode,
        names,
        conversation_id=conversation_id,
    )
    injected: Callable[[str, Any], bool | None] = lambda tool, result: None  # noqa: E731
    if isinstance(server, ReplayServer):
        replay = server
        injected = lambda tool, result: replay.applied(tool)  # noqa: E731
    try:
        async with Client(server) as client:
            recorder = RecordingClient(
                client,
                traj,
                recording=recording,
                response_id=_current_response_id,
                injected=injected,
            )
            wrapped = apply_mitigations(
                recorder,
                names,
                on_event=traj.mitigation_events.append,
                seed=config.seed,
                options=config.mitigation_options(),
            )
            traj.final_answer = await agent.run(
                scenario, wrapped, traj, conversation_id=conversation_id
            )
    except Exception as exc:  # the agent (not a tool) broke: a failed run, reported as such
        root = _root_cause(exc)
        log.warning("%s/%s %s run crashed: %s", scenario.id, agent.name, mode, root)
        traj.error = f"{type(root).__name__}: {root}"
    return traj


def _root_cause(exc: BaseException) -> BaseException:
    """The exception inside the task-group wrappers ``mcp.Client`` adds on the way out."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


# =============================================================================================
# Reproduce -> intervene -> mitigate
# =============================================================================================


@dataclass
class PhaseResult:
    """One faulted or mitigated run with its verdict."""

    trajectory: Trajectory
    check: CheckResult
    labels: Labels
    divergence: Divergence | None
    deliveries: list[Delivery]


@dataclass
class RunReport:
    scenario: Scenario
    agent: str
    run_id: str
    clean: Trajectory
    clean_solved: bool | None
    faulted: PhaseResult
    mitigated: dict[str, PhaseResult] = field(default_factory=dict)

    def fix_confirmed(self, mitigation: str) -> bool | None:
        """True: the mitigated run passes where the faulted one failed; None: nothing to fix
        (the faulted run did not fail) or the mitigated run was not exercised."""
        m = self.mitigated.get(mitigation)
        if m is None or self.faulted.check.status != "fail":
            return None
        if m.check.status == "not_exercised":
            return None
        return m.check.status == "pass"


def mitigation_key(names: Sequence[str]) -> str:
    return "+".join(names) if names else "none"


async def run_scenario(
    scenario: Scenario,
    agent: str | Agent,
    *,
    mitigations: Sequence[Sequence[str] | str] = (),
    config: WorkbenchConfig | None = None,
    run_id: str | None = None,
    upstream: Callable[[], Any] | None = None,
) -> RunReport:
    """Clean run, faulted replay, and one mitigated replay per entry of ``mitigations``.

    ``upstream`` makes the clean run's server (default: the scenario server); replays fall
    back to the scenario server for calls the clean run never made.
    """
    config = config or WorkbenchConfig()
    run_id = run_id or uuid.uuid4().hex[:12]
    the_agent = agent if isinstance(agent, Agent) else make_agent(agent, config.agent)
    base = f"wb-{run_id}-{scenario.id}-{the_agent.name}"
    recording = Recording()
    fallback = ScenarioServer(scenario)
    clean_server = upstream() if upstream is not None else ScenarioServer(scenario)
    clean = await run_agent(
        scenario,
        the_agent,
        clean_server,
        mode="clean",
        conversation_id=f"{base}-clean",
        config=config,
        recording=recording,
    )

    async def replay(names: Sequence[str], mode: Mode) -> PhaseResult:
        engine = FaultEngine.for_scenario(scenario, seed=config.seed)
        server = ReplayServer(recording, engine=engine, fallback=fallback)
        traj = await run_agent(
            scenario,
            the_agent,
            server,
            mode=mode,
            conversation_id=f"{base}-{mode}-{mitigation_key(names)}",
            mitigations=names,
            config=config,
        )
        verdict = check(scenario, traj, clean)
        return PhaseResult(
            traj,
            verdict,
            labels(scenario, traj, clean, verdict),
            first_divergence(clean, traj),
            list(server.deliveries),
        )

    faulted = await replay((), "faulted")
    report = RunReport(
        scenario, the_agent.name, run_id, clean, task_solved(scenario, clean), faulted
    )
    for spec in mitigations:
        names = parse_mitigations(spec)
        if not names:
            continue
        report.mitigated[mitigation_key(names)] = await replay(names, "mitigated")
    return report


# =============================================================================================
# Rows for the store
# =============================================================================================


def runs_schema() -> Any:
    """The ``workbench_runs`` Arrow schema (from the table registry)."""
    from toolwatch.collector.store.arrow_schema import SCHEMAS

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
        f"  clean:    {len(report.clean.steps)} calls, task solved: {report.clean_solved}",
    ]

    def phase_lines(title: str, p: PhaseResult, fix: bool | None = None) -> list[str]:
        applied = sum(1 for d in p.deliveries if d.applied)
        d = p.divergence
        div = "none" if d is None else f"step {d.step} ({d.reason})"
        out = [
            f"  {title}: {len(p.trajectory.steps)} calls, fault applied {applied}x, "
            f"first divergence: {div}",
            f"    check {p.check.check}: {p.check.status.upper()} — {p.check.reason}",
            "    labels: " + ", ".join(f"{k}={v}" for k, v in p.labels.as_dict().items()),
        ]
        if p.check.evidence:
            out.append("    evidence: " + "; ".join(p.check.evidence))
        if p.trajectory.error:
            out.append(f"    agent error: {p.trajectory.error}")
        if fix is not None or title.startswith("mitigated"):
            out.append(f"    fix_confirmed: {fix}")
        return out

    lines += phase_lines("faulted", report.faulted)
    for key, phase in report.mitigated.items():
        lines += phase_lines(f"mitigated [{key}]", phase, report.fix_confirmed(key))
    return "\n".join(lines)


def report_json(report: RunReport) -> dict[str, Any]:
    """Content-free JSON of a report (trajectory summaries, verdicts, labels)."""

    def phase(p: PhaseResult) -> dict[str, Any]:
        return {
            "trajectory": p.trajectory.summary(),
            "check": asdict(p.check),
            "labels": p.labels.as_dict(),
            "divergence": None if p.divergence is None else asdict(p.divergence),
            "deliveries": [asdict(d) for d in p.deliveries],
        }

    return {
        "scenario_id": report.scenario.id,
        "fault_type": report.scenario.fault_type,
        "agent": report.agent,
        "clean": report.clean.summary(),
        "clean_solved": report.clean_solved,
        "faulted": phase(report.faulted),
        "mitigated": {
            k: {**phase(v), "fix_confirmed": report.fix_confirmed(k)}
            for k, v in report.mitigated.items()
        },
    }


# =============================================================================================
# The suite
# =============================================================================================


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


def _display(key: str) -> str:
    return "all" if key == mitigation_key(MITIGATION_NAMES) else key


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
    for agent, table in summary["mitigation_impact"].items():
        lines.append("")
        lines.append(f"{agent:<10} " + " ".join(f"{_display(m)[:13]:>14}" for m in mitigations))
        for f in faults:
            row = table.get(f, {})
            cells = []
            for m in mitigations:
                c = row.get(m)
                if c is None:
                    cells.append(f"{'':>14}")
                    continue
                fixed = f" +{c['fixed']}" if c["fixed"] else ""
                cells.append(f"{_pct(c['pass_rate']) + fixed:>14}")
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
            report = await run_scenario(sc, agent, mitigations=sets, config=config, run_id=run_id)
        if on_done is not None:
            on_done(report)
        return report

    reports = await asyncio.gather(*(one(sc, a) for sc, a in units))
    return SuiteResult(
        run_id, config, tuple(agents), tuple(mitigation_key(s) for s in sets), list(reports)
    )


# =============================================================================================
# Detection over the runs' recorded calls
# =============================================================================================


def detect_suite(
    store: Any, model: Any, result: SuiteResult, statistics: Sequence[str] | None = None
) -> dict[str, Any]:
    """Whether the content-free detector alarmed on each run's calls, per fault type.

    Reads the calls the suite's runs left in the store (instrumented client → collector),
    runs the operating-point scan (:func:`toolwatch.detection.scoring.scan.scan`, default statistic:
    the model's ``alert_on``) and compares, per fault type and agent, faulted runs with the
    clean runs of the same scenarios: ``separated`` counts scenario × agent pairs where the
    faulted run alarmed and the clean one did not.
    """
    from toolwatch.detection.scoring.scan import scan

    prefix = f"wb-{result.run_id}-"
    calls = store.query("SELECT * FROM calls WHERE starts_with(session_id, ?)", [prefix])
    flagged: dict[str, Any] = {}
    if calls.num_rows:
        for flag in scan(model, calls, statistics).flags:
            flagged[flag.session_id] = flag
    recorded = set(calls.column("session_id").to_pylist()) if calls.num_rows else set()
    pairs: dict[tuple[str, str, str], dict[str, bool | None]] = {}
    for row in result.rows():
        if row["mode"] == "mitigated":
            continue
        sid = row["session_id"]
        key = (row["fault_type"], row["agent"], row["scenario_id"])
        alarmed = (sid in flagged) if sid in recorded else None
        pairs.setdefault(key, {})[row["mode"]] = alarmed
    by_fault: dict[str, dict[str, dict[str, Any]]] = {}
    for (fault, agent, _), modes in sorted(pairs.items()):
        cell = by_fault.setdefault(fault, {}).setdefault(
            agent,
            {"pairs": 0, "faulted_alarmed": 0, "clean_alarmed": 0, "separated": 0, "missing": 0},
        )
        clean, faulted = modes.get("clean"), modes.get("faulted")
        if clean is None or faulted is None:
            cell["missing"] += 1
            continue
        cell["pairs"] += 1
        cell["faulted_alarmed"] += int(faulted)
        cell["clean_alarmed"] += int(clean)
        cell["separated"] += int(faulted and not clean)
    cues: dict[str, int] = {}
    for flag in flagged.values():
        cues[flag.cue] = cues.get(flag.cue, 0) + 1
    return {
        "statistics": list(statistics or model.config.alert_on),
        "calls": calls.num_rows,
        "sessions": len(recorded),
        "flagged_sessions": len(flagged),
        "flagged_by_cue": dict(sorted(cues.items())),
        "by_fault": by_fault,
    }


def render_detection(detection: Mapping[str, Any]) -> str:
    """Per fault type: faulted runs alarmed, clean runs alarmed, pairs separated."""
    lines = [
        f"Detection ({', '.join(detection['statistics'])} at the operating point): "
        f"{detection['flagged_sessions']} of {detection['sessions']} runs flagged, "
        f"{detection['calls']} calls scored",
        "",
        f"{'fault':<6} {'agent':<9} {'faulted':>9} {'clean':>9} {'separated':>10}  verdict",
    ]
    for fault, agents in detection["by_fault"].items():
        for agent, c in agents.items():
            n = c["pairs"]
            if n == 0:
                lines.append(f"{fault:<6} {agent:<9} {'no calls recorded':>30}")
                continue
            if c["separated"] == n:
                verdict = "detected, clean runs quiet"
            elif c["faulted_alarmed"] and c["clean_alarmed"]:
                verdict = "alarms on clean runs too"
            elif c["faulted_alarmed"]:
                verdict = "partly detected"
            elif c["clean_alarmed"]:
                verdict = "false alarms only"
            else:
                verdict = "silent"
            faulted = f"{c['faulted_alarmed']}/{n}"
            clean = f"{c['clean_alarmed']}/{n}"
            separated = f"{c['separated']}/{n}"
            lines.append(
                f"{fault:<6} {agent:<9} {faulted:>9} {clean:>9} {separated:>10}  {verdict}"
            )
    return "\n".join(lines)
