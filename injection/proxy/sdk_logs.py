"""The mcp SDK's log lines, content-free and one line each, for the proxy's log.

A misbehaving upstream makes the SDK log a traceback (``logger.exception``: a line that is not
valid JSON-RPC, a failed read), and the exception's text quotes what the upstream sent —
pydantic's ``input_value='{"jsonrpc": …}'`` is a tool's result in the proxy's log. The filter
keeps the SDK's own message and names the exception by its type (and, for a validation error,
pydantic's error types), never by its text; exceptions passed as ``%s`` arguments likewise.
The proxy reports what the failure means for a call itself (:mod:`.upstream`).

The SDK's server also logs peer text as plain arguments: ``Tool %r failed: %r`` (INFO) quotes
the tool's error message — a scenario server's ``no record for account_id='…'`` is the caller's
argument. Those arguments (:data:`PEER_TEXT_ARGS`) are replaced by :data:`WITHHELD`. Every
command that runs an SDK server or client in process (proxy, serve-scenario, workbench) calls
:func:`content_free_sdk_logs`.

Over streamable HTTP the SDK writes SSE responses with ``sse_starlette``, whose DEBUG line
``chunk: %s`` is the whole frame — a tool's result under ``-v`` — so its loggers get the same
filter (:data:`SDK_LOGGERS`). The SDK's client session logs under the bare name ``client``
(mcp 2.3: ``Failed to validate notification`` with a traceback quoting an upstream
notification's params, a log message's data; an unknown notification's method): covered too.
The HTTP and SSE transports log every message they send or receive at DEBUG, formatted before
the call (``SSE message: …``, ``Sending client message: …``): the text after those prefixes
(:data:`PEER_TEXT_PREFIXES`) is withheld, so ``-v`` on any command running an SDK client or
server in process never prints a call's arguments or result.
"""

from __future__ import annotations

import functools
import logging
import re
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

SDK_LOGGER = "mcp"
#: Logger trees the filter covers: the SDK's, and the SSE library its HTTP server writes with.
SDK_LOGGERS = (SDK_LOGGER, "client", "sse_starlette")
WITHHELD = "(text withheld)"

#: SDK log templates whose arguments at these positions are a peer's text (arguments, results,
#: error messages, URIs, raw frames); the others (a tool's name, a method) are kept.
PEER_TEXT_ARGS: dict[str, frozenset[int]] = {
    "Tool %r failed: %r": frozenset({1}),
    "Resource %r failed: %r": frozenset({0, 1}),
    "Resource %r raised an unexpected exception": frozenset({0}),
    "dropped a frame received before the first request: %r": frozenset({0}),
    "transport yielded exception: %r": frozenset({0}),
    "Received message from server: %s": frozenset({0}),
    "Error: %s": frozenset({0}),
    "requestState rejected on %s: %s": frozenset({1}),
    "chunk: %s": frozenset({0}),  # sse_starlette: an SSE frame, i.e. a result or a notification
    "refusing to seal requestState on %s: %s": frozenset({1}),
    # DEBUG, a peer's framing as it wrote it: a stdio upstream's stray line may put anything there
    "dropped %r: not defined at %s": frozenset({0}),  # a notification's method
    "dropping response for unknown/late request id %r": frozenset({0}),
}


#: SDK messages formatted before logging (f-strings, no arguments to withhold) whose text after
#: the prefix is a whole JSON-RPC message or body as sent or received: a call's arguments, a
#: tool's result (the HTTP and SSE transports, client and server, at DEBUG).
PEER_TEXT_PREFIXES: tuple[str, ...] = (
    "SSE message: ",
    "Sending client message: ",
    "Received server message: ",
    "Sending message via SSE: ",
    "Received JSON: ",
    "Validated client message: ",
    "Sending session message to writer: ",
)


