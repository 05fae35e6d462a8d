"""Span → record mapping: the columnar protobuf path gives exactly what the reference mapping
gives, for well-formed and for odd requests (random ones, and hand-crafted wire bytes with
repeated fields), and the OTLP/JSON parser reads what OTLP/JSON allows.
"""

from __future__ import annotations

import gzip
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from support.collector import T0, SpanSpec, call, json_request, pb_request, pb_span
from toolwatch.collector.otlp.columnar import map_parsed, map_protobuf
from toolwatch.collector.otlp.decode import (
    OtlpError,
    decode_json,
    gunzip_bounded,
    iter_protobuf_spans,
    parse_protobuf,
)
from toolwatch.collector.otlp.mapping import (
    CALL_ATTRIBUTES,
    CALL_INTRINSICS,
    CALL_PLAN,
    TOOL_LIST_INTRINSICS,
    TOOL_LIST_PLAN,
    Mapped,
    map_spans,
)
from toolwatch.conventions import (
    ATTR_ARGUMENTS_SIZE,
    ATTR_CONVERSATION_ID,
    ATTR_DURATION_UNKNOWN,
    ATTR_ERROR_TYPE,
    ATTR_MCP_METHOD,
    ATTR_MCP_SESSION_ID,
    ATTR_SERVICE_NAME,
    ATTR_SESSION_ID,
    ATTR_SOURCE,
    ATTR_TOOL_DIGEST,
    ATTR_TOOL_NAME,
    EVENT_TOOL_LISTED,
    SOURCES,
)
from toolwatch.record import CALL_FIELDS, TOOL_LIST_FIELDS


def _reference(body: bytes) -> Mapped:
    return map_spans(iter_protobuf_spans(parse_protobuf(body)))


def _assert_same(fast: Mapped, ref: Mapped) -> None:
    assert fast.calls.schema == ref.calls.schema
    assert fast.calls.to_pylist() == ref.calls.to_pylist()
    assert fast.tool_lists.to_pylist() == ref.tool_lists.to_pylist()
    assert (fast.spans, fast.rejected, fast.ignored) == (ref.spans, ref.rejected, ref.ignored)
    assert fast.reasons == ref.reasons
    assert fast.flagged_by == ref.flagged_by


def test_plan_covers_every_record_field() -> None:
    assert [p.name for p in CALL_PLAN] == [f.name for f in CALL_FIELDS]
    assert {f.name for f in CALL_FIELDS if f.attribute is None} == CALL_INTRINSICS
    assert [p.name for p in TOOL_LIST_PLAN] == [f.name for f in TOOL_LIST_FIELDS]
    assert {f.name for f in TOOL_LIST_FIELDS if f.attribute is None} == TOOL_LIST_INTRINSICS
    assert set(CALL_ATTRIBUTES) == {f.attribute for f in CALL_FIELDS if f.attribute}


# --------------------------------------------------------------------------- random requests

_KIND = {key: p.kind for p in CALL_PLAN for key in p.keys}
#: the session key's fallbacks (read when a span and its resource have no conversation id)
_FALLBACKS = tuple(key for p in CALL_PLAN for key in p.fallbacks)
_odd_value = st.one_of(
    st.none(),  # an empty AnyValue
    st.text(max_size=6),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.integers(0, 3), max_size=2),
    st.sampled_from(["", "12", *SOURCES]),
)


def _good_value(attribute: str) -> st.SearchStrategy[Any]:
    kind = _KIND[attribute]
    if attribute == ATTR_SOURCE:
        return st.sampled_from(SOURCES)
    if kind == "string":
        return st.text(alphabet="abcé_-/ 0", min_size=1, max_size=8)
    if kind == "bool":
        return st.booleans()
    top = 2**31 - 1 if kind == "int32" else 2**62
    return st.one_of(st.integers(0, 300), st.integers(0, top))


_REQUIRED = (ATTR_ARGUMENTS_SIZE, ATTR_TOOL_NAME)


