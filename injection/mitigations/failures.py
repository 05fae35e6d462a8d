"""Failure classes of a tool call (timeout, server error, permission, rate limit, invalid arguments,
...), read from the exception or the result text, and the retry-after hint.
"""

from __future__ import annotations

import asyncio
import re
from enum import StrEnum
from typing import Final

from mcp import MCPError
from mcp.types import CallToolResult

from toolwatch.injection.mitigations.results import result_text

#: JSON-RPC code the MCP client raises on its own request timeout.
CLIENT_TIMEOUT_CODE: Final = -32001


class FailureClass(StrEnum):
    """Why a call failed, coarse enough to decide whether a retry can help."""

    TIMEOUT = "timeout"
    SERVER_ERROR = "server_error"
    RATE_LIMITED = "rate_limited"
    PERMISSION_DENIED = "permission_denied"
    INVALID_ARGUMENTS = "invalid_arguments"
    INVALID_RESULT = "invalid_result"
    NOT_FOUND = "not_found"
    TOOL_ERROR = "tool_error"

    @property
    def retryable(self) -> bool:
        return self in (FailureClass.TIMEOUT, FailureClass.SERVER_ERROR, FailureClass.RATE_LIMITED)


# Order matters: permission before server error ("403 ... internal" is still a 403).
_TEXT_CLASSES: Final[tuple[tuple[FailureClass, re.Pattern[str]], ...]] = (
    (
        FailureClass.PERMISSION_DENIED,
        re.compile(
            r"\b(403|401|forbidden|permission[ _]denied|access[ _]denied|unauthori[sz]ed|"
            r"not (?:authori[sz]ed|permitted|allowed)|insufficient (?:scope|permissions?))\b",
            re.I,
        ),
    ),
    (
        FailureClass.RATE_LIMITED,
        re.compile(r"\b(429|rate[ -]?limit(?:ed)?|too many requests|quota exceeded)\b", re.I),
    ),
    (
        FailureClass.TIMEOUT,
        re.compile(r"\b(timed? ?out|timeout|deadline exceeded|504|gateway time-?out)\b", re.I),
    ),
    (
        FailureClass.SERVER_ERROR,
        re.compile(
            r"\b(5\d\d|internal (?:server )?error|service unavailable|bad gateway|"
            r"temporar(?:y|ily) unavailable|server error|upstream (?:error|failure)|"
            r"try again later|overloaded)\b",
            re.I,
        ),
    ),
    (
        FailureClass.INVALID_ARGUMENTS,
        re.compile(
            r"(validation error|invalid (?:argument|param|input)s?|unexpected (?:argument|keyword)|"
            r"missing required|field required|unknown (?:argument|parameter)|"
            r"rejected arguments)",
            re.I,
        ),
    ),
    (FailureClass.NOT_FOUND, re.compile(r"\b(404|not found|unknown tool|no such tool)\b", re.I)),
)


def classify_text(text: str) -> FailureClass:
    for cls, pattern in _TEXT_CLASSES:
        if pattern.search(text):
            return cls
    return FailureClass.TOOL_ERROR


_CLIENT_VALIDATION: Final = re.compile(
    r"(Invalid structured content returned by tool|has an output schema but did not return "
    r"structured content|Invalid schema for tool)"
)


def is_client_validation_error(exc: BaseException) -> bool:
    """The MCP client itself rejected a result that breaks the tool's declared output schema
    (``ClientSession`` raises ``RuntimeError`` for it, after the server answered)."""
    return isinstance(exc, RuntimeError) and bool(_CLIENT_VALIDATION.search(str(exc)))


def is_call_failure(exc: BaseException) -> bool:
    """Exceptions that mean "this tool call failed" rather than "the agent is broken"."""
    return isinstance(exc, MCPError | TimeoutError) or is_client_validation_error(exc)


def first_line(exc: BaseException) -> str:
    """The first line of an error message (the jsonschema detail below it quotes content)."""
    return (
        (getattr(exc, "message", "") or str(exc)).strip().splitlines()[0][:300] if str(exc) else ""
    )


def classify_failure(
    result: CallToolResult | None = None, exc: BaseException | None = None
) -> FailureClass | None:
    """The failure class of a call's outcome; ``None`` when it succeeded."""
    if exc is not None:
        if is_client_validation_error(exc):
            return FailureClass.INVALID_RESULT
        if isinstance(exc, TimeoutError | asyncio.TimeoutError):
            return FailureClass.TIMEOUT
        if isinstance(exc, MCPError):
            code = exc.code
            if code == CLIENT_TIMEOUT_CODE:
                return FailureClass.TIMEOUT
            if code == -32602:
                return FailureClass.INVALID_ARGUMENTS
            if code == -32601:
                return FailureClass.NOT_FOUND
            by_text = classify_text(exc.message or "")
            if by_text is not FailureClass.TOOL_ERROR:
                return by_text
            if code == -32603 or -32099 <= code <= -32000:
                return FailureClass.SERVER_ERROR
            return FailureClass.TOOL_ERROR
        return classify_text(str(exc))
    if result is None:
        return FailureClass.TOOL_ERROR
    if not result.is_error:
        return None
    return classify_text(result_text(result))


_RETRY_AFTER = re.compile(r"retry[- ]after[:= ]+(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds)?", re.I)


def retry_after_seconds(text: str) -> float | None:
    m = _RETRY_AFTER.search(text)
    if not m:
        return None
    value = float(m.group(1))
    return value / 1000.0 if (m.group(2) or "").lower() == "ms" else value
