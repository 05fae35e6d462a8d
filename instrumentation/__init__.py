"""Content-free OpenTelemetry instrumentation of MCP clients (mcp 2.x).

Every ``tools/call`` made through ``mcp.Client`` or a raw ``ClientSession`` leaves one CLIENT
span ``tools/call <tool>`` carrying only the call's shape: tool, server, argument and result
byte sizes (``record.arguments_size`` / ``record.result_size``), failure class
(``error.type``), conversation, agent, position and model response. ``tools/list`` leaves a
``tools/list`` span with one ``toolwatch.tool.listed`` event per tool (name + digest).
Arguments, results, descriptions and error messages are never recorded.

Three lines for an agent::

    from toolwatch.instrumentation import configure_otlp, instrument, model_response
    instrument(tracer_provider=configure_otlp(service_name="my-agent"))
    with model_response(response.id, conversation_id=chat_id): ...  # around the calls

Alongside an existing OpenTelemetry set-up (the application already exports to a backend):
``provider.add_span_processor(toolwatch_span_processor(url))`` sends the tool spans to toolwatch
as well; ``instrument(tracer_provider=configure_otlp(url))`` to toolwatch only (wrap the
application's own exporter in :func:`without_toolwatch_spans` to keep them out of it on a shared
provider). Both count what they exported and dropped (:func:`delivery`, ``processor.flush()``);
a span the OpenTelemetry set-up would not start or end (a raising processor) is counted by
:func:`unrecorded_spans`, and the call itself goes on.
OpenTelemetry's ``suppress_instrumentation()`` is honoured: calls made inside it leave no span.

Zero code: ``opentelemetry-instrument python agent.py`` loads :class:`ToolwatchMCPInstrumentor`
from the ``opentelemetry_instrumentor`` entry point. Spans go to the global tracer provider if
an SDK one is configured (e.g. by a distro) by the first call, else to toolwatch's own
OTLP/HTTP exporter (``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`` or ``http://127.0.0.1:4318``);
``OTEL_TRACES_EXPORTER=none`` turns that off.

Attribution, declared by the agent loop with :func:`conversation` / :func:`model_response`
(contextvars: async-safe, per task). Fallbacks when nothing is declared:

* conversation (``gen_ai.conversation.id``): one id per process, ``proc-<32 hex>`` (renewed
  after ``fork``); positions count calls in the order they start;
* model response (``gen_ai.response.id``): each call is its own response, ``auto-<span id>``.
  Parallel calls of one response then look like separate responses (the time cue scores their
  short gaps), so an agent that issues parallel calls should declare its responses;
  ``model_response()`` without an id makes up one ``auto-<hex>`` id for its block;
* agent (``toolwatch.agent.id``): ``None``, the main agent;
* MCP server (``toolwatch.mcp.server.name``): :func:`describe_session` name, else the server's
  ``serverInfo`` name, else ``instrument(server_name=...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolwatch.instrumentation.client.context import conversation, model_response

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from toolwatch.instrumentation.client.attributes import error_type_of
    from toolwatch.instrumentation.client.instrumentor import (
        ToolwatchMCPInstrumentor,
        describe_session,
        unrecorded_spans,
    )
    from toolwatch.instrumentation.client.provenance import (
        forget_conversation,
        provenance_stats,
    )
    from toolwatch.instrumentation.export.otlp import (
        configure_otlp,
        delivery,
        only_toolwatch_spans,
        toolwatch_span_processor,
        without_toolwatch_spans,
    )
    from toolwatch.instrumentation.export.processor import Delivery, ToolwatchSpanProcessor
    from toolwatch.instrumentation.export.replay import send_records
    from toolwatch.instrumentation.provenance import ProvenanceTracker

__all__ = [
    "Delivery",
    "ToolwatchMCPInstrumentor",
    "ToolwatchSpanProcessor",
    "configure_otlp",
    "conversation",
    "delivery",
    "describe_session",
    "error_type_of",
    "forget_conversation",
    "instrument",
    "model_response",
    "only_toolwatch_spans",
    "provenance_stats",
    "send_records",
    "toolwatch_span_processor",
    "uninstrument",
    "unrecorded_spans",
    "without_toolwatch_spans",
]

# Heavy modules (mcp, the OTel SDK) load on first use so that `import toolwatch` stays cheap.
_LAZY = {
    "ToolwatchMCPInstrumentor": "toolwatch.instrumentation.client.instrumentor",
    "describe_session": "toolwatch.instrumentation.client.instrumentor",
    "unrecorded_spans": "toolwatch.instrumentation.client.instrumentor",
    "error_type_of": "toolwatch.instrumentation.client.attributes",
    "forget_conversation": "toolwatch.instrumentation.client.provenance",
    "provenance_stats": "toolwatch.instrumentation.client.provenance",
    "configure_otlp": "toolwatch.instrumentation.export.otlp",
    "delivery": "toolwatch.instrumentation.export.otlp",
    "only_toolwatch_spans": "toolwatch.instrumentation.export.otlp",
    "toolwatch_span_processor": "toolwatch.instrumentation.export.otlp",
    "without_toolwatch_spans": "toolwatch.instrumentation.export.otlp",
    "Delivery": "toolwatch.instrumentation.export.processor",
    "ToolwatchSpanProcessor": "toolwatch.instrumentation.export.processor",
    "send_records": "toolwatch.instrumentation.export.replay",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def instrument(
    tracer_provider: TracerProvider | None = None,
    server_name: str | None = None,
    provenance: bool | ProvenanceTracker | None = None,
) -> None:
    """Instrument mcp clients; calling it again re-instruments with the new settings.

    ``tracer_provider``: where the spans go (default: see the module docstring).
    ``server_name``: server name for sessions whose server does not identify itself.
    ``provenance``: argument provenance (numbers only, see below): ``None`` = on unless
    ``TOOLWATCH_PROVENANCE=off``; ``True``/``False``; or a ``ProvenanceTracker`` of your own.
    """
    from toolwatch.instrumentation.client.instrumentor import instrument as _instrument

    _instrument(tracer_provider=tracer_provider, server_name=server_name, provenance=provenance)


def uninstrument() -> None:
    """Remove the wrappers; calls made afterwards leave no span."""
    from toolwatch.instrumentation.client.instrumentor import uninstrument as _uninstrument

    _uninstrument()
