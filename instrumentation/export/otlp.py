"""OTLP/HTTP export set-up: the three-line path, an existing OTel set-up, the zero-code fallback.

* :func:`configure_otlp` builds an SDK :class:`TracerProvider` that batches toolwatch spans to
  an OTLP/HTTP (protobuf) endpoint — the toolwatch collector listens on ``127.0.0.1:4318`` by
  default. ``instrument(tracer_provider=configure_otlp(...))`` sends the tool spans to toolwatch
  *only*, while the application's own provider keeps exporting everything else (the tool spans
  still join the application's traces: the context is shared).
* :func:`toolwatch_span_processor` is the same export as a span processor, to add to a provider
  the application already has: tool spans then go to toolwatch *and* to the application's other
  exporters. :func:`without_toolwatch_spans` wraps one of those exporters' processors so the
  tool spans go to toolwatch only after all.

By default only toolwatch's own spans are exported: the MCP SDK's spans may carry JSON-RPC error
messages (content) in their status, and the collector ignores them anyway. Every processor made
here counts what it exported and dropped (:func:`delivery`).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Collection, Mapping
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from toolwatch.instrumentation.export.processor import (
    DEFAULT_MAX_QUEUE,
    Delivery,
    ToolwatchSpanProcessor,
)
from toolwatch.record import fit_string

log = logging.getLogger(__name__)

#: Instrumentation scope of every span toolwatch's client instrumentation creates.
TRACER_NAME = "toolwatch.instrumentation"
DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
DEFAULT_SERVICE_NAME = "toolwatch-agent"
TRACES_PATH = "/v1/traces"

#: Instrumentation scopes of toolwatch's spans (what "only toolwatch's spans" keeps).
TOOLWATCH_SCOPES: tuple[str, ...] = (TRACER_NAME,)

_fallback_lock = threading.Lock()
_fallback: TracerProvider | None = None
_fallback_error = False  # the environment's endpoint was refused (and said so) already
_processors: weakref.WeakKeyDictionary[TracerProvider, ToolwatchSpanProcessor] = (
    weakref.WeakKeyDictionary()
)


def traces_url(endpoint: str, *, as_is: bool = False) -> str:
    """The ``/v1/traces`` URL of an OTLP/HTTP endpoint given as a base URL or the full URL;
    ``as_is``: the URL itself, only checked (OTLP's rule for a signal's own endpoint,
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, whatever its path)."""
    url = endpoint.strip()
    try:
        parts = urlsplit(url)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:  # an unclosed bracket, a bad port
        usable = False
    if not usable:
        raise ValueError(f"OTLP endpoint {endpoint!r} is not an http:// or https:// URL")
    if as_is or parts.path.rstrip("/").endswith(TRACES_PATH):
        return url
    return url.rstrip("/") + TRACES_PATH


class ScopeFilterProcessor(SpanProcessor):
    """Forwards to ``inner`` only the spans of the given instrumentation scopes (``keep``), or
    only the others (``keep=False``)."""

    def __init__(
        self,
        inner: SpanProcessor,
        scope_name: str | Collection[str] = TRACER_NAME,
        *,
        keep: bool = True,
    ) -> None:
        self._inner = inner
        self._scopes = frozenset([scope_name] if isinstance(scope_name, str) else scope_name)
        self._keep = keep

    def _passes(self, span: ReadableSpan) -> bool:
        return (_scope_name(span) in self._scopes) is self._keep

    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        if self._passes(span):
            self._inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self._passes(span):
            self._inner.on_end(span)

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


def only_toolwatch_spans(processor: SpanProcessor) -> SpanProcessor:
    """``processor``, given toolwatch's tool spans only."""
    return ScopeFilterProcessor(processor, TOOLWATCH_SCOPES)


def without_toolwatch_spans(processor: SpanProcessor) -> SpanProcessor:
    """``processor``, given every span but toolwatch's (keep tool spans out of a backend)."""
    return ScopeFilterProcessor(processor, TOOLWATCH_SCOPES, keep=False)


def _scope_name(span: ReadableSpan) -> str | None:
    scope = span.instrumentation_scope
    return scope.name if scope is not None else None


def toolwatch_span_processor(
    endpoint: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    token: str | None = None,
    timeout: float = 10.0,
    only_toolwatch: bool = True,
    block: bool = False,
    max_queue_size: int = DEFAULT_MAX_QUEUE,
    shutdown_timeout: float | None = None,
) -> ToolwatchSpanProcessor:
    """A span processor exporting (batched, OTLP/HTTP protobuf) to a toolwatch collector.

    Add it to the tracer provider an application already has, so tool spans reach toolwatch
    besides the application's own backends::

        provider.add_span_processor(toolwatch_span_processor("http://127.0.0.1:4318"))
        instrument(tracer_provider=provider)

    ``endpoint``: base URL or the full ``/v1/traces`` URL; ``None``: the standard
    ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``, else ``http://127.0.0.1:4318``. ``token``: the
    collector's bearer token (or pass ``headers``). ``only_toolwatch``: export toolwatch's
    spans only (default). ``block``: when the queue is full, wait for room instead of dropping
    (for runs that must not lose a span; it slows the caller instead). ``processor.flush()``
    exports what is queued and returns the
    :class:`~toolwatch.instrumentation.export.processor.Delivery` counts.
    ``shutdown_timeout``: seconds the provider's shutdown — its exit hook — spends delivering
    what is left before counting it as lost (a dead or hung collector must not hold up the
    agent's exit; call ``flush()`` first to wait longer); ``None``:
    ``$TOOLWATCH_SHUTDOWN_TIMEOUT``, else 5.
    """
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    exporter = OTLPSpanExporter(
        endpoint=resolve_endpoint(endpoint), headers=all_headers or None, timeout=timeout
    )
    return ToolwatchSpanProcessor(
        exporter,
        scopes=TOOLWATCH_SCOPES if only_toolwatch else None,
        block=block,
        max_queue_size=max_queue_size,
        shutdown_timeout=shutdown_timeout,
    )