def _clean(session_key: str) -> st.SearchStrategy[dict[str, Any]]:
    """Clean toolwatch-shaped attributes whose session comes from ``session_key`` (the other
    session keys optional: precedence)."""
    return st.fixed_dictionaries(
        {a: _good_value(a) for a in (*_REQUIRED, session_key)},
        optional={
            **{
                a: _good_value(a)
                for a in (*CALL_ATTRIBUTES, *_FALLBACKS)
                if a not in (*_REQUIRED, session_key)
            },
            ATTR_DURATION_UNKNOWN: st.booleans(),
        },
    )


_clean_attributes = st.one_of(_clean(ATTR_CONVERSATION_ID), *(_clean(k) for k in _FALLBACKS))
_messy_attributes = st.fixed_dictionaries(
    {},
    optional={
        **{a: st.one_of(_good_value(a), _odd_value) for a in (*CALL_ATTRIBUTES, *_FALLBACKS)},
        ATTR_DURATION_UNKNOWN: st.one_of(st.booleans(), _odd_value),
        "gen_ai.operation.name": st.sampled_from(["execute_tool", "chat", "execute_tooL", ""]),
        "mcp.method.name": st.one_of(st.sampled_from(["tools/call", "tools/list"]), _odd_value),
    },
)
#: semantic-conventions tool spans (no toolwatch marker): sizes absent, kinds of every sort;
#: the session in gen_ai.conversation.id, session.id or mcp.session.id (or in none)
_semconv_attributes = st.fixed_dictionaries(
    {"gen_ai.operation.name": st.just("execute_tool")},
    optional={
        **{
            a: st.one_of(_good_value(a), _good_value(a), _odd_value)
            for a in (*CALL_ATTRIBUTES, *_FALLBACKS)
            if a != ATTR_ARGUMENTS_SIZE
        },
        "mcp.method.name": st.just("tools/call"),
    },
)
#: MCP-conventions client spans, well-formed: the session in any of its three keys, in several
#: (precedence, also against the resource's) or in none (rejected)
_mcp_client_attributes = st.fixed_dictionaries(
    {ATTR_MCP_METHOD: st.just("tools/call"), ATTR_TOOL_NAME: _good_value(ATTR_TOOL_NAME)},
    optional={a: _good_value(a) for a in (ATTR_CONVERSATION_ID, *_FALLBACKS, ATTR_ERROR_TYPE)},
)
#: half the spans are clean (the columnar path maps them), half are not (the reference does)
_attributes = st.one_of(
    _clean_attributes, _messy_attributes, _semconv_attributes, _mcp_client_attributes
)


@st.composite
def _span(draw: st.DrawFn) -> SpanSpec:
    start = draw(st.sampled_from([T0, T0 + 7_123_456, 0, 2**63 + 5]))
    end = draw(st.sampled_from([start + 1_500_000, start, max(start - 1000, 0), 0]))
    trace = draw(st.sampled_from(["random", "random", "random", "empty", "zero", "short"]))
    trace_id = {"empty": b"", "zero": bytes(16), "short": b"\x01" * 15}.get(trace)
    events = []
    if draw(st.integers(0, 5)) == 0:
        for i in range(draw(st.integers(1, 3))):
            ev = {ATTR_TOOL_NAME: f"t{i}", ATTR_TOOL_DIGEST: "ab" * 32}
            if draw(st.integers(0, 4)) == 0:
                del ev[draw(st.sampled_from(sorted(ev)))]
            events.append((draw(st.sampled_from([EVENT_TOOL_LISTED, "exception"])), T0, ev))
    spec = SpanSpec(
        draw(_attributes),
        start_ns=start,
        end_ns=end,
        status=draw(st.sampled_from([0, 0, 1, 2, 7])),
        events=events,
        kind=draw(st.sampled_from([3, 3, 3, 0, 1, 2, 4, 5, 9])),
    )
    if trace_id is not None:
        spec.trace_id = trace_id
        spec.span_id = b"" if trace == "empty" else spec.span_id
    return spec


