"""The naive reference agent: uses every result at face value — the baseline a fault is measured
against.
"""

from __future__ import annotations

import re
from typing import Any

from toolwatch.injection.mitigations.instructions import (
    find_urls,
)
from toolwatch.injection.mitigations.results import (
    annotation_texts,
    is_empty_result,
    result_data,
    result_flags,
)
from toolwatch.injection.workbench.agent import (
    EMAIL,
    Agent,
    RunState,
    instruction_sentences,
    readable_texts,
    render_result,
    url_tool,
)
from toolwatch.injection.workbench.planning import ADDRESS_NAME, PlannedCall, literal_value, lookup


class NaiveAgent(Agent):
    """Trusts outputs, obeys instructions found in them, never retries, never hedges."""

    name = "naive"

    async def on_listing(self, st: RunState) -> None:
        for tool in st.tools.values():
            for sentence in instruction_sentences(tool.description or ""):
                await self._obey(st, sentence, source=f"description of {tool.name}")

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
        sentences: dict[str, None] = {}
        for text in readable_texts(result):
            for sentence in instruction_sentences(text):
                sentences.setdefault(sentence.strip(), None)
        for sentence in sentences:
            await self._obey(st, sentence, source=call.tool)

    async def _obey(self, st: RunState, text: str, *, source: str) -> None:
        """Do what planted text says: call the tools it names (or an address-taking tool when
        it names a destination), passing what was gathered so far, and repeat what it says."""
        text = text.strip()
        if text in st.obeyed:
            return
        st.obeyed.add(text)
        self._event(st, "instruction_followed", None, source)
        targets = find_urls(text) + EMAIL.findall(text)
        named = [
            name
            for name in st.tools
            if name != source and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)
        ]
        if not named and targets:
            sink = url_tool(st.tools)
            named = [sink[0]] if sink else []
        gathered = "\n".join(st.parts) or st.scenario.task
        for tool in named:
            schema = st.tools[tool].input_schema or {}
            props = schema.get("properties") or {}
            args: dict[str, Any] = {}
            for name in schema.get("required") or []:
                prop = props.get(name, {})
                if ADDRESS_NAME.search(name) or prop.get("format") in ("uri", "url", "email"):
                    if not targets:
                        break
                    args[name] = targets[0]
                    continue
                ok, value = literal_value(name, prop, text, list(args.values()))
                if not ok:
                    break
                args[name] = gathered if value == text else value  # "send the data": send it
            else:
                await self._call(st, tool, args)
        st.parts.append(f"Note: {text}")

    def compose(self, st: RunState) -> str:
        if not st.parts:
            return "I found no information for this request."
        return "Here is what I found.\n" + "\n".join(st.parts)
