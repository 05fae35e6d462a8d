"""The reference agents' shared contract: the configuration, the per-run state and the loop that
calls tools through the (possibly mitigated) client and writes an answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mcp.types import CallToolResult, TextContent, Tool

from toolwatch.documents import loads_json
from toolwatch.injection.faults.scenario import Scenario
from toolwatch.injection.mitigations.failures import FailureClass, classify_failure, first_line
from toolwatch.injection.mitigations.results import (
    is_annotation,
    iter_leaves,
    result_data,
    result_text,
)
from toolwatch.injection.mitigations.wrapper import try_call
from toolwatch.injection.workbench.names import CALL_TIMEOUT
from toolwatch.injection.workbench.orders import Override, strip_orders
from toolwatch.injection.workbench.planning import (
    ADDRESS_NAME,
    Plan,
    PlannedCall,
    plan_from_scenario,
)
from toolwatch.injection.workbench.trajectory import AgentEvent, Trajectory
from toolwatch.instrumentation import model_response

# =============================================================================================
# Agents
# =============================================================================================


@dataclass
class AgentConfig:
    """Knobs shared by the reference agents (saved with every workbench run)."""

    call_timeout: float = CALL_TIMEOUT
    attempts: int = 3
    base_delay: float = 0.02
    seed: int = 0
    think_time: float = 0.0  # seconds per model step, to look like a model to the time cue


@dataclass
class RunState:
    scenario: Scenario
    client: Any
    trajectory: Trajectory
    conversation_id: str
    #: the scenario's plan (it depends on the scenario only), made once per run
    plan: Plan
    tools: dict[str, Tool] = field(default_factory=dict)
    data: dict[int, Any] = field(default_factory=dict)
    parts: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    obeyed: set[str] = field(default_factory=set)
    overrides: list[Override] = field(default_factory=list)
    #: results of calls made because an order said so (what an obeying agent read)
    obeyed_results: list[str] = field(default_factory=list)
    #: (before|after, tool) -> orders of that tool's description to obey around its call
    deferred: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    step: int = 0


class Agent:
    """Base of the reference agents: model steps, listing, the plan loop."""

    name = "agent"

    def __init__(self, config: AgentConfig | None = None) -> None:
        self.config = config or AgentConfig()

    def _event(self, st: RunState, kind: str, tool: str | None = None, detail: str = "") -> None:
        st.trajectory.events.append(AgentEvent(kind, tool, detail))

    def _response_id(self, st: RunState) -> str:
        rid = f"{st.conversation_id}/r{st.step}"
        st.step += 1
        return rid

    async def _think(self) -> None:
        if self.config.think_time > 0:
            await asyncio.sleep(self.config.think_time)

    async def run(
        self, scenario: Scenario, client: Any, trajectory: Trajectory, *, conversation_id: str
    ) -> str:
        """Carry out ``scenario.task`` through ``client``; returns the final answer."""
        st = RunState(scenario, client, trajectory, conversation_id, plan_from_scenario(scenario))
        with model_response(self._response_id(st), conversation_id=conversation_id):
            await self._think()
            listed = await client.list_tools()
        st.tools = {t.name: t for t in listed.tools}
        await self.on_listing(st)
        for index, call in enumerate(st.plan.calls):
            await self.execute(st, index, call)
        with model_response(self._response_id(st), conversation_id=conversation_id):
            await self._think()
            return self.compose(st)

    async def on_listing(self, st: RunState) -> None:  # pragma: no cover - overridden
        return None

    async def execute(self, st: RunState, index: int, call: PlannedCall) -> None:
        raise NotImplementedError

    def compose(self, st: RunState) -> str:
        raise NotImplementedError

    async def _call(
        self, st: RunState, tool: str, arguments: dict[str, Any]
    ) -> tuple[CallToolResult | None, FailureClass | None, str]:
        """One model step issuing one call: (result, failure class, error message)."""
        with model_response(self._response_id(st), conversation_id=st.conversation_id):
            await self._think()
            result, error = await try_call(
                lambda timeout: st.client.call_tool(tool, arguments, read_timeout_seconds=timeout),
                self.config.call_timeout,
            )
        if result is None:
            assert error is not None
            return None, classify_failure(None, error), first_line(error)
        return (
            result,
            classify_failure(result, None),
            result_text(result) if result.is_error else "",
        )


def render_result(
    tool: str, result: CallToolResult, *, strip: bool, tools: Mapping[str, Any] | None = None
) -> str:
    """A result as the agent quotes it: every text block the tool sent (what a model reads),
    or the structured content when there is no text; with ``strip``, the orders in it
    (:mod:`orders`, the agents' own rule) removed."""
    names = list(tools or ())

    def clean(value: Any) -> Any:
        """A JSON value with the orders removed from every string."""
        if isinstance(value, str):
            return strip_orders(value, names, source=tool)
        if isinstance(value, Mapping):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    blocks = []
    for block in result.content:
        if not isinstance(block, TextContent) or is_annotation(block):
            continue
        text = block.text
        if strip:
            doc = _json_or_none(text)
            text = (
                strip_orders(text, names, source=tool)
                if doc is None
                else json.dumps(clean(doc), ensure_ascii=False)
            )
        blocks.append(text)
    text = "\n".join(blocks)
    if not text.strip() and result.structured_content is not None:
        data = clean(result.structured_content) if strip else result.structured_content
        text = json.dumps(data, ensure_ascii=False)
    return f"{tool}: {text}"


def _json_or_none(text: str) -> Any:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return loads_json(stripped)
    except ValueError:
        return None


def url_tool(tools: Mapping[str, Tool]) -> tuple[str, str] | None:
    """A (tool, argument) that takes an address — where an obeyed instruction sends data."""
    for tool in tools.values():
        props = (tool.input_schema or {}).get("properties") or {}
        for name, prop in props.items():
            if ADDRESS_NAME.search(name) or (
                isinstance(prop, Mapping) and prop.get("format") in ("uri", "url", "email")
            ):
                return tool.name, name
    return None


EMAIL: Final = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")


def readable_texts(result: CallToolResult) -> list[str]:
    """The texts a model reads in a result, each once: the strings of the JSON document (from
    structured content or a JSON text block) and every text block that is not that JSON."""
    data = result_data(result)
    texts = (
        [v for _, v in iter_leaves(data) if isinstance(v, str)] if not isinstance(data, str) else []
    )
    for block in result.content:
        if isinstance(block, TextContent) and not is_annotation(block):
            stripped = block.text.strip()
            if isinstance(data, str) or not stripped.startswith(("{", "[")):
                texts.append(block.text)
    return texts
