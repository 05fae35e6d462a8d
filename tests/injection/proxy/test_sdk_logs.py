"""The proxy's filter on the mcp SDK's loggers: an exception becomes its type, on one line."""

from __future__ import annotations

import json
import logging

import mcp_types as types
import pytest
from pydantic import BaseModel, ValidationError

from support.canary import assert_absent, make_canary
from toolwatch.injection.proxy.sdk_logs import (
    CONTENT_FREE,
    SDK_RECORDS,
    content_free_sdk_logs,
    field_locations,
)


class Reply(BaseModel):
    result: dict[str, int]


def test_exceptions_are_named_by_type_never_by_their_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe = logging.getLogger("mcp.toolwatch_probe")  # an SDK module's logger, created first
    loggers = content_free_sdk_logs()
    assert content_free_sdk_logs() == loggers and probe.filters.count(CONTENT_FREE) == 1
    assert {
        "mcp",
        "mcp.client.stdio",
        "mcp.server._streamable_http_modern",
        "sse_starlette.sse",  # writes the HTTP server's SSE frames, logs each at DEBUG
    } <= {logger.name for logger in loggers}
    try:
        with caplog.at_level(logging.INFO):
            try:
                Reply.model_validate_json('{"result": {"SECRET": "x"}}')
            except ValidationError:
                probe.exception("could not parse")
            try:
                raise ExceptionGroup("SECRET", [KeyError("SECRET"), OSError("SECRET")])
            except ExceptionGroup:
                probe.error("listing failed", exc_info=True)
            probe.warning("read failed: %s after %d s", ValueError("SECRET"), 3)
            probe.info("kept as is: %s", "text")
    finally:
        for logger in loggers:
            logger.removeFilter(CONTENT_FREE)
    assert [r.getMessage() for r in caplog.records] == [
        "could not parse (ValidationError: int_parsing)",
        "listing failed (KeyError; OSError)",
        "read failed: ValueError after 3 s",
        "kept as is: text",
    ]
    assert "SECRET" not in caplog.text and "Traceback" not in caplog.text


def test_peer_text_in_the_sdks_own_arguments_is_withheld(caplog: pytest.LogCaptureFixture) -> None:
    """``Tool %r failed: %r`` quotes the tool's message (the caller's argument): withheld, the
    tool's name kept; a logger created after the call is covered through the root's handlers."""
    server = logging.getLogger("mcp.server.mcpserver.server")
    loggers = content_free_sdk_logs()
    late = logging.getLogger("mcp.toolwatch_late_probe")  # created after: no logger filter
    handler = logging.StreamHandler()
    logging.root.addHandler(handler)
    content_free_sdk_logs()
    try:
        with caplog.at_level(logging.INFO):
            server.info("Tool %r failed: %r", "get_quote", "no record for symbol='SECRET'")
            server.info("Resource %r failed: %r", "res://SECRET", "SECRET")
            record = logging.LogRecord(
                late.name, logging.INFO, __file__, 1, "Tool %r failed: %r", ("t", "SECRET"), None
            )
            assert SDK_RECORDS in handler.filters and handler.filter(record)
    finally:
        logging.root.removeHandler(handler)
        for logger in loggers:
            logger.removeFilter(CONTENT_FREE)
    assert [r.getMessage() for r in caplog.records] == [
        "Tool 'get_quote' failed: '(text withheld)'",
        "Resource '(text withheld)' failed: '(text withheld)'",
    ]
    assert record.getMessage() == "Tool 't' failed: '(text withheld)'"
    assert "SECRET" not in caplog.text


def test_the_sdk_client_sessions_bare_logger_is_covered(caplog: pytest.LogCaptureFixture) -> None:
    """mcp 2.3's client session logs as ``client``, outside ``mcp``: an upstream notification
    with invalid params was a WARNING with pydantic's traceback quoting them (a log message's
    data), and -v showed an unknown notification's method and answer id as the peer wrote
    them. Now one line each, the peer's text withheld."""
    canary = make_canary()
    client = logging.getLogger("client")
    dispatcher = logging.getLogger("mcp.shared.jsonrpc_dispatcher")
    loggers = content_free_sdk_logs()
    try:
        with caplog.at_level(logging.DEBUG):
            try:
                Reply.model_validate_json(json.dumps({"result": {canary: canary}}))
            except ValidationError:
                client.warning(
                    "Failed to validate notification: %s", "notifications/message", exc_info=True
                )
            client.debug("dropped %r: not defined at %s", canary, "2025-11-25")
            dispatcher.debug("dropping response for unknown/late request id %r", canary)
    finally:
        for logger in loggers:
            logger.removeFilter(CONTENT_FREE)
    assert [r.getMessage() for r in caplog.records] == [
        "Failed to validate notification: notifications/message (ValidationError: int_parsing)",
        "dropped '(text withheld)': not defined at 2025-11-25",
        "dropping response for unknown/late request id '(text withheld)'",
    ]
    assert_absent(caplog.text, canary, "the log")


def test_whole_messages_the_http_transports_log_at_debug_are_withheld(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The SDK's HTTP and SSE transports log each JSON-RPC message they send or receive at DEBUG,
    formatted before the call (``f"SSE message: {message}"``), so no argument could be withheld:
    ``-v`` printed a call's arguments and its result. The text after the prefix is withheld."""
    canary = make_canary()
    client = logging.getLogger("mcp.client.streamable_http")
    server = logging.getLogger("mcp.server.sse")
    loggers = content_free_sdk_logs()
    frame = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": canary}})
    try:  # the proxy command raises the HTTP client's level; at DEBUG here, whatever ran before
        with (
            caplog.at_level(logging.DEBUG),
            caplog.at_level(logging.DEBUG, logger=client.name),
            caplog.at_level(logging.DEBUG, logger=server.name),
        ):
            client.debug(f"SSE message: {frame}")
            client.debug(f"Sending client message: {frame}")
            server.debug(f"Received JSON: {frame.encode()!r}")
            client.debug("GET SSE connection established")
    finally:
        for logger in loggers:
            logger.removeFilter(CONTENT_FREE)
    assert [r.getMessage() for r in caplog.records] == [
        "SSE message: (text withheld)",
        "Sending client message: (text withheld)",
        "Received JSON: (text withheld)",
        "GET SSE connection established",
    ]
    assert_absent(caplog.text, canary, "the log")


def test_field_locations_name_the_protocols_fields_never_a_dicts_keys() -> None:
    """pydantic puts a dict's keys in its error locations (an elicitation's content, a server's
    input requests): those are the data's, so they read ``*``; fields, indices, union members
    and type tags stay."""
    canary = make_canary()
    bad = [
        (types.ElicitResult, {"action": "accept", "content": {canary: {canary: 1}}}),
        (types.InputRequiredResult, {"inputRequests": {canary: {"method": canary}}}),
        (types.CallToolResult, {"content": [{"type": "text", "text": 5}], "isError": canary}),
        (types.ListRootsResult, {"roots": [{"uri": canary}]}),
    ]
    said = []
    for model, data in bad:
        with pytest.raises(ValidationError) as info:
            model.model_validate(data)
        said.append(field_locations(info.value, limit=50))
        assert_absent(said[-1], canary, f"the locations of a bad {model.__name__}")
    assert (
        said[0]
        == "content.*.bool, content.*.float, content.*.int, content.*.list[str], content.*.str"
    )
    assert "inputRequests.*.ElicitRequest.params" in said[1]
    assert "content.0.TextContent.text" in said[2] and said[2].endswith("isError")
    assert said[3] == "roots.0.uri"
