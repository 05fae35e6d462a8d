"""Vectorised protobuf wire scanning of OTLP trace requests: the collector's fast path.

Walking a parsed ``ExportTraceServiceRequest`` object by object costs ~30 µs per span in
Python (each attribute access creates a wrapper), too slow for 50 k spans/s. Here the bytes
are scanned instead, *all spans at once*: step k reads the k-th field of every span with numpy
(one step per field index, ~20 steps for a request of any size), then the same for attribute
key/values and their values. Only the three outer levels (request → resource spans → scope
spans → span boundaries) are walked in Python, a few operations per span. Reads go through an
unaligned 64-bit view of the buffer, so a varint, a fixed64 or 8 bytes of a key cost one gather.

The scanner understands exactly the shapes the fast path needs and refuses everything else:
a structural surprise raises :class:`WireError` (the caller then maps the whole request with
the reference path), and a span whose fields it cannot read with certainty (a known field with
an unexpected wire type, a repeated attribute, a field given twice, a oneof set twice, a value
kind the fast path does not convert) is flagged in :attr:`WireSpans.odd` for the reference
path. The request has already been validated by a full protobuf parse before this runs.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

# wire types
VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
#: Expected wire type of each field of ``opentelemetry.proto.trace.v1.Span`` (index = number).
_SPAN_WIRE = np.array([-1, 2, 2, 2, 2, 2, 0, 1, 1, 2, 0, 2, 0, 2, 0, 2, 5], dtype=np.int64)
#: ... of ``common.v1.AnyValue`` (string, bool, int, double, array, kvlist, bytes, strindex).
_ANY_WIRE = np.array([-1, 2, 0, 0, 1, 2, 2, 2, 0], dtype=np.int64)
ANY_STRING, ANY_BOOL, ANY_INT, ANY_DOUBLE = 1, 2, 3, 4
_PAD = bytes(16)
_BYTE = np.arange(10, dtype=np.int64)
_SHIFT = (np.arange(10, dtype=np.uint64) * np.uint64(7)).astype(np.uint64)


class WireError(ValueError):
    """The bytes are not in a shape the fast path reads; map the request the slow way."""


class Buf:
    """A byte buffer with an unaligned little-endian 64-bit word readable at every offset."""

    def __init__(self, data: bytes, *, padded: bool = False) -> None:
        # reads of up to 16 bytes past the end stay in bounds (and read zeros)
        self.size = len(data) - len(_PAD) if padded else len(data)
        self.data = data if padded else data + _PAD
        self.u8 = np.frombuffer(self.data, dtype=np.uint8)
        self.u64 = np.ndarray(
            shape=(self.size + 8,), dtype="<u8", buffer=self.data, offset=0, strides=(1,)
        )

    def words(self, pos: np.ndarray) -> np.ndarray:
        """The 8 bytes at each position as a little-endian uint64."""
        return self.u64[np.minimum(pos, self.size)]

    def bytes_at(self, pos: np.ndarray) -> np.ndarray:
        """The byte at each position (int64; padding past the end reads as 0)."""
        return self.u8[np.minimum(pos, self.size + 15)].astype(np.int64)


# --------------------------------------------------------------------------- primitives


def varints(buf: Buf, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode one varint at each position: (values as uint64, position after each).

    A position past the end reads padding; callers check the result against the enclosing
    message's end, which such a read always overruns.
    """
    w = buf.words(pos)
    one = (w & 0x80) == 0
    if one.all():
        return w & 0x7F, pos + 1
    two = ~one & ((w & 0x8000) == 0)
    value = np.where(one, w & 0x7F, (w & 0x7F) | ((w >> 1) & 0x3F80))
    after = pos + np.where(one, 1, 2)
    rest = np.flatnonzero(~one & ~two)
    if rest.size:  # three bytes or more: byte by byte
        raw = buf.u8[np.minimum(pos[rest, None] + _BYTE, buf.size + 15)]
        cont = raw >= 0x80
        if cont.all(axis=1).any():
            raise WireError("varint longer than 10 bytes")
        length = np.argmin(cont, axis=1) + 1
        parts = (raw & 0x7F).astype(np.uint64) << _SHIFT
        parts[length[:, None] <= _BYTE] = 0
        value[rest] = np.bitwise_or.reduce(parts, axis=1)
        after[rest] = pos[rest] + length
    return value, after


