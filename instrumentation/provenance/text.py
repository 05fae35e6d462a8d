"""The text provenance compares: a result as the model reads it, and the string values of a
call's arguments. Both are taken as UTF-8 bytes (lone surrogates kept, ``surrogatepass``), so
a byte count here means the same thing in the agent and in the importer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

_UTF8: Final = "utf-8"
_ERRORS: Final = "surrogatepass"


def encode(text: str) -> bytes:
    """UTF-8 bytes of ``text``; a lone surrogate (an escape cut from its pair) is kept."""
    return text.encode(_UTF8, _ERRORS)


def result_text(content: Any, structured: Any = None) -> bytes:
    """The bytes of a tool result that the model reads and could copy.

    ``content``: a string, bytes, a list of content blocks (Anthropic dicts or MCP SDK objects:
    text blocks and embedded text resources are kept, joined by ``\\n``; images, audio, blobs
    and links are skipped: nobody copies a key out of a picture), or any JSON value (compact
    JSON). When the blocks give no text, ``structured`` (an MCP result's structured content)
    is used as compact JSON, as :func:`toolwatch.record.result_size` does for sizes.
    """
    data = _content_text(content)
    if not data and structured is not None:
        data = _compact_json(structured)
    return data


def _content_text(content: Any) -> bytes:
    if content is None:
        return b""
    if isinstance(content, bytes):
        return content
    if isinstance(content, str):
        return encode(content)
    if isinstance(content, list | tuple):
        parts = [text for block in content if (text := _block_text(block)) is not None]
        return encode("\n".join(parts))
    if isinstance(content, Mapping):
        return _compact_json(content)
    return encode(str(content))


def _block_text(block: Any) -> str | None:
    if isinstance(block, str):
        return block
    # only the attributes a block's type uses are read: a pydantic block raises inside
    # getattr for one it lacks (an image's text), which costs more than the rest
    mapping = isinstance(block, Mapping)
    kind = block.get("type") if mapping else getattr(block, "type", None)
    if kind == "text":
        text = block.get("text") if mapping else getattr(block, "text", None)
        return "" if text is None else str(text)
    if kind == "resource":
        resource = block.get("resource") if mapping else getattr(block, "resource", None)
        inner = (
            resource.get("text")
            if isinstance(resource, Mapping)
            else getattr(resource, "text", None)
        )
        return inner if isinstance(inner, str) else None
    return None


def _compact_json(value: Any) -> bytes:
    return encode(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def string_leaves(value: Any) -> Iterator[str]:
    """Every string *value* of a JSON-like value (keys and numbers are structure), in document
    order; iterative, so a deeply nested argument cannot exhaust the stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)  # the exact JSON types first: an ABC check is a Python-level call
        if kind is str:
            yield item
        elif kind is dict:
            stack.extend(reversed(list(item.values())))
        elif kind is list:
            stack.extend(reversed(item))
        elif kind is int or kind is float or kind is bool or item is None:
            continue
        elif isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))


#: Claude Code's Read output: ``     1→text`` (2.x) or ``     1\ttext`` (``cat -n``).
_LINE_NUMBER: Final = re.compile(rb"^ *\d+(?:\xe2\x86\x92|\t)", re.M)


def strip_line_numbers(data: bytes) -> bytes:
    """``data`` without ``cat -n`` line prefixes when at least 80 % of its lines have them
    (a file read that way, then copied, matches as one run instead of line by line)."""
    if len(data) < 8 or not _LINE_NUMBER.match(data):
        return data
    lines = data.count(b"\n") + 1
    stripped, hits = _LINE_NUMBER.subn(b"", data)
    return stripped if hits * 5 >= lines * 4 else data
