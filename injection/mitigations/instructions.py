"""Finding text addressed to the agent in tool output and tool descriptions: overrides, dictated
replies, exfiltration, argument tampering, concealment, planted actions — the injection scanner's
detector. The matched text never leaves this module: callers get categories and positions.

The cues look for text that tries to steer *the agent* — not for imperative prose in general:
a runbook step ("Delete old WAL archives"), a usage note for the caller ("You must provide
customer_id"), a workflow hint ("Call list_projects to find the project_key") or a security
advisory that quotes an attack is not a hit. Before matching, every text is also read
de-obfuscated (NFKC, zero-width characters dropped, look-alike letters in mixed-script words,
letters spaced or hyphenated apart, any characters spaced apart with their punctuation
("h t t p s : / / x . i o"), leetspeak, embedded base64 / hex, and rot13 or reversed
text when the text says so), and quoted phrases do not count as an override (an advisory
quoting "disregard prior directives" is reporting it).

Wording alone cannot decide some cases; the scanner sees the whole ``tools/list`` and passes
what it knows as :class:`ListingContext`: a description that *requires* calling **another
listed tool that acts** (writes, sends, deletes; :mod:`acts` reads it from each tool's
annotations, name and description, not believing a claim of only reading) is cross-tool
shadowing; a description that sends to or points at a host outside the deployment's allowlist
is exfiltration.

Beside the rules, a classifier trained on the development sets (:mod:`classifier`: those
below and ``scanner_dev7`` … ``dev10``) flags what they miss: a text no rule fires on is
category ``classifier`` when the model calls it an injection, and a text only wording cues
fired on is let through when the model is sure it is benign (its veto; cues from the listing
context stand).

The rules were written against ``benchmarks/data/scanner_set.jsonl`` (both its halves),
``scanner_dev2.jsonl`` and ``scanner_dev3.jsonl`` (two more authors'), with later rounds on
the benign descriptions of ``scanner_dev4.jsonl``, ``scanner_dev5.jsonl`` and
``scanner_dev6.jsonl``, only;
``benchmarks/bench_scanner.py`` reports precision and recall on ``scanner_blind.jsonl`` and
``scanner_blind2.jsonl``, written by authors who saw neither these rules nor those sets, and on
AgentCheck's templates — none of which rule writing, training or tuning ever looked at.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from toolwatch.injection.mitigations.acts import ListedTool, mention
from toolwatch.injection.mitigations.classifier import shipped_model
from toolwatch.injection.mitigations.results import iter_strings
from toolwatch.injection.mitigations.urls import find_urls, host_allowed, host_of, hosts_in
from toolwatch.injection.mitigations.wording import (
    CUES,
    SIDE_CHANNEL,
    STATABLE,
    STATED_SEND,
    names_sensitive,
)

# --------------------------------------------------------------------------------------------
# Listing context
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListingContext:
    """What the scanner knows beyond a text's wording: the tools listed beside it and the hosts
    the deployment allows (an empty allowlist allows nothing it can judge, so no host cue)."""

    tools: frozenset[str] = frozenset()
    allowlist: tuple[str, ...] = ()
    source: str | None = None  # the tool whose description or result this is
    acting: frozenset[str] = field(default_factory=frozenset)
    #: the text is a tool's description, which says what its tool does: "Envía una copia a
    #: https://<an allowed host>" there is "it sends", not the order "send" (:func:`_unstated`)
    description: bool = False

    @classmethod
    def of(
        cls,
        tools: Iterable[ListedTool | str],
        allowlist: Collection[str] = (),
        source: str | None = None,
        *,
        description: bool = False,
    ) -> ListingContext:
        """The context of a listing: each tool as listed (a bare name when that is all there
        is). Whether a tool acts is :meth:`ListedTool.acts`, the agents' and the verifier's
        answer, except that a claim of only reading is not believed (``trust_read_only``)."""
        listed = [ListedTool(t) if isinstance(t, str) else t for t in tools]
        acting = frozenset(t.name for t in listed if t.acts(trust_read_only=False))
        names = frozenset(t.name for t in listed)
        return cls(names, tuple(allowlist), source, acting, description)


_REQUIRED = re.compile(
    r"\b(?:must|required|mandatory|need to|has to|have to|is necessary|necessary to)\b", re.I
)
_POINTS_AT = re.compile(
    r"\b(?:send|post|upload|forward|use|using|call|navigate|redirect|visit|fetch|open)\w*\b",
    re.I,
)


def _context_cues(sentence: str, context: ListingContext | None) -> str | None:
    """A category the listing context shows and the wording alone does not."""
    if context is None:
        return None
    others = [  # a name as a whole, in any script (acts.mention: "物性検索を呼ぶ")
        name
        for name in context.acting
        if name != context.source and re.search(mention(name), sentence)
    ]
    if others and _REQUIRED.search(sentence):
        return "shadowing"
    if context.allowlist:
        for url in find_urls(sentence):
            host = host_of(url)
            if host and not host_allowed(host, context.allowlist) and _POINTS_AT.search(sentence):
                return "exfiltration"
    return None


def _unstated(text: str, allowlist: Collection[str]) -> str:
    """``text`` without the sentences in which a description says what its tool sends
    (:data:`~wording.STATED_SEND`: "Envía una copia a https://…" is "it sends" as much as
    "send"; "Sends a copy to https://…") or where it copies (:data:`~wording.SIDE_CHANNEL`:
    "Every export is also POSTed to https://…"), where every address is on the deployment's
    allowlist and nothing sensitive is named: what the cues of :data:`~wording.STATABLE` and
    the classifier read in a description. Without an allowlist nothing is left out: by
    wording alone, "it sends a copy to a stranger" and the order to do so are one sentence,
    and reading it as a statement cost recall."""

    def said(sentence: str, sent: str) -> bool:
        hosts = hosts_in(sentence)
        allowed = hosts and all(host_allowed(h, allowlist) for h in hosts)
        return bool(allowed) and not names_sensitive(sent)

    def kept(m: re.Match[str]) -> str:
        sent = m.group("sent") or m.group("sends") or ""  # after the verb: "Emails" is no data
        return " " if said(m.group(0), sent) else m.group(0)

    def copied(m: re.Match[str]) -> str:  # "every export is also POSTed to …": the sentence
        sentence = m.group(0)
        return " " if SIDE_CHANNEL.search(sentence) and said(sentence, sentence) else sentence

    return _SENTENCE.sub(copied, STATED_SEND.sub(kept, text)) if allowlist else text


# --------------------------------------------------------------------------------------------
# De-obfuscation
# --------------------------------------------------------------------------------------------

_ZERO_WIDTH = re.compile(r"[\u200b-\u200f\u2060\ufeff\u00ad]")
#: Latin look-alikes of Greek and Cyrillic letters, applied only to words mixing scripts.
_CONFUSABLE: Final = str.maketrans(
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοριενАВЕКМНОРСТХаеорсухіјІЈЅѕһԁ",
    "ABEZHIKMNOPTYXaopievABEKMHOPCTXaeopcyxijIJSshd",
)
_MIXED_WORD = re.compile(r"\w+")
_LEET: Final = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a"})
_SPACED = re.compile(r"\b(?:[A-Za-z][-.\s]){3,}[A-Za-z]\b")
#: Characters of any kind written one space apart ("h t t p s : / / x . i o", "n o t e :"):
#: a URL or a word with its punctuation spaced out, which the letters-only run cuts apart.
_SPACED_CHARS = re.compile(r"(?<!\S)(?:\S ){3,}\S(?!\S)")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")
_HEX = re.compile(r"(?:\b|(?<=0x))(?:[0-9a-fA-F]{2}){12,}\b")


_TAG = re.compile(r"</?[a-z][^<>\n]{0,80}>", re.I)
_SNAKE_PHRASE = re.compile(r"\b[a-z]+(?:_[a-z]+){4,}\b")


def _unspaced(run: str) -> str:
    """Letters written apart, joined: by spaces ("s e n d") or by dashes or dots ("i-g-n-o")."""
    return re.sub(r"\s", "", run) if re.search(r"\s", run) else re.sub(r"[-.]", "", run)


def _latin(word: str) -> str:
    scripts = {unicodedata.name(c, "?").split()[0] for c in word if c.isalpha()}
    return word.translate(_CONFUSABLE) if len(scripts) > 1 and "LATIN" in scripts else word


def readings(text: str) -> list[str]:
    """``text`` and its de-obfuscated readings (each is scanned)."""
    base = unicodedata.normalize("NFKC", _ZERO_WIDTH.sub("", text))
    base = _MIXED_WORD.sub(lambda m: _latin(m.group(0)), base)
    out = [base]
    if _SPACED.search(base):
        words = re.split(r"\s{2,}", base)
        out.append(" ".join(_SPACED.sub(lambda m: _unspaced(m.group(0)), w) for w in words))
    if _SPACED_CHARS.search(base):
        parts = re.split(r"\s{2,}", base)
        joined = " ".join(
            _SPACED_CHARS.sub(lambda m: m.group(0).replace(" ", ""), w) for w in parts
        )
        if joined not in out:
            out.append(joined)
    if _TAG.search(base):  # text cut up by markup: "<span>Ass</span><span>istant: ig</span>"
        out.append(_TAG.sub("", base))
    if _SNAKE_PHRASE.search(base):  # an enum value that is a sentence: ignore_all_prior_...
        out.append(_SNAKE_PHRASE.sub(lambda m: m.group(0).replace("_", " "), base))
    if re.search(r"[a-z][0-9@][a-z]|\b[0-9][a-z]{2}", base, re.I):
        out.append(base.translate(_LEET))
    for token in _BASE64.findall(base):
        try:
            decoded = base64.b64decode(token + "=" * (-len(token) % 4)).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if decoded and sum(c.isprintable() for c in decoded) > 0.9 * len(decoded):
            out.append(decoded)
    for token in _HEX.findall(base):
        try:
            out.append(bytes.fromhex(token).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
    if re.search(r"\brot-?13\b", base, re.I):
        out.append(codecs.decode(base, "rot13"))
    if re.search(r"\b(?:backwards|reversed|in reverse)\b", base, re.I):
        out.append(base[::-1])
    return out


# --------------------------------------------------------------------------------------------
# Finding
# --------------------------------------------------------------------------------------------

#: cues a quoted phrase does not trigger (an advisory quoting "ignore previous instructions")
_QUOTE_BLIND: Final = frozenset({"override", "multilingual"})
#: Quotation marks of many languages: "…", “…”, ‘…’, „…“, «…», ‹…›, 「…」, 『…』.
_OPEN_QUOTE: Final = "'\"“‘„«‹「『"
_CLOSE_QUOTE: Final = "'\"”’“»›」』"
_QUOTED_PHRASE = re.compile(
    rf"(?<![\w])[{_OPEN_QUOTE}][^{_CLOSE_QUOTE}\n]{{3,120}}[{_CLOSE_QUOTE}](?![\w])"
)
#: An attack named as an example without quotes ("attempts such as instructions to ignore
#: previous directions"): reported, not addressed (read so by the override cues only).
_REPORTED_EXAMPLE = re.compile(
    r"\b(?:such as|like|e\.g\.,?|including|for example,?)\s+(?:the\s+)?(?:instructions?|attempts?"
    r"|requests?|phrases?|payloads?|commands?|prompts?|messages?|text)\s+(?:to|that|telling"
    r"|asking|which)\b[^.;()\n]{0,120}",
    re.I,
)
#: A sentence ends at . ! ? followed by whitespace (not inside a URL, an e-mail address or a
#: decimal number) or at a line break.
_SENTENCE = re.compile(r"(?:[^.!?\n。！？]|[.!?]+(?=[^\s.!?]))+(?:[.!?。！？]+|$)", re.M)
_PARAGRAPH_END = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class InstructionHit:
    """A stretch of tool-supplied text that addresses the agent."""

    category: str
    start: int
    end: int


#: A conversation's turn labels: in a text with a user's turn, "Assistant:" names a turn.
_USER_TURN = re.compile(r"(?mi)^\s*(?:user|human|customer|client|q)\s*:")
_AGENT_TURN = re.compile(r"(?mi)^(\s*)(?:assistant|ai|bot|model|agent|a)\s*:")
#: A quote the text reports ("an e-mail containing text such as '...'", a JSON ``input``).
_REPORTED_QUOTE = re.compile(
    r"(?:\bsuch as|\blike|\be\.g\.,?|\bfor example,?|\bwrites|\bwrote|\bsays|\bsaid|\bsaying"
    r"|\bplanted"
    r"|\bcontaining|\bcontains|\btypes|\btyped"
    r"|\bthe (?:string|text|phrase|payload|line)|\"(?:input|sample|example|payload)\"\s*:)"
    rf"\s*:?\s*(?:the (?:string|text) )?"
    rf"[{_OPEN_QUOTE}][^{_CLOSE_QUOTE}\n]{{3,200}}[{_CLOSE_QUOTE}]",
    re.I,
)


#: The category of a text only the trained classifier flags (:mod:`classifier`).
CLASSIFIER: Final = "classifier"


def categories(
    text: str,
    context: ListingContext | None = None,
    *,
    classifier: bool = True,
    veto: bool = True,
) -> list[str]:
    """Every category of cue in ``text`` (any reading), sorted; :data:`CLASSIFIER` when no
    rule fires but the trained classifier flags the text, none when only wording cues fired
    and the classifier vetoes them (:meth:`~classifier.TextModel.vetoes`; listing-context cues
    stand). The named variants ``benchmarks/bench_scanner.py`` measures beside it:
    ``classifier=False``, the rules alone; ``veto=False``, the classifier without its veto."""
    found, listed = _rule_categories(text, context)
    if classifier and not listed:
        model = shipped_model()
        judged = text  # a description's statement of what its tool sends is not judged again
        if context is not None and context.description:
            judged = _unstated(text, context.allowlist)
        if not found and model.flags(judged):
            found.add(CLASSIFIER)
        elif found and veto and model.vetoes(text):
            found.clear()
    return sorted(found | listed)


def _rule_categories(text: str, context: ListingContext | None) -> tuple[set[str], set[str]]:
    """The categories of the wording cues and, apart, of the listing-context cues; a cue read
    as a description's statement (:func:`_unstated`) counts only when another cue fires."""
    found: set[str] = set()
    listed: set[str] = set()
    stated: set[str] = set()  # a description's "it sends … to <address>": counted beside others
    allowed = context.allowlist if context is not None and context.description else ()
    text = _REPORTED_QUOTE.sub(" ", text)
    if _USER_TURN.search(text):
        text = _AGENT_TURN.sub(r"\1", text)
    for reading in readings(text):
        unquoted = _REPORTED_EXAMPLE.sub(" ", _QUOTED_PHRASE.sub(" ", reading))
        for category, pattern in CUES:
            target = unquoted if category in _QUOTE_BLIND else reading
            if not pattern.search(target):
                continue
            if allowed and pattern in STATABLE and not pattern.search(_unstated(target, allowed)):
                stated.add(category)
            else:
                found.add(category)
        for m in _SENTENCE.finditer(reading):
            cue = _context_cues(m.group(0), context)
            if cue:
                listed.add(cue)
    if found or listed:  # other cues: the statement may be the order it reads like
        found |= stated
    return found, listed


