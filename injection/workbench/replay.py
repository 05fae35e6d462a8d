"""The replay server: serves a scenario's recorded clean responses as a real MCP server, with the
fault engine deciding which call is faulted (the same engine the proxy uses).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from toolwatch.injection.faults.effects import announce_injection
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.server import ScenarioServer
from toolwatch.injection.workbench.trajectory import (
    Recording,
    call_key,
)


@dataclass(frozen=True)
class Delivery:
    """One call (``unit`` ``tools/list``: a listing) the replay server answered: was the fault
    applied, and how."""

    tool: str
    occurrence: int
    applied: bool
    note: str = ""
    unit: str = "call"

    def describe(self) -> str:
        """Content-free: the unit, its number, the tool and the engine's note."""
        return f"{self.unit} #{self.occurrence} of {self.tool!r}: {self.note}"


def _wire(value: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


class ReplayServer(MCPServer):
    """An ``MCPServer`` answering from a :class:`Recording`, with one fault armed (or none).

    Occurrences of each tool are counted from 1 for this server instance (one per run), and
    the fault engine decides per occurrence. A due call or listing the fault could not act on
    is kept in :attr:`not_applicable`, as the proxy records it (its outcomes), so a verdict can
    say the fault was not exercised rather than judge a run it never touched. A call that was
    never recorded (the faulted agent went somewhere new) is answered by ``fallback`` when
    given — the scenario server — or is a tool error saying so.
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
        self.not_applicable: list[Delivery] = []
        #: each listing as its upstream gave it, before the fault: what a poisoned
        #: description is told from (not the scenario's text, which a real server rewords)
        self.upstream_listings: list[list[types.Tool]] = []
        self._listing_poisoned = False  # a C2/C4 description fault is in force

    def _clean_listing(self) -> list[dict[str, Any]]:
        if self.recording.tools is not None:
            return [_wire(t) for t in self.recording.tools.tools]
        if self.fallback is not None:
            return [t.to_wire() for t in self.fallback.scenario.tools]
        return []

    async def list_tools(self) -> list[types.Tool]:
        tools = self._clean_listing()
        self.upstream_listings.append([types.Tool.model_validate(t) for t in tools])
        if self.engine is not None:
            self.listings += 1
            nxt = self.calls[self.engine.fault.tool] + 1
            effect = self.engine.rewrite_listing(tools, listing=self.listings, next_call=nxt)
            self._listing_poisoned = self.engine.poisoned_after(
                tools, effect, self._listing_poisoned
            )
            if effect.not_applicable:
                target = self.engine.fault.tool
                self.not_applicable.append(
                    Delivery(target, self.listings, False, effect.note, "tools/list")
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
            if plan.due and not effect.applied:
                self.not_applicable.append(Delivery(name, n, False, effect.note))
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
