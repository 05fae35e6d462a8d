"""Instrumenting the MCP client (mcp 2.x): the wrappers that leave one content-free span per
``tools/call`` and ``tools/list``, and the agent's declaration of conversation and model response
(contextvars). Users import from :mod:`toolwatch.instrumentation`."""
