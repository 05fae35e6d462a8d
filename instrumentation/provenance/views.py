"""Decoded views of one argument string: an exfiltrating call rarely sends bytes verbatim.

Each string argument is searched as written and, when it holds escapes, JSON-unescaped,
HTML-unescaped, URL-decoded (and form-decoded); every base64 (standard and URL-safe, at all four
character alignments) and hex (both alignments) token long enough to decode to a shingle is
decoded and searched too — in the URL-decoded text when there is one, since ``%XX`` escapes
cut tokens into pieces (labels ``url+base64`` …). The number of views is bounded: at most five
whole-string views, and per token at most four decodings.
"""

from __future__ import annotations

import binascii
import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Final
from urllib.parse import unquote_to_bytes

from toolwatch.instrumentation.provenance.text import encode


@dataclass(frozen=True, slots=True)
class View:
    """One way of reading an argument string: its encoding name and the decoded bytes.

    ``token``: a decoded token (its coverage adds to the whole string's) rather than the
    whole string read another way (of which the best one counts).
    """

    encoding: str
    data: bytes
    token: bool = False


_JSON_ESCAPE: Final = re.compile(rb'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_JSON_SIMPLE: Final = {
    b'"': b'"',
    b"\\": b"\\",
    b"/": b"/",
    b"b": b"\b",
    b"f": b"\f",
    b"n": b"\n",
    b"r": b"\r",
    b"t": b"\t",
}
_HTML_ENTITY: Final = re.compile(rb"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_PERCENT: Final = re.compile(rb"%[0-9A-Fa-f]{2}")
_URLSAFE: Final = bytes.maketrans(b"-_", b"+/")


def _json_unescape(match: re.Match[bytes]) -> bytes:
    escape = match.group(1)
    if escape[:1] == b"u":
        return encode(chr(int(escape[1:], 16)))
    return _JSON_SIMPLE[escape]


@dataclass(frozen=True, slots=True)
class _TokenPatterns:
    base64: re.Pattern[bytes]
    base64url: re.Pattern[bytes]
    hex: re.Pattern[bytes]


@cache
def _patterns(k: int) -> _TokenPatterns:
    """Token patterns long enough to decode to at least ``k`` bytes."""
    chars = -(-4 * k // 3)
    return _TokenPatterns(
        re.compile(rb"[A-Za-z0-9+/]{%d,}={0,2}" % chars),
        re.compile(rb"[A-Za-z0-9_-]{%d,}={0,2}" % chars),
        re.compile(rb"[0-9A-Fa-f]{%d,}" % (2 * k)),
    )


def views(raw: bytes, k: int) -> Iterator[View]:
    """The views of one argument string (UTF-8 bytes), verbatim first."""
    yield View("verbatim", raw)
    if b"\\" in raw:
        decoded = _JSON_ESCAPE.sub(_json_unescape, raw)
        if decoded != raw:
            yield View("json", decoded)
    if b"&" in raw and _HTML_ENTITY.search(raw):
        decoded = encode(html.unescape(raw.decode("utf-8", "surrogatepass")))
        if decoded != raw:
            yield View("html", decoded)
    url = None
    if b"%" in raw and _PERCENT.search(raw):
        url = unquote_to_bytes(raw)
        yield View("url", url)
        if b"+" in raw:
            yield View("form", unquote_to_bytes(raw.replace(b"+", b" ")))
    text = raw if url is None else url
    for encoding, data, token in _tokens(text, _patterns(k), k):
        # a token that was already whole in the raw text keeps its plain label
        if url is not None and token not in raw:
            encoding = "url+" + encoding
        yield View(encoding, data, token=True)


def _tokens(text: bytes, patterns: _TokenPatterns, k: int) -> Iterator[tuple[str, bytes, bytes]]:
    """(encoding, decoded bytes, token) for base64 (4 alignments) and hex (2) runs."""
    seen: set[bytes] = set()
    for pattern, name in ((patterns.base64, "base64"), (patterns.base64url, "base64url")):
        for match in pattern.finditer(text):
            token = match.group().rstrip(b"=")
            if token in seen:
                continue
            seen.add(token)
            if name == "base64url":
                if b"-" not in token and b"_" not in token:
                    continue  # plain alphanumerics: decoded as base64 already
                data = token.translate(_URLSAFE)
            else:
                data = token
            for start in range(4):  # the encoded data may begin at any character
                chunk = data[start:]
                rest = len(chunk) % 4
                if rest == 1:
                    chunk = chunk[:-1]
                elif rest:
                    chunk += b"=" * (4 - rest)  # a final partial group still decodes
                if len(chunk) * 3 // 4 < k:
                    break
                try:
                    yield name, binascii.a2b_base64(chunk), token
                except binascii.Error:
                    continue
    seen.clear()
    for match in patterns.hex.finditer(text):
        token = match.group()
        if token in seen:
            continue
        seen.add(token)
        for start in (0, 1):
            chunk = token[start:]
            chunk = chunk[: len(chunk) - len(chunk) % 2]
            if len(chunk) // 2 >= k:
                yield "hex", binascii.unhexlify(chunk), token
