"""The shared byte basis (``record.arguments_size`` / ``record.result_size``) on text that is not
valid UTF-8 and at any nesting depth, what it refuses (values that are not JSON), and
``fit_string``: a string as a record's field can hold it."""

from __future__ import annotations

import enum
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwatch.record import (
    MAX_STRING_BYTES,
    TRUNCATION_MARK,
    arguments_size,
    compact_json_size,
    fit_string,
    json_size,
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
    """A key of another type and a value containing itself still raise (the instrumentation
    then leaves the size off), on the encoder's path and the recursion-free one alike."""
    circular: dict[str, Any] = {}
    circular["self"] = circular
    inner: list[Any] = []
    through_tuple = {"t": (1, inner)}
    inner.append(through_tuple)
    for size in (arguments_size, json_size):
        with pytest.raises(TypeError, match="keys must be str, int, float, bool or None"):
            size({"ok": 1, "deep": [{(1, 2): 1}]})  # type: ignore[dict-item]
        with pytest.raises(ValueError, match="Circular reference"):
            size(circular)
        with pytest.raises(ValueError, match="Circular reference"):
            size(through_tuple)
    shared = [1, "é"]
    assert json_size({"a": shared, "b": shared}) == len('{"a":[1,"é"],"b":[1,"é"]}'.encode())


def test_nesting_past_the_recursion_limit_has_its_size() -> None:
    """The encoder raised RecursionError past ~1,000 levels, so the instrumentation left the
    size of a deeply nested argument off while the importer counted it; now both count it."""
    assert arguments_size({"v": _deep(5000)}) == len('{"v":}') + 2 * 5000 + 1
    value: Any = "x\ud800"
    for _ in range(5000):  # non-ASCII keys, floats, a lone surrogate at the bottom
        value = {"ключ": [1.5, value, None]}
    text = '{"ключ":[1.5,' * 5000 + '"x\ud800"' + ",null]}" * 5000
    expected = len(text.encode("utf-8", "surrogatepass"))
    assert compact_json_size(value) == json_size(value) == expected == 24 * 5000 + 6
    assert result_size([], value) == expected  # structured content: the same basis


_text = st.text()  # quotes, controls, non-ASCII, lone surrogates
_keys = _text | st.integers() | st.booleans() | st.none() | st.floats()
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**64, -(2**63) - 1])
    | st.floats()  # NaN and ±Infinity included: the encoder writes them as NaN / Infinity
    | st.sampled_from([1e-05, 1.5e-07, 1e16, 2.5e-300, -0.0])
    | _text
    | st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2),
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(_keys, children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_json_values)
def test_the_recursion_free_size_is_the_compact_encoding(value: Any) -> None:
    """json_size (any depth) and compact_json_size (the C encoder first) give the UTF-8 bytes
    of json.dumps's compact text, a lone surrogate counted as 3 bytes, for every JSON value."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    expected = len(text.encode("utf-8", "surrogatepass"))
    assert json_size(value) == compact_json_size(value) == expected


def test_values_of_other_types_are_sized_as_the_encoder_writes_them() -> None:
    """Subclasses by their base type's text (an IntEnum as its number), other objects as
    ``str(value)`` (the encoder's ``default=str``)."""

    class Level(enum.IntEnum):
        HIGH = 3

    class Name(str):
        __slots__ = ()

    class Ratio(float):
        def __repr__(self) -> str:
            return "Ratio!"

    when = datetime(2025, 1, 2, tzinfo=UTC)
    value = {Level.HIGH: [Level.HIGH, Name("n"), Ratio(0.5), when, {1, 2}], 2.5: ()}
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    assert text == '{"3":[3,"n",0.5,"2025-01-02 00:00:00+00:00","{1, 2}"],"2.5":[]}'
    assert json_size(value) == compact_json_size(value) == len(text)


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
