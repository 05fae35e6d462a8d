"""Protobuf wire reading of OTLP trace requests, column-wise: the collector's fast path.

Walking a parsed ``ExportTraceServiceRequest`` object by object costs ~30 µs per span in
Python (each attribute access creates a wrapper), too slow for 150 k spans/s. Here protobuf
itself (in C) cuts the request into span byte strings; the compiled walks of
:mod:`toolwatch.collector.otlp.wire_kernels` read every span's fields and key/values into
arrays; the wanted keys are then found and the columns built with numpy, a few steps per
group of requests whatever its size. Reads of ids go through an unaligned 64-bit view of
the buffer, so 8 bytes cost one gather.

The walks refuse everything that is not well-formed protobuf (:class:`WireError`: the caller
then maps the whole request with the reference path), and a span whose fields cannot be read
with certainty (a known field with an unexpected wire type, a repeated attribute, a field
given twice, a oneof set twice, a value kind the fast path does not convert) is flagged in
:attr:`WireSpans.odd` for the reference path. The request has already been validated by a
full protobuf parse before this runs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from toolwatch.collector.otlp.wire_kernels import (
    ERRORS,
    KEY_MUL1,
    KEY_MUL2,
    LEN,
    any_values,
    fields,
    gather,
    key_index,
    key_values,
    span_columns,
    status_codes,
)

ANY_STRING, ANY_BOOL, ANY_INT, ANY_DOUBLE = 1, 2, 3, 4
_PAD = bytes(16)


class WireError(ValueError):
    """The bytes are not in a shape the fast path reads; map the request the slow way."""


class Buf:
    """A byte buffer with an unaligned little-endian 64-bit word readable at every offset."""

    def __init__(self, data: bytes) -> None:
        """``data`` ends with :data:`_PAD`: reads of up to 16 bytes past the end stay in
        bounds (and read zeros)."""
        self.size = len(data) - len(_PAD)
        self.data = data
        self.u8 = np.frombuffer(self.data, dtype=np.uint8)
        self.u64 = np.ndarray(
            shape=(self.size + 8,), dtype="<u8", buffer=self.data, offset=0, strides=(1,)
        )

    def words(self, pos: np.ndarray) -> np.ndarray:
        """The 8 bytes at each position as a little-endian uint64."""
        return self.u64[np.minimum(pos, self.size)]


# --------------------------------------------------------------------------- primitives


def binary_array(buf: Buf, pos: np.ndarray, length: np.ndarray) -> pa.Array:
    """The byte ranges ``buf[pos:pos+length]`` as one Arrow binary array (one copy)."""
    offsets, data = gather(buf.u8, pos, length)
    return pa.Array.from_buffers(
        pa.binary(), pos.size, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
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
    data: np.ndarray  # the keys' bytes, one after the other
    start: np.ndarray  # where each key starts in ``data``
    length: np.ndarray


@functools.lru_cache(maxsize=8)
def _key_table(keys: tuple[str, ...]) -> _KeyTable:
    raws = [k.encode() for k in keys]
    words = [_key_words(r) for r in raws]
    first = np.array([w[0] for w in words], dtype=np.uint64)
    last = np.array([w[1] for w in words], dtype=np.uint64)
    length = np.array([len(r) for r in raws], dtype=np.int64)
    sig = (first * KEY_MUL1) ^ (last * KEY_MUL2) ^ length.astype(np.uint64)
    modulus = next(m for m in range(max(len(keys), 1), 1 << 20) if len(set(sig % m)) == len(keys))
    slots = np.full(modulus, -1, np.int64)
    slots[(sig % np.uint64(modulus)).astype(np.int64)] = np.arange(len(keys))
    data = np.frombuffer(b"".join(raws) + _PAD, np.uint8)
    start = np.concatenate([[0], np.cumsum(length)[:-1]]).astype(np.int64)
    return _KeyTable(np.uint64(modulus), slots, data, start, length)


def match_keys(buf: Buf, pos: np.ndarray, length: np.ndarray, keys: Sequence[str]) -> np.ndarray:
    """Index in ``keys`` of each byte range (-1 when it is none of them).

    Each range is reduced to (first 8 bytes, last 8 bytes, length), looked up through a
    64-bit signature, then compared byte for byte.
    """
    if not keys or not pos.size:
        return np.full(pos.size, -1, np.int64)
    t = _key_table(tuple(keys))
    return key_index(buf.u8, pos, length, t.slots, t.modulus, t.data, t.start, t.length)


# --------------------------------------------------------------------------- request layout

#: ``ExportTraceServiceRequest.resource_spans``, ``ResourceSpans.scope_spans``,
#: ``ScopeSpans.spans``: the field numbers from a request down to its spans.
_LAYOUT = (1, 2, 2)


def span_ranges(buf: Buf, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(start, end, per_scope)``: where every span of the requests ``buf[bounds[i]:bounds[i +
    1]]`` lies, in order, and the number of spans of each scope (in order)."""
    starts, ends = bounds[:-1], bounds[1:]
    for level, number in enumerate(_LAYOUT):
        # room for a few fields per message, and for a span every 64 bytes at the last level
        room = 4 * starts.size + (int((ends - starts).sum()) // 64 if level == 2 else 0)
        owner, numbers, wire, payload, value = _fields(buf, starts, ends, room)
        children = np.flatnonzero((numbers == number) & (wire == LEN))  # others are unknown
        scopes = starts.size
        starts = payload[children]
        ends = starts + value[children].astype(np.int64)
    per_scope = np.bincount(owner[children], minlength=scopes)
    return starts, ends, per_scope


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
    #: every attribute key/value, (span, key position, key length, value position, value
    #: length), for a later look-up of more keys
    kvs: tuple[np.ndarray, ...]
    attrs: dict[str, WireAttr]


def scan_spans(bodies: Sequence[bytes], keys: Sequence[str]) -> WireSpans:
    """Read ids, times, kind, status and the attributes named in ``keys`` of every span.

    Several request bodies are scanned as one (their spans in order, scopes numbered across
    them, in the order a full parse lists them), so the per-call costs of the column steps
    that follow are paid once per group.
    """
    buf = Buf(b"".join([*bodies, _PAD]))
    bounds = np.concatenate([[0], np.cumsum([len(body) for body in bodies])]).astype(np.int64)
    start, end, per_scope = span_ranges(buf, bounds)
    n = start.size
    tokens = _fields(buf, start, end, _SPAN_FIELDS * n)
    owner = tokens[0]
    (trace_pos, trace_len, span_pos, span_len, kind, start_ns, end_ns, has_events, odd,
     at_status, at_kv) = span_columns(n, *tokens)  # fmt: skip
    status, odd_status = status_codes(
        n, owner[at_status], *_inner(buf, tokens, at_status, _STATUS_FIELDS)
    )
    key_pos, key_len, val_pos, val_len, odd_kv = key_values(
        at_kv.size, *_inner(buf, tokens, at_kv, _KV_FIELDS)
    )
    kv_span = owner[at_kv]
    odd |= odd_status
    odd[kv_span[odd_kv]] = True
    ws = WireSpans(
        buf=buf,
        n=n,
        scope=np.repeat(np.arange(len(per_scope), dtype=np.int64), per_scope),
        trace_pos=trace_pos,
        trace_len=trace_len,
        span_pos=span_pos,
        span_len=span_len,
        start_ns=start_ns,
        end_ns=end_ns,
        status=status,
        kind=kind,
        has_events=has_events,
        odd=odd,
        kvs=(kv_span, key_pos, key_len, val_pos, val_len),
        attrs={},
    )
    _scan_attributes(ws, ws.kvs, keys)
    return ws


#: Fields per message made room for at first: a span (an SDK span has ~20 with its
#: attributes), a status (message, code), a key/value (key, value), an AnyValue (one value).
_SPAN_FIELDS, _STATUS_FIELDS, _KV_FIELDS, _VALUE_FIELDS = 24, 2, 2, 1


def _fields(buf: Buf, starts: np.ndarray, ends: np.ndarray, room: int) -> tuple[np.ndarray, ...]:
    """The field tokens of the messages ``buf[starts[i]:ends[i]]``, with room for ``room`` at
    first (see ``wire_kernels.fields``)."""
    err, *tokens = fields(buf.u8, starts, ends, room)
    if err:
        raise WireError(ERRORS[err])
    return tuple(tokens)


def _inner(
    buf: Buf, tokens: tuple[np.ndarray, ...], at: np.ndarray, per_message: int
) -> tuple[np.ndarray, ...]:
    """The field tokens of the messages that tokens ``at`` hold (LEN fields)."""
    start = tokens[3][at]
    return _fields(buf, start, start + tokens[4][at].astype(np.int64), per_message * at.size)


def scan_more_keys(ws: WireSpans, keys: Sequence[str], spans: np.ndarray) -> None:
    """Read the attributes ``keys`` of the spans selected by the bool mask ``spans`` too
    (``ws.attrs[key]`` then holds their occurrences in those spans only)."""
    kv_span = ws.kvs[0]
    sel = np.flatnonzero(spans[kv_span]) if kv_span.size else np.zeros(0, np.int64)
    _scan_attributes(ws, tuple(column[sel] for column in ws.kvs), keys)


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


def _scan_attributes(ws: WireSpans, kvs: tuple[np.ndarray, ...], keys: Sequence[str]) -> None:
    """Find the wanted keys among the key/values ``(span, key position, key length, value
    position, value length)``, then read their values."""
    span, key_pos, key_len, val_pos, val_len = kvs
    buf = ws.buf
    which = match_keys(buf, key_pos, key_len, keys)
    known = np.flatnonzero(which >= 0)
    key_of = which[known]
    combo = span[known] * len(keys) + key_of
    repeated = np.flatnonzero(np.bincount(combo, minlength=ws.n * len(keys)) > 1)
    if repeated.size:  # a repeated key: the last one wins, as a dict would have it
        ws.odd[repeated // len(keys)] = True
    start = val_pos[known]
    kind, a_pos, a_len, a_num, odd = any_values(
        known.size, *_fields(buf, start, start + val_len[known], _VALUE_FIELDS * known.size)
    )
    ws.odd[span[known[odd]]] = True
    order = np.argsort(key_of.astype(np.int16), kind="stable")  # radix sort
    bounds = np.searchsorted(key_of[order], np.arange(len(keys) + 1))
    for i, key in enumerate(keys):
        sel = order[bounds[i] : bounds[i + 1]]
        ws.attrs[key] = WireAttr(
            span=span[known[sel]], kind=kind[sel], pos=a_pos[sel], length=a_len[sel], num=a_num[sel]
        )
