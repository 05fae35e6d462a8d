"""Recorded runs: what an agent did, call by call, and where two runs part ways.

A :class:`Trajectory` is one agent run: the tool calls that really reached the server (in
order, retries included), the tool listings the agent read, events the agent and the
mitigations reported, and the final answer. It lives in memory only — arguments and results
are content and are never written anywhere; what leaves a run is outcomes, labels and
:class:`Aliases` standing for arguments and answers (:meth:`Trajectory.summary`): the digests
that compare them stay in memory — a short argument's hash can be reversed by dictionary.

A :class:`Recording` keeps the responses of a clean run keyed by tool and arguments, so a
faulted run can be served the very same responses (:class:`RecordingClient` fills both while
forwarding calls to the real client).

:func:`first_divergence` compares two trajectories step by step on (tool, arguments digest,
outcome) — the reproduce step of reproduce → intervene → mitigate.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.types import CallToolResult, ListToolsResult, Tool

from toolwatch.injection.mitigations.failures import FailureClass, classify_failure, first_line
from toolwatch.injection.mitigations.results import result_flags
from toolwatch.injection.mitigations.wrapper import ClientWrapper, MitigationEvent, Send, try_call

Outcome = Literal["ok", "error", "timeout"]
Mode = Literal["clean", "faulted", "mitigated"]


def digest(value: Any) -> str:
    """Short stable digest of a JSON value (key order ignored); used in place of content."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Aliases:
    """Stand-ins for content in one report: equal values get the same ``<prefix><n>``, numbered
    in order of first appearance — comparable within the report, no hash of the content."""

    def __init__(self) -> None:
        self._names: dict[tuple[str, str], str] = {}

    def __call__(self, prefix: str, key: str) -> str:
        name = self._names.get((prefix, key))
        if name is None:
            n = sum(p == prefix for p, _ in self._names) + 1
            name = self._names[(prefix, key)] = f"{prefix}{n}"
        return name

    def step_key(self, key: tuple[str, str, str] | None) -> list[str] | None:
        """A :attr:`Step.key` for a report: its arguments digest as an alias."""
        return None if key is None else [key[0], self("args-", key[1]), key[2]]


def call_key(tool: str, arguments: Mapping[str, Any] | None) -> str:
    return f"{tool}#{digest(dict(arguments or {}))}"


@dataclass
class Step:
    """One tool call that reached the server. ``arguments``/``result`` stay in memory only."""

    index: int
    tool: str
    arguments: dict[str, Any]
    outcome: Outcome
    failure: FailureClass | None
    result: CallToolResult | None
    response_id: str | None = None
    error_message: str = ""
    duration_s: float = 0.0
    #: the fault was applied to this call (from the fault source), None = unknown
    injected: bool | None = None

    @property
    def args_digest(self) -> str:
        return digest(self.arguments)

    @property
    def key(self) -> tuple[str, str, str]:
        """What divergence compares: tool, arguments digest and outcome class."""
        outcome = self.outcome if self.failure is None else f"{self.outcome}:{self.failure.value}"
        return (self.tool, self.args_digest, outcome)

    @property
    def flags(self) -> list[str]:
        return [f.get("flag", "") for f in result_flags(self.result)] if self.result else []


@dataclass(frozen=True)
class AgentEvent:
    """Something the agent noticed or decided (retry, ignored an instruction, ...)."""

    kind: str
    tool: str | None = None
    detail: str = ""


@dataclass
class Trajectory:
    """One agent run on one scenario, in one mode."""

    scenario_id: str
    agent: str
    mode: Mode
    mitigations: tuple[str, ...] = ()
    steps: list[Step] = field(default_factory=list)
    listings: list[list[Tool]] = field(default_factory=list)
    #: what the server behind those listings itself listed: a replay server's upstream (the
    #: clean run's listing) before its fault; the listings themselves when read straight
    #: from the server (a poisoned description is one the upstream never listed)
    upstream_listings: list[list[Tool]] = field(default_factory=list)
    events: list[AgentEvent] = field(default_factory=list)
    mitigation_events: list[MitigationEvent] = field(default_factory=list)
    final_answer: str = ""
    conversation_id: str = ""
    error: str | None = None  # the agent itself crashed (not a tool failure)
    #: due calls and listings the fault could not act on (content-free, from the server)
    not_applicable: list[str] = field(default_factory=list)

    def calls_to(self, tool: str) -> list[Step]:
        return [s for s in self.steps if s.tool == tool]

    def event_kinds(self) -> set[str]:
        return {e.kind for e in self.events} | {e.kind for e in self.mitigation_events}

    def summary(self, aliases: Aliases | None = None) -> dict[str, Any]:
        """Content-free description: per step tool, arguments alias, outcome, flags; the answer's
        alias. Share ``aliases`` between the runs of one report to compare them."""
        aliases = Aliases() if aliases is None else aliases
        return {
            "scenario_id": self.scenario_id,
            "agent": self.agent,
            "mode": self.mode,
            "mitigations": list(self.mitigations),
            "steps": [
                {
                    "tool": s.tool,
                    "args": aliases("args-", s.args_digest),
                    "outcome": s.key[2],
                    "injected": s.injected,
                    "flags": s.flags,
                }
                for s in self.steps
            ],
            "events": sorted(self.event_kinds()),
            "answer": aliases("answer-", digest(self.final_answer)),
        }


