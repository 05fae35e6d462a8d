"""The proxy's filter on the mcp SDK's loggers: an exception becomes its type, on one line."""

from __future__ import annotations

import logging

import pytest
from pydantic import BaseModel, ValidationError

from toolwatch.injection.proxy.sdk_logs import CONTENT_FREE, content_free_sdk_logs


class Reply(BaseModel):
    result: dict[str, int]


def test_exceptions_are_named_by_type_never_by_their_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe = logging.getLogger("mcp.toolwatch_probe")  # an SDK module's logger, created first
    loggers = content_free_sdk_logs()
    assert content_free_sdk_logs() == loggers and probe.filters.count(CONTENT_FREE) == 1
    assert {"mcp", "mcp.client.stdio", "mcp.server._streamable_http_modern"} <= {
        logger.name for logger in loggers
    }
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
