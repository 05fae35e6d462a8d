"""The shared byte basis (``record.arguments_size`` / ``record.result_size``) on text that is not
valid UTF-8, what it refuses (values that are not JSON), and ``fit_string``: a string as a
record's field can hold it."""

from __future__ import annotations

from typing import Any

import pytest

from toolwatch.record import (
    MAX_STRING_BYTES,
    TRUNCATION_MARK,
    arguments_size,
    compact_json_size,
    fit_string,
    result_size,
    utf8_size,
)


def test_a_lone_surrogate_counts_as_a_replacement_character() -> None:
    # a file name decoded with surrogateescape, or a \ud83d escape cut from its pair: sized as
    # a UTF-8 writer emits it (U+FFFD, 3 bytes), never an error
    assert utf8_size("a\udcffb") == utf8_size("a\ufffdb") == 5
    assert utf8_size("\ud83d\ude00") == 6  # two code points in a str: two replacements
    assert arguments_size({"text": "\udcff"}) == arguments_size({"text": "\ufffd"}) == 14
    assert result_size("x\ud800") == 4
    assert result_size([{"type": "text", "text": "\ud800"}]) == 3
    assert result_size([{"type": "resource_link", "uri": "file:///\udcff"}]) == 11
    assert result_size([], {"k": "\udfff"}) == compact_json_size({"k": "\ufffd"}) == 11


def _deep(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def test_arguments_that_are_not_json_have_no_size() -> None:
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(TypeError):
        arguments_size({(1, 2): 1})  # type: ignore[dict-item]
    with pytest.raises((RecursionError, ValueError)):
        arguments_size({"v": _deep(5000)})
    with pytest.raises((RecursionError, ValueError)):
        arguments_size(circular)


def test_fit_string_keeps_what_a_record_can_hold_and_marks_a_cut() -> None:
    assert fit_string("a" * MAX_STRING_BYTES) == "a" * MAX_STRING_BYTES  # at the limit: kept
    cut = fit_string("a" * (MAX_STRING_BYTES + 1))
    assert cut == "a" * (MAX_STRING_BYTES - len(TRUNCATION_MARK)) + TRUNCATION_MARK
    assert len(cut) == MAX_STRING_BYTES
    wide = fit_string("€" * 2000)  # 6,000 bytes of 3-byte characters
    assert wide.endswith(TRUNCATION_MARK) and len(wide.encode()) <= MAX_STRING_BYTES
    assert wide[: -len(TRUNCATION_MARK)] == "€" * ((MAX_STRING_BYTES - 14) // 3)
    assert fit_string("ok\udcff") == "ok\ufffd"  # valid UTF-8, as utf8_size counts it
    assert fit_string("\ud800" * 2000) == "\ufffd" * 1360 + TRUNCATION_MARK
    assert fit_string("naïve") == "naïve"


def test_a_tool_with_a_lone_surrogate_has_a_digest_of_its_own() -> None:
    """A description holding a lone surrogate (a JSON escape a server may send) raised
    UnicodeEncodeError, and the whole listing lost its events."""
    from toolwatch.record import tool_digest

    digests = {tool_digest("t", text, {}) for text in ("a\ud800", "a\ud801", "a\ufffd", "a")}
    assert len(digests) == 4
    assert tool_digest("t", "plain", {"x": 1}) == tool_digest("t", "plain", {"x": 1})
