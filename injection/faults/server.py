"""A real MCP server (``MCPServer``) serving a scenario's tools with fixed clean responses.

With it, proxy + server run fully offline and every run sees the same upstream, so a
difference between a clean and a faulted run is the fault's doing. Tools are announced with
the scenario's declared input (and output) schemas, and arguments are validated against them
the way a server built on typed signatures would: a bad or unknown argument is a tool error.
A tool knows one record (its clean response): asked for another entity (an identifier
argument the response echoes with another value: ``symbol="AAPL"`` to a tool whose record is
about ``NVDA``), it answers "not found" rather than the wrong record.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from toolwatch.injection.faults.scenario import (
    Scenario,
    ToolSpec,
    argument_errors,
    validation_errors_text,
)
from toolwatch.injection.mitigations.values import identifier_mismatches

logger = logging.getLogger(__name__)


class ScenarioServer(MCPServer):
    """``MCPServer`` whose tools come from a scenario instead of Python functions.

    ``list_tools`` and ``call_tool`` are the public hooks ``MCPServer``'s request handlers go
    through, so overriding them keeps the SDK's own transport, era negotiation, error mapping
    (a ``ToolError`` becomes an ``is_error`` result) and telemetry.
    """

    def __init__(self, scenario: Scenario, *, name: str | None = None) -> None:
        super().__init__(name=name or f"{scenario.domain}-tools")
        self.scenario = scenario
        self._tools: dict[str, ToolSpec] = {t.name: t for t in scenario.tools}

    async def list_tools(self) -> list[types.Tool]:
        return [types.Tool.model_validate(t.to_wire()) for t in self.scenario.tools]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[Any, Any] | None = None,
    ) -> types.CallToolResult:
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(f"Unknown tool: {name}")
        problems = argument_errors(tool.input_schema, arguments)
        if problems:
            raise ToolError(validation_errors_text(name, problems))
        other = identifier_mismatches(arguments, tool.response.json_view())
        if other:
            # The one record this tool knows is about another entity: say so, as a real
            # server would, instead of answering about the wrong one.
            asked = ", ".join(f"{k}={arguments[k]!r}" for k in other)
            raise ToolError(f"Not found: {name} has no record for {asked}")
        return types.CallToolResult.model_validate(tool.response.to_result())


def scenario_server(scenario: Scenario, *, name: str | None = None) -> MCPServer:
    """An ``MCPServer`` serving ``scenario``'s tools and clean responses (connect in-process
    with ``mcp.Client(server)``, or run it over stdio / streamable HTTP)."""
    return ScenarioServer(scenario, name=name)
