"""JSON and TOML text from outside (a user's file, an MCP server's response, a model's output)
parsed with one failure mode: the parser's own decode error.

Python's parsers raise :class:`RecursionError`, not their decode error, for a document nested
deeper than they can follow (``[[[[…`` a few thousand levels), so a caller that caught the decode
error (a ``ValueError``) let it through as a bug: a scenario, model or rules file said "unexpected
RecursionError", and a fault edit in the proxy failed on such a response. Here it is the decode
error like any other invalid document.

Only the standard library is imported: every install, the production one included, can use it.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any, Final

TOO_DEEP: Final = "nested too deeply to read"


def loads_json(text: str | bytes) -> Any:
    """``json.loads``; nesting too deep raises :class:`json.JSONDecodeError` (a ValueError)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(TOO_DEEP, text if isinstance(text, str) else "", 0) from None


_DECODER: Final = json.JSONDecoder()


def raw_decode_json(text: str, pos: int) -> tuple[Any, int]:
    """``JSONDecoder().raw_decode`` (one document of several, from ``pos``); nesting too deep
    raises :class:`json.JSONDecodeError` at ``pos``."""
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError:
        raise json.JSONDecodeError(TOO_DEEP, text, pos) from None


def loads_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads``; nesting too deep raises :class:`tomllib.TOMLDecodeError`."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError(TOO_DEEP) from None
