"""Client-side mitigations: wrappers around anything with an MCP-style ``call_tool``.

Each wrapper takes an inner object exposing ``call_tool(name, arguments, read_timeout_seconds)``
and ``list_tools()`` (an ``mcp.Client``, a ``ClientSession``, or another wrapper) and returns an
object with the same two methods, so production agents can stack them exactly as the workbench
does::

    client = apply_mitigations(mcp_client, ["retry", "schema", "scan", "verify"])

* :class:`RetryWithBackoff` retries timeouts, 5xx-class and rate-limit failures with
  exponential backoff inside a total deadline, never a permission denial or invalid arguments;
* :class:`SchemaValidation` checks a result against the tool's declared output schema and
  flags empty results, so "nothing came back" is not read as "there is nothing";
* :class:`InjectionScanner` withholds results (and tool descriptions) that address the agent;
  the replacement names the tool and the kind of instruction, never the text itself;
* :class:`OutputVerifier` cross-checks values between tools and flags contradictions, stale
  timestamps and results that do not mention what was asked for.

Problems found by schema/verify are *annotations*: the result is kept and a marked text block
plus a machine-readable flag (``result.meta["toolwatch/flags"]``) is added, so the consumer
decides. The scanner *blocks*: a flagged payload must never reach the model.

The result helpers here (:func:`result_data`, :func:`result_text`, :func:`classify_failure`,
:func:`find_instructions`, ...) are shared with the reference agents and the checks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import jsonschema
from mcp import MCPError
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

log = logging.getLogger(__name__)

#: ``result.meta`` key holding the list of flags added by mitigations.
FLAGS_META_KEY: Final = "toolwatch/flags"
#: ``TextContent.meta`` key marking a block written by a mitigation (not by the tool).
ANNOTATION_META_KEY: Final = "toolwatch/annotation"
#: JSON-RPC code the MCP client raises on its own request timeout.
CLIENT_TIMEOUT_CODE: Final = -32001

MITIGATION_NAMES: Final[tuple[str, ...]] = ("retry", "schema", "scan", "verify")


class ToolClient(Protocol):
    """What every wrapper needs from the object it wraps (``mcp.Client`` satisfies it)."""

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
    ) -> CallToolResult: ...

    async def list_tools(self) -> ListToolsResult: ...


@dataclass(frozen=True)
class MitigationEvent:
    """Something a mitigation did (retried, blocked, flagged); content-free by construction."""

    mitigation: str
    kind: str
    tool: str
    detail: str = ""


EventSink = Callable[[MitigationEvent], None]


# =============================================================================================
# Result helpers
# =============================================================================================


def is_annotation(block: Any) -> bool:
    meta = getattr(block, "meta", None) or {}
    return ANNOTATION_META_KEY in meta


def result_text(result: CallToolResult, *, annotations: bool = False) -> str:
    """The result's text blocks joined by newlines (tool text only unless ``annotations``)."""
    parts = [
        b.text
        for b in result.content
        if isinstance(b, TextContent) and (annotations or not is_annotation(b))
    ]
    return "\n".join(parts)


def annotation_texts(result: CallToolResult) -> list[str]:
    """Text of the blocks added by mitigations."""
    return [b.text for b in result.content if isinstance(b, TextContent) and is_annotation(b)]


def result_data(result: CallToolResult) -> Any:
    """The result as data: structured content, else the first text block that is JSON, else
    the text (a prepended note does not hide the JSON document after it)."""
    if result.structured_content is not None:
        return result.structured_content
    blocks = [b.text for b in result.content if isinstance(b, TextContent) and not is_annotation(b)]
    for text in [*blocks, "\n".join(blocks)] if len(blocks) > 1 else blocks:
        stripped = text.strip()
        if stripped[:1] in ("{", "[") or stripped in ("null", "true", "false"):
            try:
                return json.loads(stripped)
            except ValueError:
                continue
    return "\n".join(blocks)


def result_flags(result: CallToolResult) -> list[dict[str, str]]:
    meta = result.meta or {}
    flags = meta.get(FLAGS_META_KEY) or []
    return [dict(f) for f in flags if isinstance(f, Mapping)]


def iter_leaves(
    value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, scalar) pairs of a JSON value, depth first in document order."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from iter_leaves(v, (*path, str(k)))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from iter_leaves(v, (*path, i))
    else:
        yield path, value


def iter_strings(value: Any) -> Iterator[str]:
    for _, leaf in iter_leaves(value):
        if isinstance(leaf, str):
            yield leaf