@dataclass(frozen=True)
class Divergence:
    """The first step at which two trajectories differ; ``step`` is 0-based."""

    step: int
    reason: str
    left: tuple[str, str, str] | None
    right: tuple[str, str, str] | None


def first_divergence(left: Trajectory, right: Trajectory) -> Divergence | None:
    """First step where tool, arguments digest or outcome differ; ``None`` when identical.

    When every shared step matches, an extra or missing step diverges at the shorter length,
    and equal steps with different final answers diverge at ``len(steps)`` ("answer").
    """
    for i, (a, b) in enumerate(zip(left.steps, right.steps, strict=False)):
        if a.key == b.key:
            continue
        if a.tool != b.tool:
            reason = f"tool {a.tool} -> {b.tool}"
        elif a.args_digest != b.args_digest:
            reason = f"arguments of {a.tool} differ"
        else:
            reason = f"{a.tool} outcome {a.key[2]} -> {b.key[2]}"
        return Divergence(i, reason, a.key, b.key)
    n = min(len(left.steps), len(right.steps))
    if len(left.steps) != len(right.steps):
        longer = left.steps if len(left.steps) > n else right.steps
        side = "extra" if len(right.steps) > n else "missing"
        reason = f"{side} step {longer[n].tool}"
        return Divergence(
            n,
            reason,
            left.steps[n].key if len(left.steps) > n else None,
            right.steps[n].key if len(right.steps) > n else None,
        )
    if digest(left.final_answer) != digest(right.final_answer):
        return Divergence(n, "final answer differs", None, None)
    return None


# =============================================================================================
# Recording
# =============================================================================================


@dataclass
class Recording:
    """Responses of a run keyed by (tool, arguments digest), in the order received."""

    responses: dict[str, list[CallToolResult]] = field(default_factory=lambda: defaultdict(list))
    tools: ListToolsResult | None = None

    def add(self, tool: str, arguments: Mapping[str, Any] | None, result: CallToolResult) -> None:
        self.responses[call_key(tool, arguments)].append(result)

    def lookup(
        self, tool: str, arguments: Mapping[str, Any] | None, occurrence: int
    ) -> CallToolResult | None:
        """The ``occurrence``-th (0-based) recorded response to this exact call.

        Repeats of a call beyond what was recorded get the last recorded response: a replay
        must not invent a different answer for a retry.
        """
        seen = self.responses.get(call_key(tool, arguments))
        if not seen:
            return None
        return seen[min(occurrence, len(seen) - 1)]

    def __len__(self) -> int:
        return sum(len(v) for v in self.responses.values())


class RecordingClient(ClientWrapper):
    """Forward calls to a client, appending each to a trajectory (and a recording, if given).

    This sits directly above the real client, so it sees exactly the calls that reach the
    server — a retry done by a mitigation wrapper above it is a step of its own.
    ``response_id`` is read at call time (the agent's current model step).
    """

    def __init__(
        self,
        inner: Any,
        trajectory: Trajectory,
        *,
        recording: Recording | None = None,
        response_id: Callable[[], str | None] = lambda: None,
        injected: Callable[[str, CallToolResult | None], bool | None] = lambda tool, r: None,
    ) -> None:
        super().__init__(inner)
        self.trajectory = trajectory
        self.recording = recording
        self._response_id = response_id
        self._injected = injected

    async def list_tools(self, *args: Any, **kwargs: Any) -> ListToolsResult:
        listed = await super().list_tools(*args, **kwargs)
        self.trajectory.listings.append(list(listed.tools))
        if self.recording is not None and self.recording.tools is None:
            self.recording.tools = listed
        return listed

    async def handle(
        self, name: str, arguments: dict[str, Any], timeout: float | None, send: Send
    ) -> CallToolResult:
        started = time.perf_counter()
        result, error = await try_call(send, timeout)
        failure = classify_failure(result, error)
        outcome: Outcome = (
            "ok" if failure is None else "timeout" if failure is FailureClass.TIMEOUT else "error"
        )
        step = Step(
            index=len(self.trajectory.steps),
            tool=name,
            arguments=arguments,
            outcome=outcome,
            failure=failure,
            result=result,
            response_id=self._response_id(),
            error_message=first_line(error) if error is not None else "",
            duration_s=time.perf_counter() - started,
            injected=self._injected(name, result),
        )
        self.trajectory.steps.append(step)
        if self.recording is not None and result is not None:
            self.recording.add(name, arguments, result)
        if error is not None:
            raise error
        assert result is not None
        return result
