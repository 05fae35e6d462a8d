"""The mcp SDK's log lines, content-free and one line each, for the proxy's log.

A misbehaving upstream makes the SDK log a traceback (``logger.exception``: a line that is not
valid JSON-RPC, a failed read), and the exception's text quotes what the upstream sent —
pydantic's ``input_value='{"jsonrpc": …}'`` is a tool's result in the proxy's log. The filter
keeps the SDK's own message and names the exception by its type (and, for a validation error,
pydantic's error types), never by its text; exceptions passed as ``%s`` arguments likewise.
The proxy reports what the failure means for a call itself (:mod:`.upstream`).
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

SDK_LOGGER = "mcp"


def describe_exception(exc: BaseException) -> str:
    """``TypeName`` (``ValidationError: json_invalid, missing``): what failed, not its text."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_exception(e) for e in exc.exceptions)
    if isinstance(exc, ValidationError):
        kinds = sorted({str(e["type"]) for e in exc.errors()})
        return f"{type(exc).__name__}: {', '.join(kinds)}"
    return type(exc).__name__


class ContentFreeFilter(logging.Filter):
    """Rewrites a record carrying an exception into one line naming the exception's type."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        has_exc_arg = isinstance(record.args, tuple) and any(
            isinstance(a, BaseException) for a in record.args
        )
        if exc is None and not has_exc_arg:
            return True
        if has_exc_arg:
            assert isinstance(record.args, tuple)
            record.args = tuple(
                describe_exception(a) if isinstance(a, BaseException) else a for a in record.args
            )
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit the format: drop them
            message = str(record.msg)
        record.msg = message if exc is None else f"{message} ({describe_exception(exc)})"
        record.args = None
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True


CONTENT_FREE = ContentFreeFilter()


def content_free_sdk_logs() -> list[logging.Logger]:
    """Put :data:`CONTENT_FREE` on every logger of the SDK (``mcp`` and below; the SDK creates
    them when imported, as the proxy has been). A logger's filter sees only its own records,
    hence one per logger. Idempotent; returns the loggers."""
    names = [SDK_LOGGER]
    names += [n for n in logging.root.manager.loggerDict if n.startswith(SDK_LOGGER + ".")]
    loggers = [logging.getLogger(n) for n in names]
    for logger in loggers:
        if CONTENT_FREE not in logger.filters:
            logger.addFilter(CONTENT_FREE)
    return loggers