def is_empty_value(value: Any) -> bool:
    """True for null, "", [] and {}, and for objects whose collections are all empty and
    whose other fields only describe the response.

    ``{"repo": "acme/payments", "matches": [], "total": 0}`` is empty: identifiers, dates and
    counts beside an empty list are the request echoed back, not results. ``{"status":
    "passing", "failed_jobs": []}`` is not: the status is the answer. An object without
    collections is empty only when all its values are null or blank.
    """
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == ""
    if isinstance(value, list | tuple):
        return len(value) == 0
    if isinstance(value, Mapping):
        if not value:
            return True
        collections = [v for v in value.values() if isinstance(v, list | tuple | Mapping)]
        if collections:
            return all(is_empty_value(v) for v in collections) and all(
                _is_metadata(str(k)) or v is None or v == ""
                for k, v in value.items()
                if not isinstance(v, list | tuple | Mapping)
            )
        return all(v is None or v == "" for v in value.values())
    return False


_META_KEYS: Final = re.compile(
    r"(^|_)(count|total|page|pages|limit|offset|query|q|cursor|next|took|ms|source)$", re.I
)


def _is_metadata(key: str) -> bool:
    """Scalars that describe a response rather than carry its content (ids, dates, counts)."""
    return bool(
        ANCHOR_KEYS.search(key)
        or IDENTIFIER_NAME.search(key)
        or FRESHNESS_KEYS.search(key)
        or _META_KEYS.search(key)
    )


def is_empty_result(result: CallToolResult) -> bool:
    """A successful result that carries nothing: no blocks, blank text, or an empty JSON shape."""
    if result.is_error:
        return False
    if not result.content and result.structured_content is None:
        return True
    return is_empty_value(result_data(result))


def make_result(
    text: str,
    *,
    is_error: bool,
    flags: Sequence[Mapping[str, str]] = (),
) -> CallToolResult:
    meta = {FLAGS_META_KEY: [dict(f) for f in flags]} if flags else None
    return CallToolResult(
        content=[TextContent(type="text", text=text)], is_error=is_error, _meta=meta
    )


def annotate(
    result: CallToolResult, mitigation: str, flag: str, message: str, detail: str = ""
) -> CallToolResult:
    """A copy of ``result`` with a marked warning block and a machine-readable flag added."""
    meta = dict(result.meta or {})
    flags = [
        *list(meta.get(FLAGS_META_KEY) or []),
        {"mitigation": mitigation, "flag": flag, "detail": detail},
    ]
    meta[FLAGS_META_KEY] = flags
    block = TextContent(
        type="text",
        text=f"[toolwatch {mitigation}] {message}",
        _meta={ANNOTATION_META_KEY: mitigation},
    )
    return result.model_copy(update={"content": [*result.content, block], "meta": meta})


# =============================================================================================
# Failure classes
# =============================================================================================


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


# =============================================================================================
# Instructions addressed to the agent
# =============================================================================================

