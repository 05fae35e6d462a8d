"""The injection scanner: results and tool descriptions addressed to the agent are withheld; the
replacement names the tool and the kind of instruction, never the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

from toolwatch.injection.mitigations.acts import ListedTool
from toolwatch.injection.mitigations.instructions import (
    ListingContext,
    instruction_categories,
    redact_value,
    strip_instructions,
)
from toolwatch.injection.mitigations.results import FLAGS_META_KEY, annotate, make_result
from toolwatch.injection.mitigations.wrapper import EventSink, Mitigation, Send


class InjectionScanner(Mitigation):
    """Withhold tool output (and tool descriptions) that contains instructions to the agent.

    ``mode="block"`` replaces the whole result with an error naming the tool and the kinds of
    instruction found; ``mode="redact"`` removes only the offending sentences. In neither mode
    does any part of an offending sentence reach the caller, not even inside the error.

    The detector (:mod:`instructions`) also reads the listing context: the tools listed (a
    description or result that requires calling another listed tool that acts, by its
    annotations, name or description, is shadowing)
    and ``allowlist``, the hosts the deployment allows (text sending to or pointing at another
    host is exfiltration).
    """

    name = "scan"

    def __init__(
        self,
        inner: Any,
        *,
        mode: str = "block",
        allowlist: Sequence[str] = (),
        on_event: EventSink | None = None,
    ) -> None:
        super().__init__(inner, on_event=on_event)
        if mode not in ("block", "redact"):
            raise ValueError(f"scanner mode must be 'block' or 'redact', not {mode!r}")
        self.mode = mode
        self.allowlist = tuple(allowlist)
        #: the context of the last listing, decided once per listing: which tools act is
        #: read from every tool's annotations, name and description, and each description
        #: and each result is read against it
        self._listing = ListingContext.of((), self.allowlist)

    def _context(self, source: str | None, *, description: bool = False) -> ListingContext:
        return replace(self._listing, source=source, description=description)

    async def list_tools(self, *args: Any, **kwargs: Any) -> ListToolsResult:
        listed: ListToolsResult = await self.inner.list_tools(*args, **kwargs)
        self._listing = ListingContext.of([ListedTool.of(t) for t in listed.tools], self.allowlist)
        tools: list[Tool] = []
        changed = False
        for tool in listed.tools:
            context = self._context(tool.name, description=True)
            cats = instruction_categories([tool.description or "", tool.title or ""], context)
            if not cats:
                tools.append(tool)
                continue
            changed = True
            self._emit("description_blocked", tool.name, ",".join(cats))
            if self.mode == "redact":
                description = strip_instructions(tool.description or "", context)
            else:
                description = (
                    f"[toolwatch scan] The description of '{tool.name}' was withheld: it "
                    f"contained instructions to the agent ({', '.join(cats)})."
                )
            tools.append(tool.model_copy(update={"description": description, "title": None}))
        return listed.model_copy(update={"tools": tools}) if changed else listed

    async def handle(
        self, name: str, arguments: dict[str, Any], timeout: float | None, send: Send
    ) -> CallToolResult:
        result = await send(timeout)
        texts = [b.text for b in result.content if isinstance(b, TextContent)]
        context = self._context(name)
        cats = instruction_categories([texts, result.structured_content], context)
        if not cats:
            return result
        self._emit("blocked" if self.mode == "block" else "redacted", name, ",".join(cats))
        flag = {"mitigation": self.name, "flag": "injection", "detail": ",".join(cats)}
        if self.mode == "block":
            return make_result(
                f"[toolwatch scan] The result of tool '{name}' was withheld: it contained "
                f"instructions addressed to the agent ({', '.join(cats)}). Its content was not "
                "forwarded; ask the user how to proceed or use another source.",
                is_error=True,
                flags=[flag],
            )
        content = [
            b.model_copy(update={"text": strip_instructions(b.text, context)})
            if isinstance(b, TextContent)
            else b
            for b in result.content
        ]
        structured = (
            redact_value(result.structured_content, context)
            if result.structured_content is not None
            else None
        )
        redacted = CallToolResult(
            content=content,
            structured_content=structured,
            is_error=result.is_error,
            _meta={FLAGS_META_KEY: []},
        )
        return annotate(
            redacted,
            self.name,
            "injection",
            "Instructions addressed to the agent were removed from this result "
            f"({', '.join(cats)}).",
            ",".join(cats),
        )