_resource = st.dictionaries(
    st.sampled_from(
        [ATTR_SERVICE_NAME, ATTR_SOURCE, ATTR_CONVERSATION_ID, *_FALLBACKS, "host.name"]
    ),
    st.one_of(st.text(max_size=5), st.integers(-3, 3), st.sampled_from(SOURCES), st.just("key")),
    max_size=3,
)
_scopes = st.lists(
    st.tuples(
        st.sampled_from(["toolwatch", "toolwatch", "mcp-python-sdk", "other.lib"]),
        st.lists(_span(), max_size=6),
    ),
    min_size=1,
    max_size=2,
)
_groups = st.lists(st.tuples(_resource, _scopes), min_size=1, max_size=2)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=_groups)
def test_columnar_path_equals_reference_on_random_requests(groups: Any) -> None:
    body = pb_request(groups=groups)
    fast = map_protobuf(body)
    _assert_same(fast, _reference(body))
    share = fast.columnar / max(1, fast.calls.num_rows)
    event(f"share of rows mapped column-wise: {round(share, 1)}")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests=st.lists(_groups, min_size=2, max_size=3))
def test_requests_mapped_together_equal_each_alone(requests: Any) -> None:
    bodies = [pb_request(groups=g) for g in requests]
    together = map_parsed([(b, parse_protobuf(b)) for b in bodies])
    assert len(together) == len(bodies)
    for fast, body in zip(together, bodies, strict=True):
        _assert_same(fast, _reference(body))


def test_large_clean_request_takes_the_columnar_path_for_every_span() -> None:
    specs = [SpanSpec(call(f"tool{i % 7}", input_bytes=i, seq=i)) for i in range(3000)]
    body = pb_request(specs)
    fast = map_protobuf(body)
    _assert_same(fast, _reference(body))
    assert fast.calls.num_rows == 3000 and fast.calls.column("seq").to_pylist() == list(range(3000))
    assert fast.columnar == 3000  # no span needed the one-by-one path


