"""Compiled walks over the protobuf fields of OTLP spans (numba; the GIL is released).

Why compiled: walking fields is a loop over bytes whose every step depends on the last (a tag,
a varint length, the next tag), so numpy can only run it in lock-step over all spans, ~20
passes of gathers per request; that was two thirds of the collector's CPU per span. Here
:func:`fields` walks many messages once, in machine code, and lists every field as a token
(message, number, wire type, payload position, value); small loops over those tokens then
read spans (:func:`span_columns`), statuses, key/values and ``AnyValue`` messages. The GIL is
free meanwhile for the HTTP and writer threads.

Malformed bytes are refused exactly where a protobuf parser would refuse them (a varint over
10 bytes, wire type 3/4/6/7, field number 0, a field or length past its message's end) with an
error code (``ERRORS`` words it); what is well-formed but not in the shape the fast path maps
(a field with an unexpected wire type, a field given twice, a value set twice) is flagged
``odd`` for the reference mapping. Where a field repeats, the last one wins, as in protobuf.

Every read stays inside the message being walked, whose end the caller guarantees is inside
the buffer; the buffer carries 16 bytes of zero padding, so a varint starting before an end
never reads past the padding. (The kernels avoid calls and re-bound arrays in their hot loops:
numba pays reference counting for both, which made a first version five times slower.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
OK, ERR_VARINT, ERR_WIRE, ERR_LENGTH, ERR_OVERRUN = 0, 1, 2, 3, 4
ERRORS = (
    "",
    "varint longer than 10 bytes",
    "unsupported wire type or field number 0",
    "length-delimited field overruns its message",
    "field overruns its message",
)
#: Expected wire type of each field of ``opentelemetry.proto.trace.v1.Span`` (index = number).
SPAN_WIRE = np.array([-1, 2, 2, 2, 2, 2, 0, 1, 1, 2, 0, 2, 0, 2, 0, 2, 5], dtype=np.int64)
#: ... of ``common.v1.AnyValue`` (string, bool, int, double, array, kvlist, bytes, strindex).
ANY_WIRE = np.array([-1, 2, 0, 0, 1, 2, 2, 2, 0], dtype=np.int64)
#: Span fields the fast path reads and that must therefore appear at most once.
_SINGLE = np.isin(np.arange(SPAN_WIRE.size), (1, 2, 6, 7, 8, 15))

#: Multipliers of the key signature (first 8 bytes, last 8 bytes, length) of ``key_index``.
KEY_MUL1 = np.uint64(0x9E3779B97F4A7C15)
KEY_MUL2 = np.uint64(0xC2B2AE3D27D4EB4F)
_U7 = np.uint64(0x7F)
_ZERO = np.uint64(0)


@njit(cache=True, nogil=True)
def _varint(u8: Any, pos: int) -> tuple[Any, int, int]:
    """(value, position after it, error) of the varint at ``pos``."""
    byte = u8[pos]
    if byte < 0x80:  # the usual case: one byte
        return np.uint64(byte), pos + 1, OK
    value = np.uint64(byte) & _U7
    for i in range(1, 10):
        byte = u8[pos + i]
        value |= (np.uint64(byte) & _U7) << np.uint64(7 * i)
        if byte < 0x80:
            return value, pos + i + 1, OK
    return value, pos + 10, ERR_VARINT


@njit(cache=True, nogil=True)
def _fill(
    u8: Any, starts: Any, ends: Any, message: int, count: int, owner: Any, number: Any,
    wire: Any, payload: Any, value: Any,
) -> tuple[int, int, int]:  # fmt: skip
    """Tokens of messages ``message``, ... from index ``count`` on: (error, next message,
    tokens). Stops before a message whose tokens would not fit (the caller makes room)."""
    cap = owner.size
    nxt: Any  # (numba reads no annotation; for the type checker: numpy integers)
    for m in range(message, starts.size):
        pos = starts[m]
        end = ends[m]
        k = count
        while pos < end:
            if k == cap:
                return OK, m, count
            tag, pos, err = _varint(u8, pos)
            if err != OK:
                return err, m, count
            if pos > end:
                return ERR_OVERRUN, m, count
            w = np.int64(tag & np.uint64(7))
            num = np.int64(tag >> np.uint64(3))
            if num == 0 or (w > LEN and w != FIXED32):  # 3, 4 (groups), 6, 7: unknown
                return ERR_WIRE, m, count
            v = _ZERO
            at = pos
            if w == VARINT:
                v, nxt, err = _varint(u8, pos)
                if err != OK:
                    return err, m, count
            elif w == LEN:
                v, at, err = _varint(u8, pos)
                if err != OK:
                    return err, m, count
                if at > end or v > np.uint64(end - at):
                    return ERR_LENGTH, m, count
                nxt = at + np.int64(v)
            elif w == FIXED64:
                nxt = pos + 8
            else:
                nxt = pos + 4
            if nxt > end:
                return ERR_OVERRUN, m, count
            if w == FIXED64:
                for i in range(8):
                    v |= np.uint64(u8[pos + i]) << np.uint64(8 * i)
            owner[k] = m
            number[k] = num
            wire[k] = w
            payload[k] = at
            value[k] = v
            k += 1
            pos = nxt
        count = k
    return OK, starts.size, count


def fields(u8: np.ndarray, starts: np.ndarray, ends: np.ndarray, room: int) -> tuple[Any, ...]:
    """Every field of the messages ``u8[starts[i]:ends[i]]``, in order: ``(error, owner,
    number, wire, payload, value)``; ``value`` is the varint for VARINT, the payload length for
    LEN and the 64-bit word for FIXED64 fields (0 for FIXED32). Room for ``room`` fields is
    made at first, more when needed."""
    cap = room + 16
    arrays = [np.empty(cap, np.int64) for _ in range(4)] + [np.empty(cap, np.uint64)]
    message = count = 0
    while True:
        err, message, count = _fill(u8, starts, ends, message, count, *arrays)
        if err != OK or message == starts.size:
            return (err, *(a[:count] for a in arrays))
        arrays = [_doubled(a, count) for a in arrays]


def _doubled(array: np.ndarray, keep: int) -> np.ndarray:
    """``array`` with twice the room, its first ``keep`` entries kept."""
    out = np.empty(2 * array.size, array.dtype)
    out[:keep] = array[:keep]
    return out


@njit(cache=True, nogil=True)
def span_columns(
    n: int, owner: Any, number: Any, wire: Any, payload: Any, value: Any
) -> tuple[Any, ...]:
    """Read the tokens of ``n`` spans: ``(trace_pos, trace_len, span_pos, span_len, kind,
    start_ns, end_ns, has_events, odd, status tokens, key/value tokens)``: the status and
    key/value messages are read next (their token indices, in order)."""
    trace_pos = np.zeros(n, np.int64)
    trace_len = np.zeros(n, np.int64)
    span_pos = np.zeros(n, np.int64)
    span_len = np.zeros(n, np.int64)
    kind = np.zeros(n, np.int64)
    start_ns = np.zeros(n, np.uint64)
    end_ns = np.zeros(n, np.uint64)
    has_events = np.zeros(n, np.bool_)
    odd = np.zeros(n, np.bool_)
    seen = np.zeros((n, SPAN_WIRE.size), np.int64)
    kvs = np.zeros(owner.size, np.bool_)
    status = np.zeros(owner.size, np.bool_)
    for t in range(owner.size):
        s = owner[t]
        num = number[t]
        expected = SPAN_WIRE[num] if num < SPAN_WIRE.size else -1
        if expected >= 0 and expected != wire[t]:
            odd[s] = True
            continue
        if num >= SPAN_WIRE.size:
            continue
        seen[s, num] += 1
        if seen[s, num] > 1 and _SINGLE[num]:  # the last one wins for scalars, messages merge
            odd[s] = True
        if num == 1:
            trace_pos[s] = payload[t]
            trace_len[s] = np.int64(value[t])
        elif num == 2:
            span_pos[s] = payload[t]
            span_len[s] = np.int64(value[t])
        elif num == 6:
            kind[s] = np.int64(value[t])
        elif num == 7:
            start_ns[s] = value[t]
        elif num == 8:
            end_ns[s] = value[t]
        elif num == 15:
            status[t] = True
        elif num == 11:
            has_events[s] = True
        elif num == 9:
            kvs[t] = True
    return (trace_pos, trace_len, span_pos, span_len, kind, start_ns, end_ns, has_events, odd,
            np.flatnonzero(status), np.flatnonzero(kvs))  # fmt: skip


@njit(cache=True, nogil=True)
def status_codes(
    n: int, span_of: Any, owner: Any, number: Any, wire: Any, payload: Any, value: Any
) -> tuple[Any, Any]:
    """``Status.code`` of each of ``n`` spans (0 when absent; the last one wins) from the
    tokens of their status messages (message ``i`` belongs to span ``span_of[i]``), and
    whether it is odd (a code that is not a varint)."""
    codes = np.zeros(n, np.int64)
    odd = np.zeros(n, np.bool_)
    for t in range(owner.size):
        if number[t] == 3:
            s = span_of[owner[t]]
            if wire[t] == VARINT:
                codes[s] = np.int64(value[t])
            else:
                odd[s] = True
    return codes, odd


@njit(cache=True, nogil=True)
def key_values(
    m: int, owner: Any, number: Any, wire: Any, payload: Any, value: Any
) -> tuple[Any, ...]:
    """(key position, key length, value position, value length, odd) of ``m`` KeyValue
    messages; the value length is 0 unless exactly one value message is there."""
    key_pos = np.zeros(m, np.int64)
    key_len = np.zeros(m, np.int64)
    val_pos = np.zeros(m, np.int64)
    val_len = np.zeros(m, np.int64)
    values = np.zeros(m, np.int64)
    odd = np.zeros(m, np.bool_)
    for t in range(owner.size):
        i = owner[t]
        num = number[t]
        if num == 1 or num == 2:
            if wire[t] != LEN:
                odd[i] = True
            elif num == 1:
                key_pos[i] = payload[t]
                key_len[i] = np.int64(value[t])
            else:
                val_pos[i] = payload[t]
                val_len[i] = np.int64(value[t])
                values[i] += 1
    for i in range(m):
        if values[i] > 1:  # a message field given twice merges: not ours
            odd[i] = True
        if values[i] != 1:
            val_len[i] = 0
    return key_pos, key_len, val_pos, val_len, odd


@njit(cache=True, nogil=True)
def any_values(
    m: int, owner: Any, number: Any, wire: Any, payload: Any, value: Any
) -> tuple[Any, ...]:
    """``(kind, payload position, payload length, number, odd)`` of ``m`` ``AnyValue``
    messages; kind is the value's field number (0: no value, or a value of the wrong wire
    type), odd when a value is set twice or wrongly typed."""
    kind = np.zeros(m, np.int64)
    a_pos = np.zeros(m, np.int64)
    a_len = np.zeros(m, np.int64)
    a_num = np.zeros(m, np.uint64)
    count = np.zeros(m, np.int64)
    odd = np.zeros(m, np.bool_)
    for t in range(owner.size):
        i = owner[t]
        num = number[t]
        expected = ANY_WIRE[num] if num < ANY_WIRE.size else -1
        if expected != wire[t]:
            odd[i] = True
            kind[i] = 0
        else:
            kind[i] = num
        a_pos[i] = payload[t]
        a_len[i] = np.int64(value[t])
        a_num[i] = value[t]
        count[i] += 1
    for i in range(m):
        if count[i] > 1:  # a oneof set twice
            odd[i] = True
    return kind, a_pos, a_len, a_num, odd


@njit(cache=True, nogil=True)
def key_index(
    u8: Any, pos: Any, length: Any, slots: Any, modulus: Any, keys: Any, key_start: Any,
    key_len: Any,
) -> Any:  # fmt: skip
    """Index of each byte range ``u8[pos[i]:pos[i] + length[i]]`` among the keys (-1: none):
    the signature of (first 8 bytes, last 8 bytes, length) picks the one candidate
    (``slots[sig % modulus]``), which is then compared byte for byte."""
    which = np.full(pos.size, -1, np.int64)
    for i in range(pos.size):
        p = pos[i]
        n = length[i]
        first = _ZERO
        for j in range(min(n, 8)):
            first |= np.uint64(u8[p + j]) << np.uint64(8 * j)
        last = _ZERO
        if n > 8:
            for j in range(8):
                last |= np.uint64(u8[p + n - 8 + j]) << np.uint64(8 * j)
        sig = (first * KEY_MUL1) ^ (last * KEY_MUL2) ^ np.uint64(n)
        k = slots[np.int64(sig % modulus)]
        if k < 0 or key_len[k] != n:
            continue
        same = True
        for j in range(n):
            if u8[p + j] != keys[key_start[k] + j]:
                same = False
                break
        if same:
            which[i] = k
    return which


@njit(cache=True, nogil=True)
def gather(u8: Any, pos: Any, length: Any) -> tuple[Any, Any]:
    """The byte ranges ``u8[pos[i]:pos[i] + length[i]]`` one after the other, with the
    offsets of an Arrow binary array: ``(offsets (int32, n + 1), data)``."""
    n = pos.size
    offsets = np.zeros(n + 1, np.int32)
    total = 0
    for i in range(n):
        total += length[i]
        offsets[i + 1] = total
    data = np.empty(total, np.uint8)
    k = 0
    for i in range(n):
        p = pos[i]
        for j in range(length[i]):
            data[k + j] = u8[p + j]
        k += length[i]
    return offsets, data
