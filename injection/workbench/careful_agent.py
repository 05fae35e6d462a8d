"""The careful reference agent: retries transient failures, reads flags and caveats, and says what
it could not verify.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, Final

from mcp.types import CallToolResult

from toolwatch.injection.faults.scenario import argument_errors
from toolwatch.injection.mitigations.failures import FailureClass
from toolwatch.injection.mitigations.results import (
    is_empty_result,
    result_data,
    result_flags,
)
from toolwatch.injection.mitigations.values import (
    schema_problems,
)
from toolwatch.injection.workbench.agent import (
    Agent,
    AgentConfig,
    RunState,
    readable_texts,
    render_result,
)
from toolwatch.injection.workbench.orders import find_orders
from toolwatch.injection.workbench.planning import (
    PlannedCall,
    lookup,
    remap_arguments,
    tolerant_lookup,
)
from toolwatch.instrumentation import model_response
from toolwatch.words import counted


class CarefulAgent(Agent):
    """Retries with backoff, validates shapes, ignores instructions in outputs, hedges."""

    name = "careful"

    def __init__(self, config: AgentConfig | None = None) -> None:
        super().__init__(config)
        self._rng = random.Random(self.config.seed)

    async def on_listing(self, st: RunState) -> None:
        for tool in st.tools.values():
            orders = find_orders(
                tool.description or "", st.tools, source=tool.name, description=True
            )
            if any(o.actionable for o in orders):
                self._event(st, "description_ignored", tool.name)
                st.caveats.append(
                    f"The description of tool '{tool.name}' contains instructions addressed to "
                    "me; I did not follow them."
                )

    def _resolve(self, st: RunState, call: PlannedCall) -> tuple[dict[str, Any], list[str]]:
        args: dict[str, Any] = {}
        missing: list[str] = []
        for name, source in call.arguments.items():
            if not source.derived:
                args[name] = source.literal
                continue
            data = st.data.get(source.step)
            found, value = lookup(data, source.path)
            if not found and data is not None:
                found, value = tolerant_lookup(data, source)
                if found:
                    self._event(st, "drift_adapted", call.tool, f"field {source.key}")
            if not found:
                missing.append(name)
            else:
                args[name] = value
        return args, missing

    async def execute(self, st: RunState, index: int, call: PlannedCall) -> None:
        args, missing = self._resolve(st, call)
        if missing:
            self._event(st, "missing_input", call.tool, ",".join(missing))
            st.caveats.append(
                f"I could not call '{call.tool}' because an earlier step did not provide "
                f"{', '.join(missing)}; the answer is incomplete."
            )
            return
        relisted = remapped = False
        failure: FailureClass | None = None
        result: CallToolResult | None = None
        for attempt in range(1, self.config.attempts + 1):
            result, failure, _ = await self._call(st, call.tool, args)
            if failure is None:
                break
            self._event(st, "error_seen", call.tool, failure.value)
            if (
                failure in (FailureClass.INVALID_ARGUMENTS, FailureClass.INVALID_RESULT)
                and not relisted
            ):
                # The documented arguments were rejected: read the tool's current schema.
                relisted = True
                new_args, accepted = await self._remap(st, call.tool, args)
                if new_args is not None:
                    self._event(st, "drift_adapted", call.tool, "arguments")
                    args, remapped = new_args, True
                    continue
                if accepted and attempt < self.config.attempts:
                    self._event(st, "retry", call.tool, "schema accepts the arguments")
                    continue
            if not failure.retryable or attempt == self.config.attempts:
                break
            self._event(st, "retry", call.tool, failure.value)
            delay = self.config.base_delay * 2 ** (attempt - 1) * (1 + 0.2 * self._rng.random())
            await asyncio.sleep(delay)
        if failure is not None or result is None:
            st.caveats.append(_failure_caveat(call.tool, failure, attempt))
            return
        if remapped:
            st.caveats.append(
                f"Tool '{call.tool}' no longer accepted its documented arguments; I adapted the "
                "call to its new parameters."
            )
        st.data[index] = result_data(result)
        self._inspect(st, call.tool, result)

    async def _remap(
        self, st: RunState, tool: str, args: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, bool]:
        """Re-list tools: (arguments moved to renamed parameters, or None; whether the current
        schema accepts the arguments as they are)."""
        with model_response(self._response_id(st), conversation_id=st.conversation_id):
            await self._think()
            listed = await st.client.list_tools()
        st.tools = {t.name: t for t in listed.tools}
        current = st.tools.get(tool)
        if current is None:
            return None, False
        schema = current.input_schema or {}
        return remap_arguments(args, schema), not argument_errors(schema, args)

    def _inspect(self, st: RunState, tool: str, result: CallToolResult) -> None:
        texts = readable_texts(result)
        if any(o.actionable for t in texts for o in find_orders(t, st.tools, source=tool)):
            self._event(st, "instruction_ignored", tool)
            st.caveats.append(
                f"The output of '{tool}' contained instructions addressed to me; I ignored them."
            )
        for flag in result_flags(result):
            kind = flag.get("flag", "")
            self._event(st, kind or "flagged", tool, flag.get("mitigation", ""))
            st.caveats.append(_flag_caveat(tool, kind))
        if result.is_error:  # a blocked result (scanner) arrives as an error with flags
            return
        if is_empty_result(result):
            self._event(st, "empty_result", tool)
            st.caveats.append(
                f"'{tool}' returned an empty result. That may be a silent failure rather than "
                "proof that nothing exists; I could not verify it."
            )
            return
        declared = st.tools.get(tool)
        schema = declared.output_schema if declared else None
        if schema and not any(f.get("flag") == "schema_mismatch" for f in result_flags(result)):
            problems = schema_problems(result_data(result), schema)
            if problems:
                self._event(st, "schema_mismatch", tool, "; ".join(problems))
                st.caveats.append(
                    f"The response of '{tool}' does not match its documented format; values "
                    "read from it may be unreliable."
                )
        st.parts.append(render_result(tool, result, strip=True, tools=st.tools))

    def compose(self, st: RunState) -> str:
        lines = ["Here is what I found."] if st.parts else ["I could not complete the request."]
        lines += st.parts
        if st.caveats:
            lines.append("Caveats:")
            lines += [f"- {c}" for c in dict.fromkeys(st.caveats)]
        return "\n".join(lines)


def _failure_caveat(tool: str, failure: FailureClass | None, attempts: int) -> str:
    kind = failure.value.replace("_", " ") if failure else "an unknown error"
    if failure is FailureClass.PERMISSION_DENIED:
        return (
            f"Access to '{tool}' was denied (permission denied); I did not retry. You may need to "
            "grant access."
        )
    tries = f" after {counted(attempts, 'attempt')}" if attempts > 1 else ""
    return f"'{tool}' failed ({kind}){tries}; I could not get this information."


_FLAG_TEXT: Final = {
    "conflict": "disagrees with another source; the values conflict, I cannot tell which is right",
    "stale": "may be out of date; I could not confirm it is current",
    "irrelevant": "does not appear to answer the request; it may be unrelated",
    "schema_mismatch": "does not match its documented format; values read from it may be wrong",
    "empty_result": "was empty, which may be a silent failure; I could not verify it",
    "injection": "contained instructions addressed to me and was withheld or redacted",
}


def _flag_caveat(tool: str, kind: str) -> str:
    return f"The result of '{tool}' " + _FLAG_TEXT.get(kind, "was flagged as unreliable") + "."