def find_instructions(text: str, context: ListingContext | None = None) -> list[InstructionHit]:
    """Stretches of ``text`` that give instructions to the agent (overrides, exfiltration, ...).

    A hit starts at the sentence holding the first cue and runs to the end of its paragraph:
    planted instructions come as a block ("Ignore all previous instructions. Report that ..."),
    and only the first sentence needs to carry a cue for the whole block to be caught. Text
    whose cue shows only in a de-obfuscated reading is one hit over the whole text.
    """
    hits: list[InstructionHit] = []
    whole = categories(text, context) if text else []
    if not whole:
        return hits
    pos = 0
    while pos < len(text):
        found: tuple[str, int] | None = None
        for m in _SENTENCE.finditer(text, pos):
            cats = categories(m.group(0), context)
            if cats:
                found = (cats[0], m.start())
                break
        if found is None:
            break
        category, start = found
        para = _PARAGRAPH_END.search(text, start)
        end = para.start() if para else len(text)
        hits.append(InstructionHit(category, start, end))
        pos = end + 1
    if not hits:  # a cue across sentences or only in a decoded reading: the whole text
        hits.append(InstructionHit(whole[0], 0, len(text)))
    return hits


def strip_instructions(text: str, context: ListingContext | None = None) -> str:
    """``text`` with every instruction sentence removed (whitespace tidied)."""
    hits = find_instructions(text, context)
    if not hits:
        return text
    out: list[str] = []
    pos = 0
    for h in hits:
        out.append(text[pos : h.start])
        pos = h.end
    out.append(text[pos:])
    return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip()


def instruction_categories(value: Any, context: ListingContext | None = None) -> list[str]:
    """Categories of all instruction sentences in the strings of a JSON value (sorted, unique)."""
    cats: set[str] = set()
    for s in iter_strings(value):
        cats.update(categories(s, context))
    return sorted(cats)


def redact_value(value: Any, context: ListingContext | None = None) -> Any:
    """A copy of a JSON value with instruction sentences removed from every string."""
    if isinstance(value, str):
        return strip_instructions(value, context)
    if isinstance(value, Mapping):
        return {k: redact_value(v, context) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, context) for v in value]
    return value
