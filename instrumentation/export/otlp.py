"""OTLP/HTTP export set-up: the three-line path for users and the zero-code fallback.

:func:`configure_otlp` builds an SDK :class:`TracerProvider` that batches toolwatch spans to an
OTLP/HTTP (protobuf) endpoint — the toolwatch collector listens on ``127.0.0.1:4318`` by
default. By default it exports *only* toolwatch's own spans: the MCP SDK's spans may carry
JSON-RPC error messages (content) in their status, and the collector drops them anyway.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

log = logging.getLogger(__name__)

#: Instrumentation scope of every span toolwatch's client instrumentation creates.
TRACER_NAME = "toolwatch.instrumentation"
DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
DEFAULT_SERVICE_NAME = "toolwatch-agent"
TRACES_PATH = "/v1/traces"

_fallback_lock = threading.Lock()
_fallback: TracerProvider | None = None


def traces_url(endpoint: str) -> str:
    """The ``/v1/traces`` URL of an OTLP/HTTP endpoint given as a base URL or the full URL."""
    url = endpoint.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"OTLP endpoint {endpoint!r} is not an http:// or https:// URL")
    if parts.path.rstrip("/").endswith(TRACES_PATH):
        return url
    return url.rstrip("/") + TRACES_PATH


class ScopeFilterProcessor(SpanProcessor):
    """Forwards to ``inner`` only the spans of one instrumentation scope."""

    def __init__(self, inner: SpanProcessor, scope_name: str = TRACER_NAME) -> None:
        self._inner = inner
        self._scope = scope_name

    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        if _scope_name(span) == self._scope:
            self._inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if _scope_name(span) == self._scope:
            self._inner.on_end(span)

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


def _scope_name(span: ReadableSpan) -> str | None:
    scope = span.instrumentation_scope
    return scope.name if scope is not None else None


def configure_otlp(
    endpoint: str = DEFAULT_ENDPOINT,
    service_name: str = DEFAULT_SERVICE_NAME,
    headers: Mapping[str, str] | None = None,
    *,
    set_global: bool = False,
    only_toolwatch: bool = True,
    timeout: float = 10.0,
) -> TracerProvider:
    """An SDK tracer provider exporting (batched) to an OTLP/HTTP protobuf endpoint.

    ``endpoint`` is a base URL (``/v1/traces`` is appended) or the full traces URL;
    ``headers`` e.g. ``{"Authorization": "Bearer <token>"}`` for a collector with a token.
    ``only_toolwatch`` drops every span but toolwatch's own (see the module docstring);
    ``set_global`` also makes it the process-wide provider. Spans still queued at exit are
    flushed by the provider's exit hook; call ``provider.shutdown()`` to flush earlier.

    Typical use::

        from toolwatch.instrumentation import configure_otlp, instrument
        instrument(tracer_provider=configure_otlp(service_name="my-agent"))
    """
    url = traces_url(endpoint)
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    exporter = OTLPSpanExporter(
        endpoint=url, headers=dict(headers) if headers else None, timeout=timeout
    )
    processor: SpanProcessor = BatchSpanProcessor(exporter)
    if only_toolwatch:
        processor = ScopeFilterProcessor(processor)
    provider.add_span_processor(processor)
    if set_global:
        trace.set_tracer_provider(provider)
    log.debug("toolwatch: exporting spans of %r to %s", service_name, url)
    return provider


def _env_endpoint() -> str:
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces  # used as given, per the OTLP exporter spec
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return traces_url(base) if base else traces_url(DEFAULT_ENDPOINT)


def fallback_provider() -> TracerProvider | None:
    """Toolwatch's own OTLP provider for when no SDK provider was configured at all.

    Used by the instrumentor (zero-code ``opentelemetry-instrument`` without a distro, or
    ``instrument()`` with no provider anywhere). Endpoint from
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``, else
    ``http://127.0.0.1:4318``; service from ``OTEL_SERVICE_NAME``. ``None`` (no export) when
    ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``. Made once per process.
    """
    global _fallback
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    with _fallback_lock:
        if _fallback is None:
            service = os.environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME
            _fallback = configure_otlp(_env_endpoint(), service)
            log.info(
                "toolwatch: no OpenTelemetry SDK configured; exporting tool-call spans to %s",
                _env_endpoint(),
            )
        return _fallback
