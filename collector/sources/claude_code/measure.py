"""What a transcript line's JSON values measure: ids and names as clean text, the byte sizes of
arguments and results on the shared basis of :mod:`toolwatch.record`, and whether an output was
capped. Content is measured here and dropped by the caller; nothing of it is kept.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from toolwatch.record import arguments_size, json_size, result_size

try:  # 3x faster than the stdlib parser on transcript lines (benchmarks/bench_import.py)
    import orjson
except ImportError:  # pragma: no cover - orjson ships with the collector extra
    orjson = None  # type: ignore[assignment]
PERSISTED_OUTPUT_TAG: Final = "<persisted-output>"


def text_field(value: Any) -> str | None:
    """A non-empty string field, else None (absent, null, empty or of another type). A lone
    surrogate (an escape cut from its pair) becomes U+FFFD: ids and names are stored as UTF-8."""
    if type(value) is not str or not value:
        return None
    if value.isascii():  # O(1): the usual case
        return value
    return _LONE_SURROGATE.sub("\ufffd", value)


def load_line(raw: bytes) -> tuple[Any, bool]:
    """The parsed line, and whether orjson parsed it (then it holds no NaN/Infinity and no lone
    surrogate, but integers beyond 64 bits have become floats). The stdlib parses what orjson
    refuses; bytes that are not UTF-8 raise (an invalid line) — ``json.loads`` on bytes would
    let encoded surrogates through."""
    if orjson is not None:
        try:
            return orjson.loads(raw), True
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw.decode("utf-8-sig")), False


def input_size(value: Any, fast: bool) -> int:
    """:func:`arguments_size` of a parsed ``input``; ``fast`` (the value holds no float and was
    parsed by orjson) lets orjson measure it 5-15x faster, byte-identical then: compact
    separators, UTF-8 kept, the same escapes (floats are where the two differ: ``1e-05`` is
    ``0.00001`` there). Lone surrogates count as U+FFFD (3 bytes), and an input nested deeper
    than either encoder goes is counted without recursion, both by :mod:`toolwatch.record`."""
    if value is None:
        return 0
    if fast and orjson is not None:
        try:
            return len(orjson.dumps(value))
        except orjson.JSONEncodeError:  # nested deeper than orjson writes (254 levels)
            pass
    return arguments_size(value)


def has_float(value: Any) -> bool:
    """Whether a parsed JSON value holds a float anywhere (iterative: no recursion limit)."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is float:
            return True
        if kind is dict:
            extend(item.values())
        elif kind is list:
            extend(item)
    return False


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def result_content_size(content: Any) -> int:
    """Result bytes on the shared basis (:func:`result_size`: lone surrogates 3 bytes, any
    nesting depth); Anthropic image blocks mapped to the MCP shape first."""
    try:
        return _shaped_size(content)
    except RecursionError:  # a text or resource that is no string, too deep for str()
        blocks = content if isinstance(content, list) else [content]
        return sum(_block_size(block) for block in blocks)


def _block_size(block: Any) -> int:
    try:
        return _shaped_size([block])
    except RecursionError:  # counted as its compact JSON instead, at any depth
        return json_size(block)


def _shaped_size(content: Any) -> int:
    if content is None or isinstance(content, str):
        return result_size(content)
    if isinstance(content, list):
        return result_size([_mcp_shape(b) for b in content])
    return result_size([content] if isinstance(content, dict) else str(content))


def _mcp_shape(block: Any) -> Any:
    """An Anthropic ``{"type":"image","source":{"data":…}}`` block as MCP ``{"data":…}``."""
    if type(block) is dict and block.get("type") == "image" and "data" not in block:
        source = block.get("source")
        if isinstance(source, dict) and "data" in source:
            return {"type": "image", "data": source["data"]}
    return block


def is_capped(content: Any) -> bool:
    if isinstance(content, str):
        return content[:256].lstrip().startswith(PERSISTED_OUTPUT_TAG)
    if isinstance(content, list):
        return any(
            type(b) is dict
            and b.get("type") == "text"
            and type(text := b.get("text")) is str
            and text[:256].lstrip().startswith(PERSISTED_OUTPUT_TAG)
            for b in content
        )
    return False
