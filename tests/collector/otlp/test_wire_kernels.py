"""The compiled wire walks: every field of random messages read back exactly as encoded, with
or without room made in advance; malformed bytes refused with the error protobuf would raise;
a span with more fields than room was made for still maps column-wise, as the reference does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from support.collector import SpanSpec, call, pb_request
from toolwatch.collector.otlp.columnar import map_protobuf, warm_up
from toolwatch.collector.otlp.decode import iter_protobuf_spans, parse_protobuf
from toolwatch.collector.otlp.mapping import map_spans
from toolwatch.collector.otlp.wire_kernels import (
    ERR_LENGTH,
    ERR_OVERRUN,
    ERR_VARINT,
    ERR_WIRE,
    FIXED32,
    FIXED64,
    LEN,
    OK,
    VARINT,
    fields,
    gather,
)

PAD = bytes(16)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_fields = st.tuples(
    st.integers(1, 2**29 - 1),  # every field number protobuf allows
    st.sampled_from([VARINT, FIXED64, LEN, FIXED32]),
    st.integers(0, 2**64 - 1),
    st.binary(max_size=300),  # over 127 bytes: a two-byte length
)


def _encode(field: tuple[int, int, int, bytes]) -> tuple[bytes, int]:
    """A field's bytes and the value the walk should report for it."""
    number, wire, number_value, payload = field
    tag = _varint(number << 3 | wire)
    if wire == VARINT:
        return tag + _varint(number_value), number_value
    if wire == FIXED64:
        return tag + number_value.to_bytes(8, "little"), number_value
    if wire == FIXED32:
        return tag + (number_value & 0xFFFFFFFF).to_bytes(4, "little"), 0
    return tag + _varint(len(payload)) + payload, len(payload)


def _walk(messages: list[bytes], room: int) -> tuple[Any, ...]:
    data = b"".join(messages) + PAD
    ends = np.cumsum([len(m) for m in messages]).astype(np.int64)
    starts = ends - np.array([len(m) for m in messages], np.int64)
    return fields(np.frombuffer(data, np.uint8), starts, ends, room)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_fields, max_size=40), min_size=1, max_size=8), st.integers(0, 40))
def test_every_field_is_read_back_in_order_whatever_the_room(
    messages: list[list[tuple[int, int, int, bytes]]], room: int
) -> None:
    encoded = [[_encode(f) for f in message] for message in messages]
    bodies = [b"".join(raw for raw, _ in message) for message in encoded]
    err, owner, number, wire, payload, value = _walk(bodies, room)
    assert err == OK
    expected = [
        (m, f[0], f[1], v)
        for m, message in enumerate(messages)
        for f, (_, v) in zip(message, encoded[m], strict=True)
    ]
    got = list(zip(owner.tolist(), number.tolist(), wire.tolist(), value.tolist(), strict=True))
    assert got == expected
    data = b"".join(bodies)
    base = np.cumsum([0] + [len(b) for b in bodies])
    for (m, _, w, v), at, f in zip(
        expected, payload.tolist(), [f for message in messages for f in message], strict=True
    ):
        assert base[m] <= at <= base[m + 1]
        if w == LEN:
            assert data[at : at + v] == f[3]  # the payload position points at the payload


def test_a_message_larger_than_all_the_room_is_read_whole() -> None:
    """The first message alone has more fields than room was made for: room is made again
    (until it fits), the fields are neither lost nor read twice."""
    message = b"".join(_encode((1 + i % 5, VARINT, i, b""))[0] for i in range(100))
    err, owner, number, _, _, value = _walk([message, message[:20]], 0)
    assert err == OK
    assert value.tolist() == list(range(100)) + list(range(10))
    assert number.tolist() == [1 + i % 5 for i in range(100)] + [1 + i % 5 for i in range(10)]
    assert owner.tolist() == [0] * 100 + [1] * 10


def test_malformed_bytes_are_refused_as_protobuf_would() -> None:
    cases = {
        ERR_VARINT: b"\x08" + b"\xff" * 10 + b"\x01",  # a varint of 11 bytes
        ERR_WIRE: b"\x0b",  # wire type 3 (a group)
        ERR_LENGTH: b"\x0a\x05abc",  # a length past the end
        ERR_OVERRUN: b"\x09\x01\x02",  # a fixed64 cut short
    }
    for code, raw in cases.items():
        assert _walk([raw], 4)[0] == code, raw
    assert _walk([b"\x00\x01"], 4)[0] == ERR_WIRE  # field number 0
    # the message ends where its caller says: a field crossing into the next one is refused
    assert _walk([b"\x0a\x02a", b"b"], 4)[0] == ERR_LENGTH


def test_gather_copies_the_ranges_in_order() -> None:
    u8 = np.frombuffer(b"hello, world" + PAD, np.uint8)
    offsets, data = gather(u8, np.array([7, 0, 5], np.int64), np.array([5, 5, 0], np.int64))
    assert offsets.tolist() == [0, 5, 10, 10]
    assert data.tobytes() == b"worldhello"


def test_a_span_with_more_fields_than_room_made_maps_column_wise() -> None:
    """120 attributes per span: five times the fields made room for at first."""
    extra = {f"app.extra.{i}": f"value {i}" for i in range(120)}
    specs = [SpanSpec(call(f"tool{i}", seq=i) | extra) for i in range(50)]
    body = pb_request(specs)
    fast = map_protobuf(body)
    reference = map_spans(iter_protobuf_spans(parse_protobuf(body)))
    assert fast.calls.to_pylist() == reference.calls.to_pylist()
    assert fast.columnar == 50


def test_warm_up_loads_every_compiled_walk() -> None:
    from toolwatch.collector.otlp import wire_kernels

    warm_up()
    kernels = [
        getattr(wire_kernels, name)
        for name in (
            "_fill",
            "span_columns",
            "status_codes",
            "key_values",
            "any_values",
            "key_index",
            "gather",
        )
    ]
    assert all(kernel.signatures for kernel in kernels), [
        k.__name__ for k in kernels if not k.signatures
    ]
