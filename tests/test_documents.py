"""Outside JSON and TOML parse with one failure mode, however deep the nesting."""

from __future__ import annotations

import json
import tomllib

import pytest

from toolwatch.documents import TOO_DEEP, loads_json, loads_toml, raw_decode_json

DEEP_JSON = "[" * 100_000 + "]" * 100_000


def test_json_nested_too_deeply_is_a_decode_error_not_a_recursion_error() -> None:
    with pytest.raises(RecursionError):
        json.loads(DEEP_JSON)  # what the standard parser does (the bug this module closes)
    for text in (DEEP_JSON, DEEP_JSON.encode()):
        with pytest.raises(json.JSONDecodeError) as caught:
            loads_json(text)
        assert caught.value.msg == TOO_DEEP and (caught.value.lineno, caught.value.colno) == (1, 1)
    with pytest.raises(json.JSONDecodeError, match=TOO_DEEP) as at:
        raw_decode_json('{"a": 1} ' + DEEP_JSON, 9)
    assert at.value.pos == 9


def test_documents_within_reach_parse_as_the_standard_parser_does() -> None:
    text = '{"a": [1, 2.5, "x", null, {"b": true}]}'
    assert loads_json(text) == json.loads(text) == loads_json(text.encode())
    assert raw_decode_json(text + " [3]", len(text) + 1) == ([3], len(text) + 4)
    with pytest.raises(json.JSONDecodeError, match="Expecting value"):  # as before
        loads_json("[1,")
    assert loads_toml('a = [[1], [2]]\n[t]\nb = "c"\n') == {"a": [[1], [2]], "t": {"b": "c"}}


def test_toml_nested_too_deeply_is_a_decode_error() -> None:
    deep = "a = " + "[" * 100_000 + "]" * 100_000
    with pytest.raises(RecursionError):
        tomllib.loads(deep)
    with pytest.raises(tomllib.TOMLDecodeError, match=TOO_DEEP):
        loads_toml(deep)
