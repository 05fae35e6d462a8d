"""Schema validation: a result is checked against the tool's declared output schema, and an empty
result is flagged, so "nothing came back" is not read as "there is nothing".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.types import CallToolResult, ListToolsResult

from toolwatch.injection.mitigations.failures import (
    FailureClass,
    classify_failure,
    is_client_validation_error,
)
from toolwatch.injection.mitigations.results import (
    annotate,
    is_empty_result,
    make_result,
    result_data,
)
from toolwatch.injection.mitigations.values import client_rejection_detail, schema_problems
from toolwatch.injection.mitigations.wrapper import EventSink, Mitigation, Send


class SchemaValidation(Mitigation):
    """Validate results against the tool's declared ``outputSchema``; flag empty results.

    Schemas come from ``list_tools`` (cached; listed on first use). ``strict=True`` turns a
    mismatch into an error result; by default the result is kept and annotated, because
    drifted data is often still usable by a consumer that knows it drifted.
    """

    name = "schema"

    def __init__(
        self, inner: Any, *, strict: bool = False, on_event: EventSink | None = None
    ) -> None:
        super().__init__(inner, on_event=on_event)
        self.strict = strict
        self._schemas: dict[str, dict[str, Any] | None] | None = None
        self._inputs: dict[str, dict[str, Any]] = {}

    async def list_tools(self, *args: Any, **kwargs: Any) -> ListToolsResult:
        listed: ListToolsResult = await self.inner.list_tools(*args, **kwargs)
        self._schemas = {t.name: t.output_schema for t in listed.tools}
        self._inputs = {t.name: t.input_schema or {} for t in listed.tools}
        return listed

    async def _schema(self, tool: str) -> dict[str, Any] | None:
        if self._schemas is None or tool not in self._schemas:
            await self.list_tools()
        assert self._schemas is not None
        return self._schemas.get(tool)

    async def handle(
        self, name: str, arguments: dict[str, Any], timeout: float | None, send: Send
    ) -> CallToolResult:
        try:
            result = await send(timeout)
        except RuntimeError as exc:
            if not is_client_validation_error(exc):
                raise
            # The mcp client refused the result (it breaks the declared schema) after the
            # server answered: explain it as an error result instead of ending the agent.
            detail = client_rejection_detail(exc)
            self._emit("schema_mismatch", name, f"rejected by the client: {detail}")
            return make_result(
                f"Result of tool '{name}' does not match its declared output schema "
                f"({detail}). The tool's response format has changed; its data could not be "
                "used. Treat the information as unavailable rather than guessing it.",
                is_error=True,
                flags=[{"mitigation": self.name, "flag": "schema_mismatch", "detail": detail}],
            )
        if result.is_error:
            if classify_failure(result) is FailureClass.INVALID_ARGUMENTS:
                return await self._explain_rejection(name, arguments, result)
            return result
        if is_empty_result(result):
            self._emit("empty_result", name)
            return annotate(
                result,
                self.name,
                "empty_result",
                f"Tool '{name}' returned an empty result. An empty result is not evidence that "
                "nothing exists: the lookup may have failed silently; treat it as unknown.",
            )
        schema = await self._schema(name)
        if not schema:
            return result
        problems = schema_problems(result_data(result), schema)
        if not problems:
            return result
        detail = "; ".join(problems)
        self._emit("schema_mismatch", name, detail)
        message = (
            f"Result of tool '{name}' does not match its declared output schema ({detail}). "
            "The response format may have changed; values read from it may be missing or wrong."
        )
        if self.strict:
            return make_result(
                message,
                is_error=True,
                flags=[{"mitigation": self.name, "flag": "schema_mismatch", "detail": detail}],
            )
        return annotate(result, self.name, "schema_mismatch", message, detail)

    async def _explain_rejection(
        self, name: str, arguments: Mapping[str, Any], result: CallToolResult
    ) -> CallToolResult:
        """Arguments were rejected as invalid: say which parameter names the tool's input
        schema does not accept or requires (names only, never values) — against the schema
        the agent was shown, or, when the arguments fitted that one, against a fresh listing
        (the interface changed since)."""
        gaps = _interface_gaps(arguments, self._inputs.get(name))
        changed = False
        if gaps is None or not gaps:
            listed = await self.list_tools()
            tool = next((t for t in listed.tools if t.name == name), None)
            gaps = (
                ["no longer listed"]
                if tool is None
                else _interface_gaps(arguments, self._inputs[name])
            )
            changed = True
        if not gaps:
            return result  # the values were refused, not the interface: nothing to explain
        detail = "; ".join(gaps)
        self._emit("schema_mismatch", name, f"arguments: {detail}")
        why = (
            "its input schema has changed"
            if changed
            else "they do not match the input schema it documents"
        )
        return annotate(
            result,
            self.name,
            "schema_mismatch",
            f"Tool '{name}' rejected the arguments: {why} ({detail}). Its interface has "
            "drifted from what the request assumed; re-read the tool's schema before calling it "
            "again, and until then treat its information as unavailable.",
            detail,
        )


def _interface_gaps(
    arguments: Mapping[str, Any], schema: Mapping[str, Any] | None
) -> list[str] | None:
    """Argument names a tool's input schema does not declare, and required names missing
    (``None``: no schema known)."""
    if schema is None:
        return None
    declared = schema.get("properties") or {}
    gone = [a for a in arguments if declared and a not in declared]
    needed = [r for r in schema.get("required") or [] if r not in arguments]
    return ([f"does not accept {', '.join(gone)}"] if gone else []) + (
        [f"requires {', '.join(needed)}"] if needed else []
    )
