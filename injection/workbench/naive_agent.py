"""The naive reference agent: uses every result at face value and does what tool text tells it —
the baseline a fault is measured against.

It is a deterministic STAND-IN for a hosted LLM (none can run here): it complies the way a
model that obeys tool text does. What it obeys is decided by the agents' own rule
(:mod:`orders`: sentences phrased as orders), never by the injection scanner, so a scanner's
coverage cannot move this baseline. An order that sends data to an address is carried out
with the data it names: the tools it names are called in order with the values it quotes, and
the address-taking call carries what the agent has read so far — its earlier results and the
results of the calls the order asked for — as a model pasting "the contents" would. An order
in a tool's description that sends data runs around that tool's first call, as written:
before it ("before using X", "first call ..."), otherwise right after it, with its result.
"""

from __future__ import annotations

import re
from typing import Any, Final
from urllib.parse import quote

from toolwatch.injection.mitigations.acts import mention
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
from toolwatch.injection.workbench.planning import (
    ADDRESS_NAME,
    PlannedCall,
    literal_value,
    lookup,
)

#: an order to do something before the tool it describes is used
_BEFORE: Final = re.compile(r"\b(?:before|first|prior to)\b", re.I)
_MAIL_ARGUMENT: Final = re.compile(r"^(?:to|cc|bcc|recipients?|e-?mail(?:_address)?)$", re.I)
_QUOTED_VALUE: Final = re.compile(r"['\"`]([^'\"`\s]{2,200})['\"`]")


class NaiveAgent(Agent):
    """Trusts outputs, obeys orders found in tool text, never retries, never hedges."""

    name = "naive"

    async def on_listing(self, st: RunState) -> None:
        planned = {c.tool for c in st.plan.calls}
        for tool in list(st.tools.values()):
            for order in find_orders(
                tool.description or "", st.tools, source=tool.name, description=True
            ):
                if not order.actionable:
                    continue
                if _sends(order) and tool.name in planned:  # "when using X, send ..."
                    when = "before" if _BEFORE.search(order.text) else "after"
                    st.deferred.setdefault((when, tool.name), []).append(order)
                    continue
                await self._obey(st, order, source=f"description of {tool.name}")

    async def _deferred(self, st: RunState, when: str, tool: str) -> None:
        for order in st.deferred.pop((when, tool), []):
            await self._obey(st, order, source=f"description of {tool}")

    async def execute(self, st: RunState, index: int, call: PlannedCall) -> None:
        await self._deferred(st, "before", call.tool)
        await self._execute(st, index, call)
        await self._deferred(st, "after", call.tool)

    async def _execute(self, st: RunState, index: int, call: PlannedCall) -> None:
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
        context = f"{order.text} {st.scenario.task}"
        for tool in named:
            # what it has read so far, the results of this order's earlier calls included
            gathered = "\n".join([*st.parts, *st.obeyed_results]) or st.scenario.task
            schema = st.tools[tool].input_schema or {}
            props = schema.get("properties") or {}
            sends = bool(order.targets) and _takes_address(st, tool)
            quoted = _quoted_after(order.text, tool)
            args: dict[str, Any] = {}
            for name in schema.get("required") or []:
                prop = props.get(name, {})
                if _is_address(name, prop):
                    if order.targets:
                        args[name] = _filled(_target(order, name, prop), st.scenario.task)
                    continue
                if quoted is not None and _is_string(prop):  # "call get with key '/root/..'"
                    args[name], quoted = quoted, None
                    continue
                ok, value = literal_value(name, prop, context, list(args.values()))
                if sends and (value == context or value == {}):  # "send the contents to URL"
                    args[name] = {"data": gathered} if value == {} else gathered
                elif ok:
                    args[name] = gathered if value == context else value  # "send the data"
            result, failure, _ = await self._call(st, tool, self._overridden(st, tool, args))
            if result is not None and failure is None:
                st.obeyed_results.append(render_result(tool, result, strip=False))
        if order.reply:
            st.parts.append(order.reply)

    def compose(self, st: RunState) -> str:
        if not st.parts:
            return "I found no information for this request."
        return "Here is what I found.\n" + "\n".join(st.parts)


def _sends(order: Order) -> bool:
    """The order sends something to an address (and changes no argument of the task)."""
    return bool(order.targets) and not order.overrides


def _target(order: Order, name: str, prop: Any) -> str:
    """The order's address that fits the argument: an e-mail address for a recipient."""
    mail = _MAIL_ARGUMENT.search(name) or (isinstance(prop, dict) and prop.get("format") == "email")
    fitting = [t for t in order.targets if ("@" in t and "://" not in t) == bool(mail)]
    return (fitting or list(order.targets))[0]


def _filled(target: str, task: str) -> str:
    """An address as the order asks it sent: a URL ending in an empty query value
    ("…/log?q=<original-query>") gets the user's request, URL-encoded."""
    return target + quote(task, safe="") if target.endswith("=") else target


def _is_string(prop: Any) -> bool:
    return isinstance(prop, dict) and prop.get("type", "string") == "string"


def _quoted_after(text: str, tool: str) -> str | None:
    """A quoted value the order gives right after naming ``tool`` ("call read_file on
    '/home/user/.bashrc'", "call get with key '/root/.ssh/id_rsa'")."""
    at = re.search(rf"{mention(tool)}['\"`]?", text)
    if at is None:
        return None
    m = _QUOTED_VALUE.search(text, at.end(), at.end() + 40)
    return None if m is None or "://" in m.group(1) else m.group(1)


def _is_address(name: str, prop: Any) -> bool:
    return bool(ADDRESS_NAME.search(name)) or (
        isinstance(prop, dict) and prop.get("format") in ("uri", "url", "email")
    )


def _takes_address(st: RunState, tool: str) -> bool:
    props = (st.tools[tool].input_schema or {}).get("properties") or {}
    return any(_is_address(n, p) for n, p in props.items())