# Each cue is (category, pattern). Categories are what a blocked result may mention; the
# matched text itself never leaves this module. The cues look for text *addressed to the
# agent*: overrides, talk to "the assistant", orders about the reply, orders to call a named
# tool or send data somewhere, and concealment — not for imperative prose in general, so a
# runbook step ("restart the service") or a policy ("staff must badge in") is not a hit.
_TOOL_NAME = r"[`'\"]?[a-z][a-z0-9]*(?:_[a-z0-9]+)+[`'\"]?"
_INSTRUCTION_CUES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "override",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}\b(?:previous|prior|"
            r"above|earlier|all|any|your|the user'?s?|system|original|the tool|this tool)\b"
            r"[^.!?\n]{0,30}\b(?:instructions?|directions?|prompts?|rules|guidelines|task|"
            r"request|constraints|output|results?|response|data)\b|\bsystem override\b|"
            r"\[\s*system\b|<\s*/?\s*(?:system|important|instructions?)\s*>",
            re.I,
        ),
    ),
    (
        "role",
        re.compile(
            r"\bnew (?:system )?instructions?\b|\bsystem prompt\b|\[/?INST\]|\byou are now\b|"
            r"\bfrom now on\b|\bas an ai (?:assistant|model)\b|\b(?:assistant|agent|ai|llm) "
            r"(?:instruction|directive|notice|note)s?\b|\b(?:note|notice|message|attention|"
            r"instructions?|reminder)\s+(?:to|for)\s+(?:the\s+|all\s+)?(?:ai\b[\w ]{0,20}|"
            r"assistants?|agents?|models?|llms?|language models?|bots?)\b|\b(?:ai|llm) "
            r"(?:assistant|agent|model)s?\s+(?:reading|processing|summari[sz]ing)\b",
            re.I,
        ),
    ),
    (
        "reply",
        re.compile(
            r"\b(?:tell|inform|advise|assure|notify) the user\b|\b(?:in|into|to|with|end|begin|"
            r"start) (?:your|every|each|the) (?:final )?(?:reply|replies|answer|answers|"
            r"response|responses|summary)\b|\b(?:quote|cite) (?:the )?(?:reference|code|tag|"
            r"id)\b|\breply with\b|\brespond with\b|\bbefore (?:replying|answering|responding)\b",
            re.I,
        ),
    ),
    (
        "concealment",
        re.compile(
            r"\b(?:do not|don't|never|must not|without) (?:tell(?:ing)?|inform(?:ing)?|"
            r"mention(?:ing)?|reveal(?:ing)?|alert(?:ing)?|notify(?:ing)?)\b[^.!?\n]{0,30}"
            r"\b(?:the )?(?:user|human|operator|anyone)\b|\bmust not be (?:mentioned|disclosed|"
            r"shown|revealed)\b",
            re.I,
        ),
    ),
    (
        "tool_call",
        re.compile(
            rf"\b(?:call|run|invoke|execute|use|using|with|via|trigger)\s+(?:the\s+)?{_TOOL_NAME}"
            r"(?:\s+(?:tool|function))?\b|\b(?:whenever|when|before|after) (?:you )?(?:use|call|"
            r"invoke)(?:s|ing)? this tool\b|\b(?:before|after) (?:calling|using|invoking) this "
            r"tool\b",
            re.I,
        ),
    ),
    (
        "exfiltration",
        re.compile(
            # a verb, *data from the agent's context*, then a destination: "report bugs to
            # security@..." is policy, "send this profile to x@..." is exfiltration
            r"\b(?:send|forward|post|upload|transmit|exfiltrate|email|e-mail|mail|submit|share|"
            r"copy|mirror|sync|report|leak|paste)\b[^.!?\n]{0,25}?\b(?:this|these|all|every|"
            r"the (?:current |full |whole |entire |complete )?(?:output|result|response|document|"
            r"data|contents?|text|file|profile|record|history|conversation|chat|json)s?|your "
            r"(?:session |api |access )?(?:credentials?|keys?|tokens?|passwords?|secrets?|"
            r"conversation|history|context)|the (?:user|customer|traveller|traveler|patient|"
            r"employee|client)'?s)\b[^.!?\n]{0,150}\b(?:to|at|via|using|into)\b[^.!?\n]{0,40}"
            r"(?:https?://|www\.|[\w.+-]+@[\w-]+\.[\w.-]+)",
            re.I,
        ),
    ),
    (
        "navigation",
        re.compile(
            r"\b(?:visit|open|navigate to|browse to|go to|fetch|curl|request|load|ping)\b"
            r"[^.!?\n]{0,30}(?:https?://|www\.)",
            re.I,
        ),
    ),
)

#: A sentence ends at . ! ? followed by whitespace (not inside a URL, an e-mail address or a
#: decimal number) or at a line break.
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?]+(?=[^\s.!?]))+(?:[.!?]+|$)", re.M)
_PARAGRAPH_END = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class InstructionHit:
    """A stretch of tool-supplied text that addresses the agent."""

    category: str
    start: int
    end: int


def find_instructions(text: str) -> list[InstructionHit]:
    """Stretches of ``text`` that give instructions to the agent (overrides, exfiltration, ...).

    A hit starts at the sentence holding the first cue and runs to the end of its paragraph:
    planted instructions come as a block ("Ignore all previous instructions. Report that ..."),
    and only the first sentence needs to carry a cue for the whole block to be caught.
    """
    hits: list[InstructionHit] = []
    if not text:
        return hits
    pos = 0
    while pos < len(text):
        found: tuple[str, int] | None = None
        for m in _SENTENCE.finditer(text, pos):
            sentence = m.group(0)
            for category, pattern in _INSTRUCTION_CUES:
                if pattern.search(sentence):
                    found = (category, m.start())
                    break
            if found:
                break
        if found is None:
            break
        category, start = found
        para = _PARAGRAPH_END.search(text, start)
        end = para.start() if para else len(text)
        hits.append(InstructionHit(category, start, end))
        pos = end + 1
    return hits


def strip_instructions(text: str) -> str:
    """``text`` with every instruction sentence removed (whitespace tidied)."""
    hits = find_instructions(text)
    if not hits:
        return text
    out: list[str] = []
    pos = 0
    for h in hits:
        out.append(text[pos : h.start])
        pos = h.end
    out.append(text[pos:])
    return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip()


