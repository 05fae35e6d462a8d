"""A low-level MCP server whose ``tools/list`` comes in pages, for the proxy's tests of paged
listings (the faulty tool on a later page). Support code, not collected."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server


def paged_upstream(names: list[str], page: int = 1) -> Server[Any]:
    """A low-level server listing ``names`` ``page`` tools a page (cursor = next index); every
    tool answers a fixed text."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        start = int(params.cursor) if params and params.cursor else 0
        end = start + page
        tools = [
            types.Tool(name=n, description=n, input_schema={"type": "object"})
            for n in names[start:end]
        ]
        return types.ListToolsResult(
            tools=tools, next_cursor=str(end) if end < len(names) else None
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)