_WIRE_OK = np.array([True, True, True, False, False, True, False, False])
_STEP = np.array([2, 9, 2, 0, 0, 5, 0, 0], dtype=np.int64)  # field size, one-byte tag/length
_PAYLOAD = np.array([1, 1, 2, 0, 0, 1, 0, 0], dtype=np.int64)  # payload offset, likewise


def scan(
    buf: Buf, starts: np.ndarray, ends: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Walk the fields of many messages in lock-step.

    Yields, per step, ``(message index, field number, wire type, payload position, value)``
    for the k-th field of every message that has one; ``value`` is the varint for VARINT, the
    payload length for LEN and the 64-bit word for FIXED64 fields. Field order is preserved.
    """
    pos = starts.astype(np.int64, copy=True)
    active = np.flatnonzero(pos < ends)
    while active.size:
        p = pos[active]
        end = ends[active]
        step = _step_simple(buf, p) or _step_general(buf, p, end)
        number, wire, payload, value, nxt = step
        if (nxt > end).any():
            raise WireError("field overruns its message")
        yield active, number, wire, payload, value
        pos[active] = nxt
        active = active[nxt < end]


_Step = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _step_simple(buf: Buf, p: np.ndarray) -> _Step | None:
    """One field per message when every tag is one byte and every varint/length too."""
    w = buf.words(p)
    tag = (w & 0xFF).astype(np.int64)
    b1 = ((w >> 8) & 0xFF).astype(np.int64)
    wire = tag & 7
    if (tag >= 0x80).any() or ((b1 >= 0x80) & ((wire == VARINT) | (wire == LEN))).any():
        return None
    if not _WIRE_OK[wire].all() or (tag < 8).any():
        raise WireError("unsupported wire type or field number 0")
    is_len = wire == LEN
    nxt = p + _STEP[wire] + np.where(is_len, b1, 0)
    value = b1.astype(np.uint64)
    is_64 = np.flatnonzero(wire == FIXED64)
    if is_64.size:
        value[is_64] = buf.words(p[is_64] + 1)
    return tag >> 3, wire, p + _PAYLOAD[wire], value, nxt


def _step_general(buf: Buf, p: np.ndarray, end: np.ndarray) -> _Step:
    tag, p = varints(buf, p)
    wire = (tag & 7).astype(np.int64)
    number = (tag >> 3).astype(np.int64)
    is_var = wire == VARINT
    is_len = wire == LEN
    is_64 = wire == FIXED64
    if not _WIRE_OK[wire].all() or (number == 0).any():
        raise WireError("unsupported wire type or field number 0")
    value = np.zeros(p.size, np.uint64)
    after = p.copy()
    vl = np.flatnonzero(is_var | is_len)
    if vl.size:
        value[vl], after[vl] = varints(buf, p[vl])
    nxt = np.where(is_var, after, p + np.where(is_64, 8, 4))
    payload = p
    if is_len.any():
        room = end - after
        if ((room < 0) & is_len).any() or (is_len & (value > np.maximum(room, 0))).any():
            raise WireError("length-delimited field overruns its message")
        payload = np.where(is_len, after, p)
        nxt = np.where(is_len, after + value.astype(np.int64), nxt)
    if is_64.any():
        value = np.where(is_64, buf.words(p), value)
    return number, wire, payload, value, nxt


def binary_array(buf: Buf, pos: np.ndarray, length: np.ndarray) -> pa.Array:
    """The byte ranges ``buf[pos:pos+length]`` as one Arrow binary array (one copy)."""
    n = pos.size
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(length, out=offsets[1:])
    total = int(offsets[-1])
    index = np.repeat(pos - offsets[:-1], length) + np.arange(total, dtype=np.int64)
    data = buf.u8[index]
    return pa.Array.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    )


def hex_array(buf: Buf, pos: np.ndarray, width: int) -> pa.Array:
    """Byte ranges of ``width`` (a multiple of 8) as lowercase hex strings (trace/span ids)."""
    n = pos.size
    words = np.empty((n, width // 8), "<u8")
    for i in range(width // 8):
        words[:, i] = buf.words(pos + 8 * i)
    text = words.tobytes().hex().encode("ascii")
    offsets = np.arange(n + 1, dtype=np.int32) * (2 * width)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(text)])


def all_zero(buf: Buf, pos: np.ndarray, width: int) -> np.ndarray:
    out = np.ones(pos.size, bool)
    for i in range(width // 8):
        out &= buf.words(pos + 8 * i) == 0
    return out


_LOW_BYTES = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [2**64 - 1], dtype=np.uint64)
_MUL1 = np.uint64(0x9E3779B97F4A7C15)
_MUL2 = np.uint64(0xC2B2AE3D27D4EB4F)
_MASK64 = 2**64 - 1


def _key_words(raw: bytes) -> tuple[int, int]:
    """(first 8 bytes, last 8 bytes) of a key as little-endian ints (short keys: zero-padded)."""
    first = int.from_bytes(raw[:8], "little")
    last = int.from_bytes(raw[-8:], "little") if len(raw) > 8 else 0
    return first, last


@dataclass(frozen=True, slots=True)
class _KeyTable:
    """Wanted keys by signature: ``slots[sig % modulus]`` is a key index (or -1)."""

    modulus: np.uint64
    slots: np.ndarray
    first: np.ndarray
    last: np.ndarray
    length: np.ndarray
    long_keys: tuple[tuple[int, tuple[tuple[int, int], ...]], ...]  # (key, ((offset, word), ...))


@functools.lru_cache(maxsize=8)
def _key_table(keys: tuple[str, ...]) -> _KeyTable:
    raws = [k.encode() for k in keys]
    words = [_key_words(r) for r in raws]
    first = np.array([w[0] for w in words], dtype=np.uint64)
    last = np.array([w[1] for w in words], dtype=np.uint64)
    length = np.array([len(r) for r in raws], dtype=np.int64)
    sig = (first * _MUL1) ^ (last * _MUL2) ^ length.astype(np.uint64)
    modulus = next(m for m in range(max(len(keys), 1), 1 << 20) if len(set(sig % m)) == len(keys))
    slots = np.full(modulus, -1, np.int64)
    slots[(sig % np.uint64(modulus)).astype(np.int64)] = np.arange(len(keys))
    long_keys = tuple(
        (i, tuple((o, int.from_bytes(r[o : o + 8], "little")) for o in range(8, len(r) - 8, 8)))
        for i, r in enumerate(raws)
        if len(r) > 16
    )
    return _KeyTable(np.uint64(modulus), slots, first, last, length, long_keys)


def match_keys(buf: Buf, pos: np.ndarray, length: np.ndarray, keys: Sequence[str]) -> np.ndarray:
    """Index in ``keys`` of each byte range (-1 when it is none of them).

    Each range is reduced to (first 8 bytes, last 8 bytes, length), looked up through a
    64-bit signature, then compared exactly (middle words too for keys over 16 bytes).
    """
    if not keys or not pos.size:
        return np.full(pos.size, -1, np.int64)
    first = buf.words(pos)
    last = buf.words(np.maximum(pos + length - 8, 0))
    short = np.flatnonzero(length < 8)
    if short.size:
        first[short] &= _LOW_BYTES[length[short]]
    last[length <= 8] = 0
    sig = (first * _MUL1) ^ (last * _MUL2) ^ length.astype(np.uint64)
    table = _key_table(tuple(keys))
    which = table.slots[(sig % table.modulus).astype(np.int64)]
    hits = np.flatnonzero(which >= 0)
    k = which[hits]
    ok = (
        (first[hits] == table.first[k])
        & (last[hits] == table.last[k])
        & (length[hits] == table.length[k])
    )
    if table.long_keys:  # the middle words of long keys, key by key over sorted slices
        by_key = np.argsort(k.astype(np.int16), kind="stable")
        bounds = np.searchsorted(k[by_key], np.arange(len(keys) + 1))
        sorted_pos = pos[hits[by_key]]
        sorted_ok = ok[by_key]
        for i, middle in table.long_keys:
            lo, hi = bounds[i], bounds[i + 1]
            for off, word in middle:
                sorted_ok[lo:hi] &= buf.words(sorted_pos[lo:hi] + off) == word
        ok[by_key] = sorted_ok
    which[hits[~ok]] = -1
    return which


# --------------------------------------------------------------------------- request layout


@functools.cache
def _lite_request() -> Any:
    """A message class wire-compatible with ``ExportTraceServiceRequest`` down to the spans,
    which it keeps as raw bytes: protobuf itself cuts the spans out (in C), untouched.

    Built at first use from a descriptor made here (no generated code, no global pool).
    """
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    t = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(
        name="toolwatch/otlp_lite.proto", package="toolwatch.lite", syntax="proto3"
    )
    # (message, its one repeated field, field number, element message or None for raw bytes);
    # numbers as in ExportTraceServiceRequest → ResourceSpans → ScopeSpans → spans
    layout = (
        ("ScopeSpans", "spans", 2, None),
        ("ResourceSpans", "scope_spans", 2, "ScopeSpans"),
        ("Request", "resource_spans", 1, "ResourceSpans"),
    )
    for message, field_name, number, element in layout:
        field = fd.message_type.add(name=message).field.add(
            name=field_name, number=number, label=t.LABEL_REPEATED, type=t.TYPE_BYTES
        )
        if element is not None:  # a proto2 field: setting type_name at all makes it a message
            field.type, field.type_name = t.TYPE_MESSAGE, f".toolwatch.lite.{element}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("toolwatch.lite.Request"))


def split_spans(bodies: Sequence[bytes]) -> tuple[list[bytes], list[int]]:
    """Every span's bytes, in order, and the number of spans of each scope (in order)."""
    lite = _lite_request()
    spans: list[bytes] = []
    per_scope: list[int] = []
    for body in bodies:
        try:
            request = lite.FromString(body)
        except Exception as exc:  # DecodeError; the full parse accepted it, so unexpected
            raise WireError(f"lite parse failed: {exc}") from exc
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                these = list(ss.spans)
                spans += these
                per_scope.append(len(these))
    return spans, per_scope


# --------------------------------------------------------------------------- spans


@dataclass(slots=True)
class WireAttr:
    """Every occurrence of one attribute key: which span, the AnyValue kind and payload."""

    span: np.ndarray  # span index
    kind: np.ndarray  # AnyValue field number; 0 = empty value
    pos: np.ndarray  # payload position (string/bytes kinds)
    length: np.ndarray  # payload length
    num: np.ndarray  # varint or fixed64 payload (uint64)


@dataclass(slots=True)
class WireSpans:
    """Columns of every span of one or more requests, read straight from the wire."""

    buf: Buf
    n: int
    scope: np.ndarray  # scope number of each span
    trace_pos: np.ndarray
    trace_len: np.ndarray
    span_pos: np.ndarray
    span_len: np.ndarray
    start_ns: np.ndarray  # uint64
    end_ns: np.ndarray  # uint64
    status: np.ndarray  # int64 status code
    kind: np.ndarray  # int64 span kind (0 when absent)
    has_events: np.ndarray
    odd: np.ndarray  # the fast path must leave these spans to the reference mapping
    attrs: dict[str, WireAttr]
    #: every attribute key/value: (span, start, length), for a later look-up of more keys
    kvs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def scan_spans(bodies: Sequence[bytes], keys: Sequence[str]) -> WireSpans:
    """Read ids, times, kind, status and the attributes named in ``keys`` of every span.

    Several request bodies are scanned as one (their spans in order, scopes numbered across
    them, in the order a full parse lists them): numpy's per-call overhead dominates at 1,000
    spans, so batching requests that arrived together makes each step cheaper per span.
    """
    spans, per_scope = split_spans(bodies)
    n = len(spans)
    lengths = np.fromiter(map(len, spans), np.int64, n)
    end = np.cumsum(lengths)
    start = end - lengths
    spans.append(_PAD)
    buf = Buf(b"".join(spans), padded=True)
    scope = np.repeat(np.arange(len(per_scope), dtype=np.int64), per_scope)
    zeros = np.zeros(n, np.int64)
    ws = WireSpans(
        buf=buf,
        n=n,
        scope=scope,
        trace_pos=zeros.copy(),
        trace_len=zeros.copy(),
        span_pos=zeros.copy(),
        span_len=zeros.copy(),
        start_ns=np.zeros(n, np.uint64),
        end_ns=np.zeros(n, np.uint64),
        status=zeros.copy(),
        kind=zeros.copy(),
        has_events=np.zeros(n, bool),
        odd=np.zeros(n, bool),
        attrs={},
    )
    steps = list(scan(buf, start, end))
    if steps:
        owner, number, wire, payload, value = (np.concatenate(c) for c in zip(*steps, strict=True))
    else:
        owner = number = wire = payload = np.zeros(0, np.int64)
        value = np.zeros(0, np.uint64)
    expected = np.where(number < _SPAN_WIRE.size, _SPAN_WIRE[np.minimum(number, 16)], -1)
    mismatch = (expected >= 0) & (expected != wire)
    ws.odd[owner[mismatch]] = True
    # One entry per field and span, so the assignments below never collide; a field given
    # twice (the last one wins for scalars, messages merge) is left to the reference path.
    for field_no in (1, 2, 6, 7, 8, 15):
        m = np.flatnonzero((number == field_no) & ~mismatch)
        if not m.size:
            continue
        at = owner[m]
        ws.odd |= np.bincount(at, minlength=n) > 1
        if field_no == 1:
            ws.trace_pos[at], ws.trace_len[at] = payload[m], value[m].astype(np.int64)
        elif field_no == 2:
            ws.span_pos[at], ws.span_len[at] = payload[m], value[m].astype(np.int64)
        elif field_no == 6:
            ws.kind[at] = value[m].view(np.int64)
        elif field_no == 7:
            ws.start_ns[at] = value[m]
        elif field_no == 8:
            ws.end_ns[at] = value[m]
        else:
            ws.status[at] = _status_codes(ws, at, payload[m], value[m].astype(np.int64))
    ws.has_events[owner[(number == 11) & ~mismatch]] = True
    m = np.flatnonzero((number == 9) & ~mismatch)
    ws.kvs = (owner[m], payload[m], value[m].astype(np.int64))
    _scan_attributes(ws, *ws.kvs, keys)
    return ws


def scan_more_keys(ws: WireSpans, keys: Sequence[str], spans: np.ndarray) -> None:
    """Read the attributes ``keys`` of the spans selected by the bool mask ``spans`` too
    (``ws.attrs[key]`` then holds their occurrences in those spans only)."""
    assert ws.kvs is not None
    kv_span, kv_start, kv_len = ws.kvs
    sel = np.flatnonzero(spans[kv_span]) if kv_span.size else np.zeros(0, np.int64)
    _scan_attributes(ws, kv_span[sel], kv_start[sel], kv_len[sel], keys)


def equals_text(buf: Buf, attr: WireAttr, text: str, n: int) -> np.ndarray:
    """Spans (of ``n``) whose occurrence of ``attr`` is the string ``text`` (≤ 16 bytes),
    compared word-wise (no copy of the values)."""
    raw = text.encode()
    if len(raw) > 16:
        raise ValueError("equals_text compares strings of at most 16 bytes")
    out = np.zeros(n, bool)
    sel = np.flatnonzero((attr.kind == ANY_STRING) & (attr.length == len(raw)))
    if not sel.size:
        return out
    first_want, last_want = _key_words(raw)
    pos = attr.pos[sel]
    first = buf.words(pos)
    if len(raw) < 8:
        first &= _LOW_BYTES[len(raw)]
    same = first == np.uint64(first_want)
    if len(raw) > 8:
        same &= buf.words(pos + len(raw) - 8) == np.uint64(last_want)
    out[attr.span[sel[same]]] = True
    return out


def _status_codes(ws: WireSpans, at: np.ndarray, pos: np.ndarray, length: np.ndarray) -> np.ndarray:
    """``Status.code`` of each status message (0 when absent)."""
    codes = np.zeros(at.size, np.int64)
    for active, number, wire, _, value in scan(ws.buf, pos, pos + length):
        code = number == 3
        ws.odd[at[active[code & (wire != VARINT)]]] = True
        m = code & (wire == VARINT)
        codes[active[m]] = value[m].view(np.int64)
    return codes


def _scan_attributes(
    ws: WireSpans, span: np.ndarray, kv_start: np.ndarray, kv_len: np.ndarray, keys: Sequence[str]
) -> None:
    """Find the wanted keys among all key/values, then read their values."""
    buf = ws.buf
    kv_end = kv_start + kv_len
    # The usual key/value: 0x0A <key length> key 0x12 <value length> value, lengths < 128.
    key_len = buf.bytes_at(kv_start + 1)
    value_tag = kv_start + 2 + key_len
    val_len = buf.bytes_at(value_tag + 1)
    usual = (
        (buf.bytes_at(kv_start) == 0x0A)
        & (key_len < 0x80)
        & (buf.bytes_at(value_tag) == 0x12)
        & (val_len < 0x80)
        & (value_tag + 2 + val_len == kv_end)
    )
    key_pos = kv_start + 2
    val_pos = value_tag + 2
    has_value = usual.copy()
    other = np.flatnonzero(~usual)
    if other.size:  # anything else, field by field
        key_pos[other] = key_len[other] = val_pos[other] = val_len[other] = 0
        count = np.zeros(other.size, np.int64)
        for active, number, wire, payload, value in scan(buf, kv_start[other], kv_end[other]):
            ws.odd[span[other[active[((number == 1) | (number == 2)) & (wire != LEN)]]]] = True
            for field_no, pos_out, len_out in ((1, key_pos, key_len), (2, val_pos, val_len)):
                m = (number == field_no) & (wire == LEN)
                pos_out[other[active[m]]] = payload[m]
                len_out[other[active[m]]] = value[m].astype(np.int64)
                if field_no == 2:
                    count[active[m]] += 1
        ws.odd[span[other[count > 1]]] = True  # a message field given twice merges: not ours
        has_value[other] = count == 1
    which = match_keys(buf, key_pos, key_len, keys)
    known = np.flatnonzero(which >= 0)
    combo = span[known] * len(keys) + which[known]
    repeated = np.flatnonzero(np.bincount(combo, minlength=ws.n * len(keys)) > 1)
    if repeated.size:  # a repeated key: the last one wins, as a dict would have it
        ws.odd[repeated // len(keys)] = True
    kind, a_pos, a_len, a_num = _any_values(
        ws, span[known], val_pos[known], np.where(has_value[known], val_len[known], 0)
    )
    order = np.argsort(which[known].astype(np.int16), kind="stable")  # radix sort
    bounds = np.searchsorted(which[known][order], np.arange(len(keys) + 1))
    for i, key in enumerate(keys):
        sel = order[bounds[i] : bounds[i + 1]]
        ws.attrs[key] = WireAttr(
            span=span[known[sel]], kind=kind[sel], pos=a_pos[sel], length=a_len[sel], num=a_num[sel]
        )


def _any_values(
    ws: WireSpans, span: np.ndarray, pos: np.ndarray, length: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(kind, payload position, payload length, number) of each ``AnyValue`` message."""
    buf = ws.buf
    end = pos + length
    tag = np.where(length > 0, buf.bytes_at(pos), 0)
    kind = np.zeros(pos.size, np.int64)  # 0: no value (an empty AnyValue)
    a_pos = pos + 2
    a_len = buf.bytes_at(pos + 1)
    a_num = np.zeros(pos.size, np.uint64)
    string = (tag == 0x0A) & (a_len < 0x80) & (pos + 2 + a_len == end)
    kind[string] = ANY_STRING
    varint = np.flatnonzero((tag == 0x10) | (tag == 0x18))
    if varint.size:
        number, after = varints(buf, pos[varint] + 1)
        fits = after == end[varint]
        kind[varint[fits]] = np.where(tag[varint[fits]] == 0x10, ANY_BOOL, ANY_INT)
        a_num[varint[fits]] = number[fits]
    double = (tag == 0x21) & (length == 9)
    kind[double] = ANY_DOUBLE
    a_num[double] = buf.words(pos[double] + 1)
    other = np.flatnonzero((kind == 0) & (length > 0))
    if other.size:  # long strings, other kinds, odd encodings: field by field
        count = np.zeros(other.size, np.int64)
        for active, number, wire, payload, value in scan(buf, pos[other], end[other]):
            idx = other[active]
            expected = np.where(number < _ANY_WIRE.size, _ANY_WIRE[np.minimum(number, 8)], -1)
            bad = expected != wire
            ws.odd[span[idx[bad]]] = True
            kind[idx] = np.where(bad, 0, number)
            a_pos[idx] = payload
            a_len[idx] = value.astype(np.int64)
            a_num[idx] = value
            count[active] += 1
        ws.odd[span[other[count > 1]]] = True  # a oneof set twice
    return kind, a_pos, a_len, a_num