def instruction_categories(value: Any) -> list[str]:
    """Categories of all instruction sentences in the strings of a JSON value (sorted, unique)."""
    cats: set[str] = set()
    for s in iter_strings(value):
        cats.update(h.category for h in find_instructions(s))
    return sorted(cats)


def redact_value(value: Any) -> Any:
    """A copy of a JSON value with instruction sentences removed from every string."""
    if isinstance(value, str):
        return strip_instructions(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


_URL = re.compile(r"(?:https?://|www\.)[^\s\"'<>)\]}]+", re.I)
_EMAIL = re.compile(r"\b[\w.+-]+@([\w-]+(?:\.[\w-]+)+)\b")


def find_urls(text: str) -> list[str]:
    return [m.group(0).rstrip(".,;:") for m in _URL.finditer(text)]


def host_of(url_or_email: str) -> str | None:
    """Lower-case host of a URL (``www.x`` accepted) or of an e-mail address."""
    m = _EMAIL.fullmatch(url_or_email.strip())
    if m:
        return m.group(1).lower()
    u = url_or_email.strip()
    if u.lower().startswith("www."):
        u = "http://" + u
    try:
        host = urlsplit(u).hostname
    except ValueError:
        return None
    return host.lower() if host else None


def hosts_in(value: Any) -> set[str]:
    """Hosts of all URLs and e-mail addresses inside the strings of a JSON value."""
    hosts: set[str] = set()
    for s in iter_strings(value):
        for url in find_urls(s):
            h = host_of(url)
            if h:
                hosts.add(h)
        for m in _EMAIL.finditer(s):
            hosts.add(m.group(1).lower())
    return hosts


def host_allowed(host: str, allowlist: Iterable[str]) -> bool:
    """``host`` equals an allowlisted host or is a subdomain of one."""
    host = host.lower().rstrip(".")
    for allowed in allowlist:
        a = (host_of(allowed) if "/" in allowed or "@" in allowed else allowed) or allowed
        a = a.lower().lstrip("*.").rstrip(".")
        if host == a or host.endswith("." + a):
            return True
    return False


# =============================================================================================
# Value comparison helpers (verifier, agents, checks)
# =============================================================================================

_DATE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$"
)
#: Keys whose date says how current the data is (not what it is about: a contract's start date
#: or a birth date may be old and still correct).
FRESHNESS_KEYS: Final = re.compile(
    r"(as_?of|updated|modified|timestamp|fetched|retrieved|observed|generated|refreshed|"
    r"last_?(?:update|sync|seen|checked|refresh)|valid_?(?:at|on|from)|captured|reported_?at|"
    r"issued|collected|published|released|rules_effective)",
    re.I,
)
#: Keys that name the entity a result is about (two results about the same entity share one).
ANCHOR_KEYS: Final = re.compile(
    r"(^id$|_id$|^sku$|^symbol$|^ticker$|^flight$|^city$|^region$|^account$|^repo$|^isbn$)", re.I
)
#: Argument names that identify what is asked for (compared with the result's echo).
IDENTIFIER_NAME: Final = re.compile(
    r"(^|_)(id|key|code|number|no|ref|sku|slug|symbol|ticker|flight|station|account)$", re.I
)
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


def tool_verb(tool_name: str) -> tuple[str, bool]:
    """(action word, whether it changes state) of a tool name like ``update_salary``."""
    words = [w for w in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", tool_name) if w]
    words = [w.lower() for w in words]
    if not words:
        return "", False
    if words[0] in READ_VERBS:
        return words[0], False
    for w in words:
        if w in WRITE_VERBS:
            return w, True
    return words[0], False


def parse_date(value: Any) -> datetime | None:
    """A UTC datetime from an ISO-8601 date/datetime string, else ``None``."""
    if not isinstance(value, str):
        return None
    m = _DATE.match(value.strip())
    if not m:
        return None
    try:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        hh, mm, ss = int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0)
        dt = datetime(y, mo, d, hh, mm, ss, tzinfo=UTC)
    except ValueError:
        return None
    tz = m.group(7)
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        dt -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
    return dt


