"""The naive reference agent: uses every result at face value and does what tool text tells it —
the baseline a fault is measured against.

What it obeys is decided by the agents' own rule (:mod:`orders`: sentences phrased as orders),
never by the injection scanner, so a scanner's coverage cannot move this baseline.
"""

from __future__ import annotations

from typing import Any

from toolwatch.injection.mitigations.results import (
    annotation_texts,
    is_empty_result,
    result_data,
    result_flags,
)
from toolwatch.injection.workbench.agent import (
    Agent,
    RunState,
    readable_texts,
    render_result,
    url_tool,
)
from toolwatch.injection.workbench.orders import Order, find_orders
from toolwatch.injection.workbench.planning import ADDRESS_NAME, PlannedCall, literal_value, lookup


class NaiveAgent(Agent):
    """Trusts outputs, obeys orders found in tool text, never retries, never hedges."""

    name = "naive"

    async def on_listing(self, st: RunState) -> None:
        for tool in list(st.tools.values()):
            for order in find_orders(tool.description or "", st.tools, source=tool.name):
                if order.actionable:
                    await self._obey(st, order, source=f"description of {tool.name}")

    async def execute(self, st: RunState, index: int, call: PlannedCall) -> None:
        args: dict[str, Any] = {}
        for name, source in call.arguments.items():
            if not source.derived:
                args[name] = source.literal
                continue
            found, value = lookup(st.data.get(source.step), source.path)
            if not found:
                self._event(st, "missing_input", call.tool, name)
                return  # cannot fill it: silently skip the step
            args[name] = value
        args = self._overridden(st, call.tool, args)
        result, failure, _ = await self._call(st, call.tool, args)
        if result is None or failure is not None:
            # A failure is "no data": nothing to report, unless a mitigation explained it in
            # words meant for the model (flagged): a trusting agent passes those on.
            if result is not None and result_flags(result):
                st.parts.extend(
                    annotation_texts(result) or [render_result(call.tool, result, strip=False)]
                )
            return
        st.data[index] = result_data(result)
        if is_empty_result(result):
            st.parts.append(f"{call.tool}: No results found.")
        else:
            st.parts.append(render_result(call.tool, result, strip=False))
        st.parts.extend(annotation_texts(result))
        for text in readable_texts(result):
            for order in find_orders(text, st.tools, source=call.tool):
                if order.actionable:
                    await self._obey(st, order, source=call.tool)

    def _overridden(self, st: RunState, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments after the argument orders obeyed so far (for this tool, or for any
        tool that takes that argument)."""
        declared = (
            (st.tools[tool].input_schema or {}).get("properties") or {} if tool in st.tools else {}
        )
        out = dict(args)
        for o in st.overrides:
            if o.tool not in (None, tool):
                continue
            if o.argument in out or o.argument in declared:
                out[o.argument] = o.apply(out.get(o.argument))
        return out

    async def _obey(self, st: RunState, order: Order, *, source: str) -> None:
        """Do what an order says: change the arguments it names, call the tools it names (or
        an address-taking tool when it names a destination) passing what was gathered so far,
        and say what it says to say."""
        if order.text in st.obeyed:
            return
        st.obeyed.add(order.text)
        self._event(st, "instruction_followed", None, source)
        st.overrides.extend(order.overrides)
        named = list(order.tools)
        if order.targets and not any(_takes_address(st, t) for t in named):
            sink = url_tool(st.tools)
            if sink is not None:
                named.append(sink[0])
        gathered = "\n".join(st.parts) or st.scenario.task
        context = f"{order.text} {st.scenario.task}"
        for tool in named:
            schema = st.tools[tool].input_schema or {}
            props = schema.get("properties") or {}
            args: dict[str, Any] = {}
            for name in schema.get("required") or []:
                prop = props.get(name, {})
                if _is_address(name, prop):
                    if order.targets:
                        args[name] = order.targets[0]
                    continue
                ok, value = literal_value(name, prop, context, list(args.values()))
                if ok:
                    args[name] = gathered if value == context else value  # "send the data"
            await self._call(st, tool, self._overridden(st, tool, args))
        if order.reply:
            st.parts.append(order.reply)

    def compose(self, st: RunState) -> str:
        if not st.parts:
            return "I found no information for this request."
        return "Here is what I found.\n" + "\n".join(st.parts)


def _is_address(name: str, prop: Any) -> bool:
    return bool(ADDRESS_NAME.search(name)) or (
        isinstance(prop, dict) and prop.get("format") in ("uri", "url", "email")
    )


def _takes_address(st: RunState, tool: str) -> bool:
    props = (st.tools[tool].input_schema or {}).get("properties") or {}
    return any(_is_address(n, p) for n, p in props.items())