def delivery(provider: TracerProvider) -> Delivery | None:
    """The counts of the processor :func:`configure_otlp` gave ``provider`` (None if another
    made it)."""
    processor = _processors.get(provider)
    return processor.delivery() if processor is not None else None


def configure_otlp(
    endpoint: str | None = None,
    service_name: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    set_global: bool = False,
    only_toolwatch: bool = True,
    timeout: float = 10.0,
    block: bool = False,
    token: str | None = None,
    shutdown_timeout: float | None = None,
) -> TracerProvider:
    """An SDK tracer provider exporting (batched) to an OTLP/HTTP protobuf endpoint.

    ``endpoint`` is a base URL (``/v1/traces`` is appended) or the full traces URL; ``None``
    reads ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` as every
    OTLP exporter does, else ``http://127.0.0.1:4318`` (a bad value raises ``ValueError``
    naming the variable); ``service_name`` ``None``: ``$OTEL_SERVICE_NAME``, else
    ``toolwatch-agent``;
    ``headers`` e.g. ``{"Authorization": "Bearer <token>"}`` for a collector with a token.
    ``only_toolwatch`` drops every span but toolwatch's own (see the module docstring);
    ``set_global`` also makes it the process-wide provider; ``block``, ``token`` and
    ``shutdown_timeout`` as for :func:`toolwatch_span_processor`. Spans still queued at exit
    are flushed by the provider's exit hook for at most ``shutdown_timeout`` seconds (None:
    ``$TOOLWATCH_SHUTDOWN_TIMEOUT``, else 5), the rest counted as lost; call
    ``provider.force_flush()`` to flush earlier (and wait longer) and :func:`delivery` for the
    counts.

    Typical use::

        from toolwatch.instrumentation import configure_otlp, instrument
        instrument(tracer_provider=configure_otlp(service_name="my-agent"))
    """
    url = resolve_endpoint(endpoint)
    service_name = resolve_service_name(service_name)
    # fitted as a record's string is: the collector rejects every span of a longer name
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: fit_string(service_name)}))
    processor = toolwatch_span_processor(
        url,
        headers=headers,
        token=token,
        timeout=timeout,
        only_toolwatch=only_toolwatch,
        block=block,
        shutdown_timeout=shutdown_timeout,
    )
    provider.add_span_processor(processor)
    _processors[provider] = processor
    if set_global:
        trace.set_tracer_provider(provider)
    log.debug("toolwatch: exporting spans of %r to %s", service_name, url)
    return provider


ENV_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
ENV_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
ENV_SERVICE_NAME = "OTEL_SERVICE_NAME"


def resolve_endpoint(endpoint: str | None = None) -> str:
    """The traces URL to export to: ``endpoint`` when the code gives one, else the standard
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``, else
    ``http://127.0.0.1:4318`` — so an agent deployed with those variables set reaches its
    collector whether it is instrumented in code or zero-code. As the OTLP exporter spec says,
    the traces variable is the URL used as it is (``http://gw/otlp/traces`` gets no
    ``/v1/traces``), the general one a base URL the traces path is appended to. A value that
    is no http(s) URL raises ``ValueError`` naming the variable it came from."""
    if endpoint is not None:
        return traces_url(endpoint)
    for name in (ENV_TRACES_ENDPOINT, ENV_ENDPOINT):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                return traces_url(value, as_is=name == ENV_TRACES_ENDPOINT)
            except ValueError:
                raise ValueError(
                    f"{name}={value!r} is not an http:// or https:// URL "
                    "(e.g. http://127.0.0.1:4318)"
                ) from None
    return traces_url(DEFAULT_ENDPOINT)


def resolve_service_name(service_name: str | None = None) -> str:
    """``service_name``, else ``$OTEL_SERVICE_NAME``, else ``toolwatch-agent``."""
    if service_name is not None:
        return service_name
    return os.environ.get(ENV_SERVICE_NAME, "").strip() or DEFAULT_SERVICE_NAME


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
    global _fallback_error
    with _fallback_lock:
        if _fallback is None:
            try:
                url = resolve_endpoint()
            except ValueError as exc:
                if not _fallback_error:  # said once; every call's span is still counted
                    _fallback_error = True
                    log.warning(
                        "toolwatch: %s; tool-call spans are not exported (counted by "
                        "unrecorded_spans())",
                        exc,
                    )
                raise
            _fallback = configure_otlp(url, resolve_service_name())
            log.info(
                "toolwatch: no OpenTelemetry SDK configured; exporting tool-call spans to %s", url
            )
        return _fallback