def describe_exception(exc: BaseException) -> str:
    """``TypeName`` (``ValidationError: json_invalid, missing``): what failed, not its text."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_exception(e) for e in exc.exceptions)
    if isinstance(exc, ValidationError):
        kinds = sorted({str(e["type"]) for e in exc.errors()})
        return f"{type(exc).__name__}: {', '.join(kinds)}"
    return type(exc).__name__


#: pydantic's name for the union member or validator an error happened in (``str``,
#: ``list[str]``, ``function-after[...]``): a type's name, never the data's.
_TYPE_TAG = re.compile(
    r"(?:str|int|float|bool|none|bytes|dict|list|"
    r"(?:list|dict|tuple|set|frozenset|literal|nullable|union|tagged-union|function-[a-z]+|"
    r"json-or-python|lax-or-strict|is-instance|chain|model|default)\[.*\])"
)
#: What stands in an error location for a name that is no MCP field: a dict's key is the data's.
KEY = "*"


def _literals(annotation: Any) -> set[str]:
    """The string values of every ``Literal`` inside ``annotation`` (a tagged union's tags)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return {a for a in args if isinstance(a, str)}
    return set().union(*(_literals(a) for a in args)) if args else set()


@functools.cache
def _mcp_names() -> frozenset[str]:
    """Every name an error location in an MCP message can hold that is the protocol's: the
    mcp_types models' names, their fields' names and aliases, and their literal tags."""
    import mcp_types  # noqa: F401  (its models are BaseModel's subclasses once imported)

    names: set[str] = set()
    todo: list[type[BaseModel]] = [BaseModel]
    seen: set[type[BaseModel]] = set()
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
        if not cls.__module__.startswith("mcp_types"):
            continue
        names.add(cls.__name__)
        for field_name, info in cls.model_fields.items():
            names.update(n for n in (field_name, info.alias) if n)
            names |= _literals(info.annotation)
    return frozenset(names)


def field_locations(exc: ValidationError, limit: int = 5) -> str:
    """The fields a validation error is about, ``content.*.str`` — pydantic's locations with
    each part that is no protocol name (a dict's key: a user's data, as in an elicitation's
    ``content``) as :data:`KEY`; indices and type tags kept. Never the values."""
    known = _mcp_names()

    def part(p: int | str) -> str:
        if isinstance(p, int) or p in known or _TYPE_TAG.fullmatch(p):
            return str(p)
        return KEY

    where = sorted({".".join(part(p) for p in e["loc"]) for e in exc.errors()})
    return ", ".join(where[:limit])


class ContentFreeFilter(logging.Filter):
    """Rewrites a record carrying an exception into one line naming the exception's type."""

    def filter(self, record: logging.LogRecord) -> bool:
        withheld = PEER_TEXT_ARGS.get(record.msg) if isinstance(record.msg, str) else None
        if isinstance(record.msg, str) and record.msg.startswith(PEER_TEXT_PREFIXES):
            record.msg = record.msg[: record.msg.index(": ") + 2] + WITHHELD
            record.args = None
        if withheld and isinstance(record.args, tuple):
            record.args = tuple(WITHHELD if i in withheld else a for i, a in enumerate(record.args))
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


def _covered(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in SDK_LOGGERS)


class SdkRecordsFilter(logging.Filter):
    """For a handler: :data:`CONTENT_FREE` on the SDK's records only (also those of an SDK
    module imported after :func:`content_free_sdk_logs`), the others left as they are."""

    def filter(self, record: logging.LogRecord) -> bool:
        return CONTENT_FREE.filter(record) if _covered(record.name) else True


SDK_RECORDS = SdkRecordsFilter()


def content_free_sdk_logs() -> list[logging.Logger]:
    """Put :data:`CONTENT_FREE` on every logger of :data:`SDK_LOGGERS` (``mcp``, ``client``,
    ``sse_starlette`` and below; created when imported, as the proxy has been) and
    :data:`SDK_RECORDS` on the root logger's handlers (for loggers created later). A logger's
    filter sees only its own records, hence one per logger. Idempotent; returns the loggers."""
    names = list(SDK_LOGGERS)
    names += [n for n in logging.root.manager.loggerDict if _covered(n) and n not in SDK_LOGGERS]
    loggers = [logging.getLogger(n) for n in names]
    for logger in loggers:
        if CONTENT_FREE not in logger.filters:
            logger.addFilter(CONTENT_FREE)
    for handler in logging.root.handlers:
        if SDK_RECORDS not in handler.filters:
            handler.addFilter(SDK_RECORDS)
    return loggers