def normalize_scalar(value: Any) -> str:
    """Comparable form of a scalar: numbers canonical, strings case/space folded."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        f = float(value)
        if math.isfinite(f) and f == int(f):
            return str(int(f))
        return repr(round(f, 6))
    return re.sub(r"\s+", " ", str(value)).strip().lower()


_WORD = re.compile(r"[a-z0-9][a-z0-9_-]{2,}", re.I)
_STOP: Final = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "into",
        "about",
        "what",
        "when",
        "where",
        "which",
        "their",
        "there",
        "have",
        "has",
        "are",
        "was",
        "were",
        "will",
        "would",
        "could",
        "should",
        "any",
        "all",
        "not",
        "but",
        "you",
        "your",
        "our",
        "its",
        "per",
        "via",
    ]
)


def tokens(value: Any) -> set[str]:
    """Content words (≥ 3 chars, stop words dropped) of all strings/numbers in a value."""
    out: set[str] = set()
    for _, leaf in iter_leaves(value):
        if isinstance(leaf, str | int | float) and not isinstance(leaf, bool):
            for w in _WORD.findall(str(leaf)):
                w = w.lower()
                if w not in _STOP:
                    out.add(w)
                    out.update(p for p in re.split(r"[_-]", w) if len(p) >= 3 and p not in _STOP)
    return out


def schema_problems(data: Any, schema: Mapping[str, Any]) -> list[str]:
    """Human-readable reasons ``data`` violates ``schema`` (empty list = valid)."""
    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator = validator_cls(schema)
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    except jsonschema.exceptions.SchemaError as exc:
        return [f"declared output schema is invalid: {exc.message}"]
    return [describe_schema_error(err) for err in errors[:8]]


def describe_schema_error(err: jsonschema.ValidationError) -> str:
    """One schema violation by field path and rule only: never the offending value, which is
    result content (jsonschema's own message quotes it)."""
    where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
    if err.validator == "required":
        missing = [
            str(r)
            for r in err.validator_value
            if isinstance(err.instance, Mapping) and r not in err.instance
        ]
        return f"{where}: missing required field(s) {', '.join(missing)}"
    if err.validator == "additionalProperties":
        return f"{where}: unexpected field(s)"
    return f"{where}: expected {err.validator} {err.validator_value!r}"


def client_rejection_detail(exc: BaseException) -> str:
    """Why the mcp client refused a result (see :func:`is_client_validation_error`), by field
    names: the SDK chains the jsonschema error it raised from."""
    cause = exc.__cause__
    if isinstance(cause, jsonschema.ValidationError):
        return describe_schema_error(cause)
    if "did not return structured content" in str(exc):
        return "(top level): no structured content"
    return "the declared output schema could not be applied"


# =============================================================================================
# Wrappers
# =============================================================================================


#: Forwards one call to the wrapped client, with the given read timeout (seconds).
Send = Callable[[float | None], Awaitable[CallToolResult]]


async def try_call(
    send: Send, timeout: float | None
) -> tuple[CallToolResult | None, BaseException | None]:
    """One call: (result, None), or (None, the exception) when the call itself failed (see
    :func:`is_call_failure`); anything else means the caller is broken and propagates."""
    try:
        return await send(timeout), None
    except Exception as exc:
        if not is_call_failure(exc):
            raise
        return None, exc


class ClientWrapper:
    """Something with ``call_tool`` / ``list_tools`` sitting on another such thing.

    ``call_tool`` is written once, here: it gives :meth:`handle` the call and a
    ``send(timeout)`` that forwards it to the inner client, so a wrapper only says what it does
    around the forwarding (retry it, inspect the result, record it). Every other attribute is
    the inner client's.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)

    async def list_tools(self, *args: Any, **kwargs: Any) -> ListToolsResult:
        result: ListToolsResult = await self.inner.list_tools(*args, **kwargs)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        **kwargs: Any,
    ) -> CallToolResult:
        async def send(timeout: float | None) -> CallToolResult:
            result: CallToolResult = await self.inner.call_tool(
                name, arguments, read_timeout_seconds=timeout, **kwargs
            )
            return result

        return await self.handle(name, dict(arguments or {}), read_timeout_seconds, send)

    async def handle(
        self, name: str, arguments: dict[str, Any], timeout: float | None, send: Send
    ) -> CallToolResult:
        """One call of tool ``name``; the default just forwards it."""
        return await send(timeout)


class Mitigation(ClientWrapper):
    """Base of the mitigations: a wrapper that reports what it did as events."""

    name = "mitigation"

    def __init__(self, inner: Any, *, on_event: EventSink | None = None) -> None:
        super().__init__(inner)
        self._on_event = on_event

    def _emit(self, kind: str, tool: str, detail: str = "") -> None:
        log.debug("%s: %s on %s", self.name, kind, tool)
        if self._on_event is not None:
            self._on_event(MitigationEvent(self.name, kind, tool, detail))


class RetryWithBackoff(Mitigation):
    """Retry transient failures (timeouts, 5xx, 429) with exponential backoff and jitter.

    ``deadline`` bounds the whole call including retries: each attempt's read timeout is cut
    to what is left, and no retry is started whose backoff would end past the deadline.
    Permission denials, invalid arguments and unknown tools are returned at once — repeating
    them cannot succeed and looks like the runaway loops detection is meant to catch.
    """

    name = "retry"

    def __init__(
        self,
        inner: Any,
        *,
        attempts: int = 3,
        base_delay: float = 0.05,
        factor: float = 2.0,
        max_delay: float = 2.0,
        deadline: float = 10.0,
        jitter: float = 0.2,
        seed: int = 0,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        on_event: EventSink | None = None,
    ) -> None:
        super().__init__(inner, on_event=on_event)
        if attempts < 1:
            raise ValueError("attempts must be >= 1")
        self.attempts = attempts
        self.base_delay = base_delay
        self.factor = factor
        self.max_delay = max_delay
        self.deadline = deadline
        self.jitter = jitter
        self._rng = random.Random(seed)
        self._sleep = sleep
        self._clock = clock

    def backoff(self, attempt: int) -> float:
        """Delay before retry number ``attempt`` (1-based)."""
        delay = min(self.max_delay, self.base_delay * self.factor ** (attempt - 1))
        return delay * (1.0 + self.jitter * self._rng.random())

    async def handle(
        self, name: str, arguments: dict[str, Any], timeout: float | None, send: Send
    ) -> CallToolResult:
        end = self._clock() + self.deadline
        result: CallToolResult | None = None
        error: BaseException | None = None
        for attempt in range(1, self.attempts + 1):
            remaining = end - self._clock()
            cut = remaining if timeout is None else min(timeout, remaining)
            result, error = await try_call(send, max(cut, 0.001))
            failure = classify_failure(result, error)
            if failure is None:
                if attempt > 1:
                    self._emit("recovered", name, f"attempt {attempt}")
                assert result is not None
                return result
            if not failure.retryable:
                if attempt == 1:
                    self._emit("not_retried", name, failure.value)
                break
            if attempt == self.attempts:
                self._emit("exhausted", name, failure.value)
                break
            delay = self.backoff(attempt)
            hint = retry_after_seconds(result_text(result)) if result is not None else None
            if hint is not None:
                delay = max(delay, hint)
            if self._clock() + delay >= end:
                self._emit("deadline", name, failure.value)
                break
            self._emit("retry", name, f"{failure.value}; attempt {attempt + 1} in {delay:.3f}s")
            await self._sleep(delay)
        if error is not None:
            raise error
        assert result is not None
        return result


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


class InjectionScanner(Mitigation):
    """Withhold tool output (and tool descriptions) that contains instructions to the agent.

    ``mode="block"`` replaces the whole result with an error naming the tool and the kinds of
    instruction found; ``mode="redact"`` removes only the offending sentences. In neither mode
    does any part of an offending sentence reach the caller, not even inside the error.
    """

    name = "scan"

    def __init__(
        self, inner: Any, *, mode: str = "block", on_event: EventSink | None = None
    ) -> None:
        super().__init__(inner, on_event=on_event)
        if mode not in ("block", "redact"):
            raise ValueError(f"scanner mode must be 'block' or 'redact', not {mode!r}")
        self.mode = mode

    async def list_tools(self, *args: Any, **kwargs: Any) -> ListToolsResult:
        listed: ListToolsResult = await self.inner.list_tools(*args, **kwargs)
        tools: list[Tool] = []
        changed = False
        for tool in listed.tools:
            cats = instruction_categories([tool.description or "", tool.title or ""])
            if not cats:
                tools.append(tool)
                continue
            changed = True
            self._emit("description_blocked", tool.name, ",".join(cats))
            if self.mode == "redact":
                description = strip_instructions(tool.description or "")
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
        cats = instruction_categories([texts, result.structured_content])
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
            b.model_copy(update={"text": strip_instructions(b.text)})
            if isinstance(b, TextContent)
            else b
            for b in result.content
        ]
        structured = (
            redact_value(result.structured_content)
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


class OutputVerifier(Mitigation):
    """Cross-check results within a session: contradictions, staleness, off-target answers.

    * **conflict**: a number in this result differs from one another *reading* tool returned
      about the same entity (the results share an identifier such as ``employee_id`` or
      ``sku``) under a field with a name in common (``temp_c`` / ``temp_c``,
      ``stock_total`` / ``on_hand_total``); list items and the results of actions (a restart,
      an update) are not compared, since they describe other entities or a new state;
    * **stale**: a freshness field (``as_of``, ``updated_at``, ``published``, ...) is more than
      ``max_age`` older than the newest freshness date any result of the session carried —
      data is judged against the other sources, not the wall clock, so an archived session
      does not look stale by age alone (``reference_time`` overrides). When the fresher
      result comes second, its annotation names the earlier, stale one;
    * **mismatch**: the result names a different entity than the one asked for (called with
      ``runbook_id=RB-CHK-07``, it answers about ``runbook_id: RB-SRCH-02``).
    """

    name = "verify"

    def __init__(
        self,
        inner: Any,
        *,
        max_age: timedelta = timedelta(days=180),
        reference_time: datetime | None = None,
        on_event: EventSink | None = None,
    ) -> None:
        super().__init__(inner, on_event=on_event)
        self.max_age = max_age
        self.reference_time = reference_time
        self._seen: list[_Seen] = []

    async def handle(
        self, name: str, arguments: dict[str, Any], timeout: float | None, send: Send
    ) -> CallToolResult:
        result = await send(timeout)
        if result.is_error:
            return result
        for flag, message, detail in self.inspect(name, arguments, result_data(result)):
            self._emit(flag, name, detail)
            result = annotate(result, self.name, flag, message, detail)
        return result

    def inspect(
        self, tool: str, arguments: Mapping[str, Any], data: Any
    ) -> list[tuple[str, str, str]]:
        """Problems of one result given the session so far: (flag, message, detail)."""
        seen = _Seen.of(tool, data)
        found: list[tuple[str, str, str]] = []
        mismatched = identifier_mismatches(arguments, data)
        if mismatched:
            detail = ", ".join(f"{name} differs from the request" for name in mismatched)
            found.append(
                (
                    "mismatch",
                    f"This result is about something else than what was asked ({detail}); it "
                    "may be unrelated to the request.",
                    detail,
                )
            )
        if not seen.writes:
            conflicts = sorted(
                {
                    f"{key} vs {other_key} of {prior.tool}"
                    for prior in self._seen
                    if not prior.writes and prior.tool != tool and prior.same_entity(seen)
                    for key, value in seen.numbers.items()
                    for other_key, other in prior.numbers.items()
                    if _related_keys(key, other_key) and _differ(value, other)
                }
            )
            if conflicts:
                detail = "; ".join(conflicts)
                found.append(
                    (
                        "conflict",
                        f"Values in this result contradict an earlier result ({detail}). The "
                        "sources disagree; do not pick one without saying so.",
                        detail,
                    )
                )
        newest = max((d for p in self._seen for _, d in p.dates), default=None)
        reference = self.reference_time or max(
            [d for d in (newest, *[d for _, d in seen.dates]) if d is not None], default=None
        )
        stale = [
            f"{key} {(reference - when).days} days older"
            for key, when in seen.dates
            if reference is not None and reference - when > self.max_age
        ]
        if stale:
            detail = ", ".join(stale)
            found.append(
                (
                    "stale",
                    f"This result may be out of date ({detail} than other data in this "
                    "session); confirm it is current before relying on it.",
                    detail,
                )
            )
        fresh = max((d for _, d in seen.dates), default=None)
        if fresh is not None and self.reference_time is None:
            older = sorted(
                {
                    f"{prior.tool} {key} {(fresh - when).days} days older"
                    for prior in self._seen
                    for key, when in prior.dates
                    if fresh - when > self.max_age
                }
            )
            if older:
                detail = ", ".join(older)
                found.append(
                    (
                        "stale",
                        f"An earlier result is much older than this one ({detail}); it may be "
                        "out of date.",
                        detail,
                    )
                )
        self._seen.append(seen)
        return found


@dataclass
class _Seen:
    """What the verifier keeps of one result: anchors, top-level numbers, freshness dates."""

    tool: str
    writes: bool
    anchors: set[tuple[str, str]]
    numbers: dict[str, float]
    dates: list[tuple[str, datetime]]

    @classmethod
    def of(cls, tool: str, data: Any) -> _Seen:
        anchors: set[tuple[str, str]] = set()
        numbers: dict[str, float] = {}
        dates: list[tuple[str, datetime]] = []
        for path, value in iter_leaves(data):
            if not path or not isinstance(path[-1], str):
                continue
            key = str(path[-1])
            in_list = any(isinstance(p, int) for p in path)
            if FRESHNESS_KEYS.search(key) and (when := parse_date(value)) is not None:
                dates.append((key, when))
                continue
            if in_list:
                continue
            if ANCHOR_KEYS.search(key) and isinstance(value, str | int) and value != "":
                anchors.add((key.lower(), normalize_scalar(value)))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                numbers[key] = float(value)
        return cls(tool, tool_verb(tool)[1], anchors, numbers, dates)

    def same_entity(self, other: _Seen) -> bool:
        mine = {v for _, v in self.anchors}
        return bool(mine & {v for _, v in other.anchors})


_UNIT_WORDS: Final = frozenset(
    [
        "eur",
        "usd",
        "gbp",
        "pct",
        "percent",
        "c",
        "f",
        "k",
        "kph",
        "mph",
        "mm",
        "cm",
        "km",
        "kg",
        "mg",
        "ms",
        "s",
        "min",
    ]
)


def _key_words(key: str) -> set[str]:
    return {w for w in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", key.lower()) if w} - _UNIT_WORDS


def _related_keys(a: str, b: str) -> bool:
    return a.lower() == b.lower() or bool(_key_words(a) & _key_words(b))


def _differ(a: float, b: float) -> bool:
    return abs(a - b) > 1e-9 + 0.01 * max(abs(a), abs(b))


def same_identifier(asked: Any, answered: Any) -> bool:
    """Loose equality for identifiers: equal after normalising, containment (``Lisbon`` /
    ``Lisbon, PT``) or a long common prefix (``Lisbon`` / ``Lisboa``) — but never when their
    digits differ (``GDPR-Art-33`` is not ``GDPR-Art-20``)."""
    a, b = normalize_scalar(asked), normalize_scalar(answered)
    if a == b or not a or not b:
        return True  # nothing to tell them apart by
    if re.findall(r"\d+", a) != re.findall(r"\d+", b):
        return False
    if min(len(a), len(b)) >= 4 and (a in b or b in a):
        return True
    prefix = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix += 1
    return prefix >= max(5, int(0.8 * min(len(a), len(b))))


def is_identifier_name(name: str) -> bool:
    """Argument or field names that say *which* entity is meant (an id, a symbol, a city,
    a repository path) rather than what is asked about it."""
    return bool(IDENTIFIER_NAME.search(name) or ANCHOR_KEYS.search(name)) or name == "path"


def identifier_mismatches(arguments: Mapping[str, Any], data: Any) -> list[str]:
    """Identifier arguments that the result echoes (top-level field of the same name) with
    another value: the answer is about another entity than the one asked for."""
    if not isinstance(data, Mapping):
        return []
    out: list[str] = []
    for name, asked in arguments.items():
        if not is_identifier_name(name):
            continue  # free text (a query) is echoed normalised; only identifiers must match
        if not isinstance(asked, str | int) or isinstance(asked, bool) or name not in data:
            continue
        answered = data[name]
        scalar = isinstance(answered, str | int) and not isinstance(answered, bool)
        if scalar and not same_identifier(asked, answered):
            out.append(name)
    return out


# =============================================================================================
# Stacking
# =============================================================================================

#: Wrapping order, innermost first: retry sees raw failures, the scanner sees every payload
#: before anything else can copy it, the verifier sees only what survived the scanner.
_ORDER: Final[tuple[str, ...]] = ("retry", "schema", "scan", "verify")


def parse_mitigations(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """Normalise ``"retry,scan"`` / ``"retry+scan"`` / ``["retry"]`` / ``"all"`` / ``"none"``
    to wrapping order."""
    if spec is None:
        return ()
    raw = re.split(r"[,+]", spec) if isinstance(spec, str) else list(spec)
    items = [s.strip().lower() for s in raw]
    items = [s for s in items if s]
    if items in (["none"], []):
        return ()
    if "all" in items:
        return _ORDER
    unknown = [s for s in items if s not in _ORDER]
    if unknown:
        raise ValueError(
            f"unknown mitigation(s) {', '.join(unknown)}; choose from {', '.join(_ORDER)} or all"
        )
    return tuple(m for m in _ORDER if m in items)


def apply_mitigations(
    client: Any,
    names: str | Sequence[str] | None,
    *,
    on_event: EventSink | None = None,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> Any:
    """Wrap ``client`` in the named mitigations (in the fixed order); options per name."""
    options = options or {}
    wrapped = client
    classes: dict[str, Callable[..., Mitigation]] = {
        "retry": lambda inner, **kw: RetryWithBackoff(inner, seed=seed, **kw),
        "schema": SchemaValidation,
        "scan": InjectionScanner,
        "verify": OutputVerifier,
    }
    for name in parse_mitigations(names):
        wrapped = classes[name](wrapped, on_event=on_event, **dict(options.get(name, {})))
    return wrapped
