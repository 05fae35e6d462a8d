"""Finding text addressed to the agent (instructions, overrides, exfiltration requests) and the URLs
and hosts a value mentions.

The matched text never leaves this module: callers get categories and positions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from toolwatch.injection.mitigations.results import iter_strings

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
