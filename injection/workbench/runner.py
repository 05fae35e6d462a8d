"""Reproduce → intervene → mitigate for one scenario: the clean run (every response recorded), the
faulted run, the first divergence, and the mitigated runs that confirm a fix.
"""

from __future__ import annotations

import json
import logging
import uuid
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mcp import Client

from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.scenario import Scenario
from toolwatch.injection.faults.server import ScenarioServer
from toolwatch.injection.mitigations.stack import (
    apply_mitigations,
    parse_mitigations,
)
from toolwatch.injection.workbench.agent import Agent, AgentConfig
from toolwatch.injection.workbench.agents import make_agent
from toolwatch.injection.workbench.checks import CheckResult, check, task_solved
from toolwatch.injection.workbench.guards import acted_on_fault, guards
from toolwatch.injection.workbench.labels import Labels, labels
from toolwatch.injection.workbench.replay import Delivery, ReplayServer
from toolwatch.injection.workbench.trajectory import (
    Divergence,
    Mode,
    Recording,
    RecordingClient,
    Trajectory,
    first_divergence,
)
from toolwatch.instrumentation.client.context import resolve

log = logging.getLogger(__name__)


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
    verify_fresh_max_age_days: float = 30.0

    def mitigation_options(self, scenario: Scenario | None = None) -> dict[str, dict[str, Any]]:
        """Options per mitigation. With a scenario, the verifier gets the scenario's date
        context — its clock (``now``) and whether the task needs current data — the way a
        deployment knows its own clock and task; never the stale date a check uses."""
        verify: dict[str, Any] = {
            "max_age": timedelta(days=self.verify_max_age_days),
            "fresh_max_age": timedelta(days=self.verify_fresh_max_age_days),
        }
        context = None if scenario is None else scenario.checks.date_context
        if context is not None:
            verify["require_fresh"] = context.requires_fresh_data
            if context.now:
                verify["reference_time"] = datetime.fromisoformat(context.now).replace(
                    hour=23, minute=59, tzinfo=UTC
                )
        return {
            "retry": {
                "attempts": self.retry_attempts,
                "base_delay": self.retry_base_delay,
                "deadline": self.retry_deadline,
            },
            "scan": {
                "mode": self.scanner_mode,
                "allowlist": [] if scenario is None else list(scenario.checks.endpoint_allowlist),
            },
            "verify": verify,
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))


def server_name(scenario: Scenario) -> str:
    """The name every run of ``scenario`` knows its server by — clean, replayed and fallback
    alike, as one deployment of one server would be (listings are pinned by server and
    tool). Each scenario is its own deployment: its domain's name plus a short checksum of
    its id, so two scenarios' tools of the same name are never one pin, and no word of the
    id reaches the name heuristics of provenance's egress classes."""
    return f"{scenario.domain}-tools-{zlib.crc32(scenario.id.encode()):08x}"


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
                options=config.mitigation_options(scenario),
            )
            traj.final_answer = await agent.run(
                scenario, wrapped, traj, conversation_id=conversation_id
            )
    except Exception as exc:  # the agent (not a tool) broke: a failed run, reported as such
        root = _root_cause(exc)
        traj.error = _crash(root)  # its text may quote a tool's result or an argument
        log.warning("%s/%s %s run crashed: %s", scenario.id, agent.name, mode, traj.error)
    if isinstance(server, ReplayServer):
        traj.not_applicable = [d.describe() for d in server.not_applicable]
        traj.upstream_listings = list(server.upstream_listings)
    else:  # the agent read the server's own listings
        traj.upstream_listings = list(traj.listings)
    return traj


def _crash(exc: BaseException) -> str:
    """``TypeName at file.py:12 in fn``: where the agent broke, not the exception's text (it
    may quote a result), unless its class says the text is content-free (``LLMError``)."""
    if getattr(exc, "message_is_content_free", False):
        return f"{type(exc).__name__}: {exc}"
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return type(exc).__name__
    code = tb.tb_frame.f_code
    return f"{type(exc).__name__} at {Path(code.co_filename).name}:{tb.tb_lineno} in {code.co_name}"


def _root_cause(exc: BaseException) -> BaseException:
    """The exception inside the task-group wrappers ``mcp.Client`` adds on the way out."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


@dataclass
class PhaseResult:
    """One faulted or mitigated run with its verdict."""

    trajectory: Trajectory
    check: CheckResult
    labels: Labels
    divergence: Divergence | None
    deliveries: list[Delivery]
    guards: list[CheckResult] = field(default_factory=list)


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
        """True: the mitigation fixed the fault (see :meth:`fix_verdict`); None: nothing to
        fix (the faulted run did not fail) or the mitigated run was not exercised."""
        return self.fix_verdict(mitigation)[0]

    def fix_verdict(self, mitigation: str) -> tuple[bool | None, str]:
        """(fix_confirmed, why). A fix needs the primary check that failed under the fault to
        pass, no guard that held under the fault to break, and a mitigation that acted on the
        fault itself — a pass it did not cause (its notice made the agent call the tool again)
        is a side effect, not a fix."""
        m = self.mitigated.get(mitigation)
        if m is None:
            return None, "no such mitigated run"
        if self.faulted.check.status != "fail":
            return None, f"nothing to fix: the faulted run is {self.faulted.check.status}"
        if m.check.status == "not_exercised":
            return None, "the mitigated run did not exercise the fault"
        if m.check.status != "pass":
            return False, "the primary check still fails"
        held = {g.check for g in self.faulted.guards if g.status == "pass"}
        broken = [g.check for g in m.guards if g.check in held and g.status == "fail"]
        if broken:
            return False, f"new failure: {', '.join(broken)}"
        acted = acted_on_fault(self.scenario, m.trajectory)
        if not acted:
            return False, "passed without the mitigation acting on the fault (a side effect)"
        return True, "fixed: " + "; ".join(dict.fromkeys(acted))


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
    after_clean: Callable[[Scenario, Trajectory], None] | None = None,
) -> RunReport:
    """Clean run, faulted replay, and one mitigated replay per entry of ``mitigations``.

    ``upstream`` makes the clean run's server (default: the scenario server); replays fall
    back to the scenario server for calls the clean run never made. ``after_clean`` is called
    between the clean run and the replays (the suite's detection approves the clean listing
    there, as a user approves a server's tools after a first, trusted session).
    """
    config = config or WorkbenchConfig()
    run_id = run_id or uuid.uuid4().hex[:12]
    the_agent = agent if isinstance(agent, Agent) else make_agent(agent, config.agent)
    base = f"wb-{run_id}-{scenario.id}-{the_agent.name}"
    recording = Recording()
    name = server_name(scenario)
    fallback = ScenarioServer(scenario, name=name)
    clean_server = upstream() if upstream is not None else ScenarioServer(scenario, name=name)
    clean = await run_agent(
        scenario,
        the_agent,
        clean_server,
        mode="clean",
        conversation_id=f"{base}-clean",
        config=config,
        recording=recording,
    )
    if after_clean is not None:
        after_clean(scenario, clean)

    async def replay(names: Sequence[str], mode: Mode) -> PhaseResult:
        engine = FaultEngine.for_scenario(scenario, seed=config.seed)
        server = ReplayServer(recording, engine=engine, fallback=fallback, name=name)
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
            guards(scenario, traj, clean),
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