# --------------------------------------------------------------------------- crafted wire bytes


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (tag + varint length + payload)."""
    out = bytearray([(number << 3) | 2])
    n = len(payload)
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + payload


def _request_of_raw_spans(*spans: bytes) -> bytes:
    scope = _field(1, _field(1, b"toolwatch")) + b"".join(_field(2, s) for s in spans)
    resource = _field(1, _field(1, _field(1, b"service.name") + _field(2, _field(1, b"svc"))))
    return _field(1, resource + _field(2, scope))


def _span_bytes(attrs: dict[str, Any], **kw: Any) -> bytes:
    return pb_span(SpanSpec(attrs, **kw)).SerializeToString()


@pytest.mark.parametrize(
    "extra",
    [
        # the same attribute twice: the last one wins
        lambda: _span_bytes({ATTR_TOOL_NAME: "Second"}, trace_id=b"\x02" * 16),
        # an error.type given only in the second half: merged in
        lambda: _span_bytes({ATTR_ERROR_TYPE: "timeout"}, status=2),
        # a status message given twice: messages merge
        lambda: pb_span(SpanSpec({}, status=1)).SerializeToString(),
        # nothing: a plain span
        lambda: b"",
    ],
)
def test_repeated_fields_follow_protobuf_merge_semantics(extra: Any) -> None:
    first = _span_bytes(call("First", seq=3), status=2)
    body = _request_of_raw_spans(first + extra(), _span_bytes(call("Other", seq=4)))
    fast = map_protobuf(body)
    _assert_same(fast, _reference(body))
    assert fast.calls.num_rows == 2
    assert fast.columnar == (2 if not extra() else 1)  # a merged span goes one by one


def test_an_anyvalue_with_two_values_takes_the_last() -> None:
    tool_kv = _field(1, ATTR_TOOL_NAME.encode()) + _field(2, _field(1, b"A") + _field(1, b"B"))
    span = _span_bytes(call(seq=1)) + _field(9, tool_kv)
    body = _request_of_raw_spans(span)
    fast = map_protobuf(body)
    _assert_same(fast, _reference(body))
    assert fast.calls.column("tool").to_pylist() == ["B"]


def test_an_unknown_group_in_a_semconv_value_falls_back_to_the_reference() -> None:
    """Found by a review: protobuf skips an unknown group (wire type 3/4) inside an AnyValue,
    the fast path refuses it — and did so only after the point where it falls back, when it
    read the semantic-conventions keys of a span without toolwatch's marker: a valid request
    got 400 and its valid calls were lost."""
    odd = bytes.fromhex("0a1b121912174a150a0f6d63702e6d6574686f642e6e616d6512020b0c")
    parse_protobuf(odd)  # valid protobuf
    spans = _field(1, _field(2, _field(2, _span_bytes(call("Good", seq=1)))))
    body = spans + odd  # a toolwatch call and the odd span, in one request
    fast = map_protobuf(body)
    _assert_same(fast, _reference(body))
    assert fast.calls.column("tool").to_pylist() == ["Good"]
    together = map_parsed([(body, parse_protobuf(body)), (spans, parse_protobuf(spans))])
    _assert_same(together[0], _reference(body))
    _assert_same(together[1], _reference(spans))


def test_the_unknown_duration_marker_gives_null_on_both_paths() -> None:
    """A replayed record without a duration arrives as end = start plus the marker."""
    specs = [
        SpanSpec(call(seq=0, **{ATTR_DURATION_UNKNOWN: True}), end_ns=T0),
        SpanSpec(call(seq=1, **{ATTR_DURATION_UNKNOWN: False}), end_ns=T0),
        SpanSpec(call(seq=2, **{ATTR_DURATION_UNKNOWN: "true"}), end_ns=T0 + 3_000),
        SpanSpec(call(seq=3), end_ns=T0),  # a real zero duration stays 0
    ]
    body = pb_request(specs)
    fast = map_protobuf(body)
    _assert_same(fast, _reference(body))
    assert fast.columnar == 4  # the marker needs no detour through the reference mapping
    assert fast.calls.column("duration_us").to_pylist() == [None, 0, 3, 0]


def test_a_span_ending_before_it_starts_is_kept_and_flagged_on_every_path() -> None:
    """The call happened (a wall-clock step mid-call gives end < start) and dropping it would
    reorder its stream: it is stored with a null duration, as is a span with no end time, and
    both are counted by flaw and named in a warning; the columnar, reference and JSON paths
    agree, and the columnar path maps them itself."""
    specs = [
        SpanSpec(call(seq=0), end_ns=T0 - 1),  # ends 1 ns before it starts
        SpanSpec(call(seq=1), end_ns=0),
        SpanSpec(call(seq=2), end_ns=T0 + 3_000),
        SpanSpec(call(seq=3), end_ns=T0 - 5_000_000),
    ]
    body = pb_request(specs)
    fast = map_protobuf(body)
    _assert_same(fast, _reference(body))
    assert fast.columnar == 4
    via_json = map_spans(decode_json(json_request(specs)))
    for mapped in (fast, via_json):
        assert mapped.calls.column("seq").to_pylist() == [0, 1, 2, 3]
        assert mapped.calls.column("duration_us").to_pylist() == [None, None, 3, None]
        assert mapped.rejected == 0 and mapped.rejected_by == {}
        assert mapped.flagged_by == {"end_before_start": 2, "no_end_time": 1}
        assert mapped.message() == (
            "2 spans end before they start: stored without a duration (did the sender's "
            "clock step back during the call?); 1 span has no end time: stored without a "
            "duration (end each span before exporting it)"
        )


def test_json_times_past_the_protobuf_range_are_flagged_too() -> None:
    """OTLP/JSON may carry times past 2**64 ns (year 2554, still before 9999): the flaw is
    decided on Python integers, not 64-bit arrays, so such a span is kept and flagged."""
    late = 2**64 + 10_000
    specs = [SpanSpec(call(seq=0), start_ns=late, end_ns=late - 1), SpanSpec(call(seq=1))]
    mapped = map_spans(decode_json(json_request(specs)))
    assert mapped.calls.column("duration_us").to_pylist() == [None, 2500]
    assert (mapped.rejected, mapped.flagged_by) == (0, {"end_before_start": 1})


def test_a_flagged_warning_follows_the_rejections_of_its_request() -> None:
    """A request with both: rejected_spans counts the rejected only, the message names both."""
    bad = SpanSpec(call(seq=0, **{ATTR_TOOL_NAME: ""}))
    specs = [bad, SpanSpec(call(seq=1), end_ns=T0 - 1)]
    body = pb_request(specs)
    fast = map_protobuf(body)
    _assert_same(fast, _reference(body))
    assert (fast.rejected, fast.flagged_by) == (1, {"end_before_start": 1})
    assert fast.message() == (
        f"rejected 1 span: span {bad.span_id.hex()}: attribute gen_ai.tool.name (tool) is "
        "empty; 1 span ends before it starts: stored without a duration (did the sender's "
        "clock step back during the call?)"
    )


def test_malformed_protobuf_raises_400() -> None:
    good = pb_request([SpanSpec(call())])
    for body in (good[:-3], b"\x0a\x05abc", b"\xff\xff\xff"):
        with pytest.raises(OtlpError) as err:
            map_protobuf(body)
        assert err.value.status == 400


# --------------------------------------------------------------------------- OTLP/JSON


def _json_doc(span: dict[str, Any], resource: list[Any] | None = None) -> bytes:
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": resource or []},
                    "scopeSpans": [{"scope": {"name": "toolwatch"}, "spans": [span]}],
                    "unknownField": {"ignored": True},
                }
            ]
        }
    ).encode()


def test_json_values_in_every_allowed_form() -> None:
    span = {
        "traceId": "0AF7651916CD43DD8448EB211C80319C",  # upper case is still hex
        "spanId": "B7AD6B7169203331",
        "startTimeUnixNano": 1786000000000000000,  # a number is accepted too
        "endTimeUnixNano": "1786000000002000000",
        "status": {"code": "STATUS_CODE_ERROR"},
        "attributes": [
            {"key": ATTR_TOOL_NAME, "value": {"stringValue": "Read"}},
            {"key": ATTR_CONVERSATION_ID, "value": {"stringValue": "s1"}},
            {"key": ATTR_ARGUMENTS_SIZE, "value": {"intValue": 42}},
            {"key": "toolwatch.tool.call.result.size", "value": {"intValue": "9000000000"}},
            {"key": "ratio", "value": {"doubleValue": "NaN"}},
            {"key": "blob", "value": {"bytesValue": "AAEC"}},
            {"key": "list", "value": {"arrayValue": {"values": [{"intValue": "1"}]}}},
            {"key": "map", "value": {"kvlistValue": {"values": [{"key": "k", "value": {}}]}}},
        ],
    }
    (decoded,) = decode_json(_json_doc(span, [{"key": "service.name", "value": {"x": 1}}]))
    assert decoded.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert decoded.status_code == 2
    assert decoded.attributes[ATTR_ARGUMENTS_SIZE] == 42
    assert decoded.attributes["toolwatch.tool.call.result.size"] == 9_000_000_000
    assert math.isnan(decoded.attributes["ratio"])
    assert decoded.attributes["blob"] == b"\x00\x01\x02"
    assert decoded.attributes["list"] == [1] and decoded.attributes["map"] == {"k": None}
    assert decoded.resource == {"service.name": None}  # unknown value kinds are ignored
    (row,) = map_spans([decoded]).calls.to_pylist()
    assert (row["failed"], row["input_bytes"], row["duration_us"]) == (True, 42, 2000)


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": {}}]}]}]}, "attributes"),
        ({"resourceSpans": [{"scopeSpans": [{"scope": {"name": 5}}]}]}, "scope.name"),
        (
            {"resourceSpans": [{"scopeSpans": [{"spans": [{"events": [{"name": 1}]}]}]}]},
            "events[0].name",
        ),
        (
            {
                "resourceSpans": [
                    {"resource": {"attributes": [{"key": "a", "value": {"intValue": "x"}}]}}
                ]
            },
            "resource.attributes[0].value.intValue",
        ),
        ([], "request must be an object"),
    ],
)
def test_json_shape_errors_name_the_field(doc: Any, where: str) -> None:
    with pytest.raises(OtlpError) as err:
        decode_json(json.dumps(doc).encode())
    assert err.value.status == 400 and where in err.value.message


def test_gunzip_bounded() -> None:
    data = b"abc" * 1000
    assert gunzip_bounded(gzip.compress(data), len(data)) == data
    assert gunzip_bounded(gzip.compress(data) + gzip.compress(b"!"), 10_000) == data + b"!"
    with pytest.raises(OtlpError) as err:
        gunzip_bounded(gzip.compress(data), len(data) - 1)
    assert err.value.status == 413
    with pytest.raises(OtlpError) as err:
        gunzip_bounded(gzip.compress(data)[:-12], 10_000)
    assert err.value.status == 400


# --------------------------------------------------------------------------- the session key


def test_the_session_key_falls_back_column_wise_as_the_reference_does() -> None:
    """gen_ai.conversation.id, else session.id, else mcp.session.id, each on the span and
    then on its resource; the fallbacks are mapped column-wise and named in fields_present."""
    conv, sid, mcp = ATTR_CONVERSATION_ID, ATTR_SESSION_ID, ATTR_MCP_SESSION_ID

    def spec(keys: dict[str, str]) -> SpanSpec:
        attrs = {k: v for k, v in call(seq=1).items() if k != conv}
        return SpanSpec({**attrs, **keys})

    plain = [
        SpanSpec(call(session="c1", **{sid: "s", mcp: "m"})),  # the conversation first
        spec({sid: "s2", mcp: "m"}),  # then session.id
        spec({mcp: "m3"}),  # then mcp.session.id
    ]
    with_resource_session = [spec({mcp: "m"}), spec({sid: "s5"})]
    body = pb_request(
        groups=[
            ({ATTR_SERVICE_NAME: "svc"}, [("other", plain)]),
            ({sid: "r4", mcp: "rm"}, [("other", with_resource_session)]),
        ]
    )
    fast = map_protobuf(body)
    _assert_same(fast, _reference(body))
    assert fast.columnar == 5  # no detour through the reference mapping
    assert fast.calls.column("session_id").to_pylist() == ["c1", "s2", "m3", "r4", "s5"]
    keys = [
        next(t for t in text.split(",") if t.startswith("session_id"))
        for text in fast.calls.column("fields_present").to_pylist()
    ]
    assert keys == [
        "session_id",
        "session_id:session.id",
        "session_id:mcp.session.id",
        "session_id:session.id",  # the resource's session.id comes before the span's MCP session
        "session_id:session.id",
    ]


_SESSION_KEYS = (ATTR_CONVERSATION_ID, *_FALLBACKS)
#: a session key's value: good, empty, a number (a string field takes it), an empty AnyValue
_session_keys = st.dictionaries(
    st.sampled_from(_SESSION_KEYS),
    st.one_of(st.sampled_from(["a", "b", "key"]), st.just(""), st.integers(0, 3), st.none()),
    max_size=3,
)


@st.composite
def _session_groups(draw: st.DrawFn) -> list[Any]:
    """Well-formed MCP client spans (the columnar path's to map) keyed by any subset of the
    session keys, on the span and on the resource, beside toolwatch's own spans."""
    groups = []
    for _ in range(draw(st.integers(1, 2))):
        specs = []
        for i in range(draw(st.integers(1, 4))):
            if draw(st.integers(0, 3)) == 0:
                specs.append(SpanSpec(call(seq=i)))
                continue
            keys = draw(_session_keys)
            attrs = {ATTR_MCP_METHOD: "tools/call", ATTR_TOOL_NAME: f"t{i}", **keys}
            specs.append(SpanSpec(attrs, kind=draw(st.sampled_from([3, 0, 1]))))
        groups.append((draw(_session_keys), [("other", specs)]))
    return groups


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=_session_groups())
def test_session_keys_map_column_wise_as_the_reference_does(groups: Any) -> None:
    body = pb_request(groups=groups)
    _assert_same(map_protobuf(body), _reference(body))
