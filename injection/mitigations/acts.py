"""Whether a tool acts (writes, sends, deletes) or only reads: one answer for the workbench's
reference agents (which do not call an action the task did not ask for), the output verifier
(an action's result is a new state, not a value to compare) and the injection scanner (a
description requiring another listed tool that acts is shadowing).

Read from what the tool declares (MCP annotations), then its name's verb, then its description;
see :func:`tool_verb`. The scanner reads a listing it does not trust, so it asks with
``trust_read_only=False``: a tool's claim that it only reads cannot clear what its name or
description says it does.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp.types import Tool

#: First words of tool names that only read; any other tool is an action (it changes state).
READ_VERBS: Final = frozenset(
    [
        "get",
        "list",
        "search",
        "fetch",
        "find",
        "check",
        "lookup",
        "look",
        "read",
        "query",
        "show",
        "describe",
        "count",
        "verify",
        "view",
        "browse",
        "compare",
        "inspect",
        "summarize",
        "summarise",
        "retrieve",
    ]
)
WRITE_VERBS: Final = frozenset(
    [
        "merge",
        "book",
        "restart",
        "update",
        "issue",
        "refund",
        "send",
        "post",
        "put",
        "patch",
        "delete",
        "create",
        "transfer",
        "pay",
        "cancel",
        "reset",
        "set",
        "add",
        "remove",
        "write",
        "approve",
        "close",
        "deploy",
        "rollback",
        "submit",
        "place",
        "execute",
        "run",
        "trigger",
        "assign",
        "grant",
        "revoke",
        "upload",
        "move",
        "rename",
        "archive",
        "publish",
        "notify",
        "email",
        "mail",
        "reply",
        "schedule",
        "order",
        "buy",
        "sell",
    ]
)


#: Verbs of tools that work something out without changing anything (a tool named by one of
#: them and described by it, "validate_cron: Validates a cron expression", only reads).
_COMPUTE_VERBS: Final = frozenset(
    [
        "validate",
        "calculate",
        "compute",
        "convert",
        "estimate",
        "analyze",
        "analyse",
        "parse",
        "translate",
        "extract",
        "geocode",
        "resolve",
        "match",
        "classify",
        "detect",
        "scan",
        "crawl",
        "scrape",
        "evaluate",
        "test",
        "ping",
        "measure",
        "predict",
        "forecast",
        "render",
        "format",
        "preview",
        "simulate",
        "explain",
        "suggest",
        "recommend",
        "rank",
        "score",
        "plan",
        "diff",
        "lint",
        "audit",
        "monitor",
        "track",
        "trace",
        "locate",
        "identify",
        "recognize",
        "transcribe",
        "tokenize",
        "encode",
        "decode",
        "hash",
        "sort",
        "filter",
        "aggregate",
        "resize",
        "generate",
        "draft",
        "answer",
        "ask",
        "echo",
        "sum",
        "add",
    ]
)
#: A description that says the tool changes nothing, or that what it does stays done.
_SAYS_READ_ONLY = re.compile(
    r"\bread[- ]only\b|\bdoes(?: not|n't) (?:modify|change|alter|write)\b|"
    r"\bwithout (?:modifying|changing|altering)\b|\bno side[- ]effects?\b",
    re.I,
)
_SAYS_ACTS = re.compile(r"\bcannot be undone\b|\birreversibl[ey]\b|(?<![\w-])destructive\b", re.I)
_DESCRIPTION_LEAD = re.compile(
    r"^\W*(?:(?:this|the) tool |tool (?:to|that) |used to |lets you |allows you to |will )?"
    r"([A-Za-z]+)",
    re.I,
)


def _opens_with(verb: str, description: str) -> bool:
    """The description starts with ``verb`` as its verb ("Trips the breaker ...", "Trip the
    breaker", "This tool trips ..."): the tool's name starts with what it does."""
    m = _DESCRIPTION_LEAD.match(description)
    return m is not None and len(verb) >= 3 and m.group(1).lower() in _forms(verb)


def _forms(verb: str) -> set[str]:
    """``verb`` and its regular inflections (trips, tripped, tripping; applies; closes)."""
    forms = {verb, verb + "s", verb + "es", verb + "ed", verb + "d", verb + "ing"}
    forms |= {verb + verb[-1] + "ed", verb + verb[-1] + "ing"}
    if verb.endswith("y"):
        forms |= {verb[:-1] + "ies", verb[:-1] + "ied"}
    if verb.endswith("e"):
        forms.add(verb[:-1] + "ing")
    return forms


def tool_verb(
    tool_name: str,
    description: str = "",
    annotations: Mapping[str, Any] | None = None,
    *,
    trust_read_only: bool = True,
) -> tuple[str, bool]:
    """(action word, whether it changes state) of a tool like ``update_salary``.

    What the tool declares decides first: MCP's ``readOnlyHint`` (true: it only reads) and
    ``destructiveHint`` / ``readOnlyHint: false`` (it acts). Then its name: a first word that
    reads (``get``, ``search``), a word that acts (``update``, ``send``). A name no list
    knows is read through its description: one that says it changes nothing (read-only) or
    that what it does cannot be undone decides; else a name that starts with the verb its
    description opens with (``trip_breaker``: "Trips the circuit breaker ...") names an
    action unless that verb only works something out (``validate``, ``convert``). So an
    action named by a word no list has is an action, and a lookup named by a noun
    (``weather_api``, ``country_info``) still reads.

    ``trust_read_only=False`` ignores the tool's claims that it only reads (``readOnlyHint:
    true``, "read-only" in its description) and keeps every sign that it acts: MCP calls
    annotations untrusted hints, and a scanner must not let a listing talk ``send_email``
    into reading."""
    words = [w for w in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", tool_name) if w]
    words = [w.lower() for w in words]
    if not words:
        return "", False
    hints = annotations or {}
    writing = next((w for w in words if w in WRITE_VERBS), words[0])
    if trust_read_only and hints.get("readOnlyHint") is True:
        return words[0], False
    if hints.get("readOnlyHint") is False or hints.get("destructiveHint") is True:
        return writing, True
    if words[0] in READ_VERBS:
        return words[0], False
    for w in words:
        if w in WRITE_VERBS:
            return w, True
    if trust_read_only and _SAYS_READ_ONLY.search(description):
        return words[0], False
    if _SAYS_ACTS.search(description):
        return words[0], True
    acts = words[0] not in _COMPUTE_VERBS and _opens_with(words[0], description)
    return words[0], acts


@dataclass(frozen=True, slots=True)
class ListedTool:
    """What a ``tools/list`` entry says of one tool: the facts :func:`tool_verb` reads."""

    name: str
    description: str = ""
    annotations: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, tool: Tool) -> ListedTool:
        """The entry of an MCP listing (annotations by their wire names, unset ones left out)."""
        hints = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if tool.annotations
            else {}
        )
        return cls(tool.name, tool.description or "", hints)

    def acts(self, *, trust_read_only: bool = True) -> bool:
        """Whether calling it changes state (:func:`tool_verb`)."""
        return tool_verb(
            self.name, self.description, self.annotations, trust_read_only=trust_read_only
        )[1]


def _unspaced(c: str) -> bool:
    """Whether ``c`` is of a script written without spaces between words (CJK), where a name
    has no word boundary: ``物性検索を使う``."""
    return unicodedata.east_asian_width(c) in ("W", "F")


def mention(name: str) -> str:
    """The pattern of a tool's ``name`` named as a whole in text, in any script: never beside
    a letter, digit, ``_`` or ``-`` (nor a dotted suffix, ``name.json``); at an end written in
    a script without spaces ("物性検索を呼ぶ", "先调用物性検索") only beside another name's
    ASCII letters, digits, ``_`` or ``-`` (``物性検索_v2``), since no word boundary can be
    asked there. One answer for the converter renaming a template's ids and the agents
    reading which listed tool an order names."""
    head = r"(?<![A-Za-z0-9_.-])" if _unspaced(name[0]) else r"(?<![\w.-])"
    tail = r"(?![A-Za-z0-9_-])" if _unspaced(name[-1]) else r"(?![\w-]|\.\w)"
    return head + re.escape(name) + tail
