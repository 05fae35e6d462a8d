"""The window finds exact maximal runs, keeps its guarantee, and stays within its memory bound."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwatch.instrumentation.provenance import ProvenanceConfig
from toolwatch.instrumentation.provenance.window import FingerprintWindow, covered

CFG = ProvenanceConfig()
SMALL = ProvenanceConfig(window_bytes=4096, table_bits=12, max_result_bytes=1024, max_segments=16)


def _noise(rnd: random.Random, n: int) -> bytes:
    return bytes(rnd.randrange(1, 256) for _ in range(n))


def _window(*results: bytes, config: ProvenanceConfig = CFG) -> FingerprintWindow:
    w = FingerprintWindow(config)
    for i, data in enumerate(results):
        w.append(i, data)
    w.prepare()
    return w


def _longest_common(a: bytes, b: bytes) -> int:
    """Exact longest common substring (dynamic programming; small inputs only)."""
    best = 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def test_a_copied_run_is_found_with_its_exact_length_and_source() -> None:
    rnd = random.Random(1)
    first, second = _noise(rnd, 900), _noise(rnd, 700)
    w = _window(first, second)
    view = b"prefix " + second[123 : 123 + 57] + b" suffix"
    runs = w.runs(view)
    assert max(e - s for s, e, _ in runs) == 57
    start, end, source = max(runs, key=lambda r: r[1] - r[0])
    assert view[start:end] == second[123:180]
    assert w.source_at(source) == 1  # the second result


def test_no_run_spans_two_results() -> None:
    rnd = random.Random(2)
    a, b = _noise(rnd, 300), _noise(rnd, 300)
    w = _window(a, b)
    view = a[-30:] + b[:30]  # contiguous only across the separator
    assert sorted(e - s for s, e, _ in w.runs(view))[-1] == 30


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(4, 80))
def test_every_common_run_of_the_guaranteed_length_is_found(seed: int, length: int) -> None:
    """Any common run of w + k - 1 (23) bytes or more is found, exactly; shorter ones may be."""
    rnd = random.Random(seed)
    source = _noise(rnd, 2000)
    at = rnd.randrange(0, len(source) - length)
    view = _noise(rnd, rnd.randrange(0, 40)) + source[at : at + length] + _noise(rnd, 30)
    w = _window(_noise(rnd, 500), source)
    found = max((e - s for s, e, _ in w.runs(view)), default=0)
    exact = _longest_common(view, source)
    assert found <= exact
    if exact >= CFG.guaranteed_match:
        assert found == exact


def test_the_guarantee_is_w_plus_k_minus_1() -> None:
    assert CFG.guaranteed_match == 23
    assert ProvenanceConfig(k=16, w=16).guaranteed_match == 31


def test_winnow_selection_finds_the_same_long_runs() -> None:
    rnd = random.Random(3)
    source = _noise(rnd, 3000)
    view = source[1000:1100]
    winnow = ProvenanceConfig(selection="winnow", w=16)
    assert max(e - s for s, e, _ in _window(source, config=winnow).runs(view)) == 100


def test_results_are_hashed_only_when_a_check_needs_them() -> None:
    w = FingerprintWindow(SMALL)
    rnd = random.Random(4)
    for i in range(40):  # 40 KB through a 4 KB window, no check in between
        w.append(i % 3, _noise(rnd, 1000))
    assert w.indexed_bytes == 0
    w.prepare()
    assert 0 < w.indexed_bytes <= SMALL.buffer_bytes  # only what is still in the window


def test_old_bytes_leave_the_window_and_are_not_found() -> None:
    rnd = random.Random(5)
    old = _noise(rnd, 1000)
    w = FingerprintWindow(SMALL)
    w.append(0, old)
    w.prepare()
    assert w.runs(old[:200])
    for _ in range(20):
        w.append(1, _noise(rnd, 1000))
    w.prepare()
    assert not w.runs(old[:200])  # stale table entries fail the range or byte check


def test_memory_is_allocated_once_and_stays_within_the_bound() -> None:
    w = FingerprintWindow(CFG)
    start = w.memory_bytes()
    rnd = random.Random(6)
    chunk = _noise(rnd, 64 << 10)
    for i in range(3 * CFG.window_bytes // len(chunk)):  # 3 MiB of results
        w.append(i % 50, chunk[i % 7 :])
        if i % 5 == 0:
            w.prepare()
            w.runs(chunk[100:400])
    assert w.memory_bytes() <= CFG.memory_bound
    assert w.memory_bytes() - start < 1 << 16  # the buffer and the tables never grew


def test_segment_count_is_bounded() -> None:
    w = FingerprintWindow(SMALL)
    for i in range(100):
        w.append(i, bytes([i + 1]) * 20)
    assert len(w._seg_start) <= SMALL.max_segments


def test_clear_overwrites_the_retained_bytes() -> None:
    w = _window(b"s3cr3t-value-0123456789abcdef" * 4)
    w.clear()
    assert b"s3cr3t" not in bytes(w._buf)
    assert w.runs(b"s3cr3t-value-0123456789abcdef") == []


def test_clear_overwrites_the_bytes_a_compaction_left_behind() -> None:
    """A compaction moves the kept bytes forward; their old places past the new fill held a
    copy that clear() (which overwrites up to the fill) left in memory."""
    rnd = random.Random(3)
    secret = b"s3cr3t-value-0123456789abcdef" * 30
    w = FingerprintWindow(SMALL)
    for _ in range(5):
        w.append(0, _noise(rnd, 1000))
    w.append(1, secret)  # kept, and moved by the compaction the next result causes
    w.append(0, _noise(rnd, 1000))
    w.prepare()
    assert w.runs(secret[:100])
    w.clear()
    assert b"s3cr3t" not in bytes(w._buf)


def test_covered_counts_the_union() -> None:
    assert covered([(0, 10, 0), (5, 20, 0), (30, 40, 0)]) == 30


@pytest.mark.parametrize(
    "bad",
    [
        {"k": 2},
        {"selection": "minhash"},
        {"table_bits": 40},
        {"ways": 3},
        {"max_result_bytes": 4 << 20},
    ],
)
def test_bad_configs_are_refused_with_the_reason(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="provenance config"):
        ProvenanceConfig(**bad)  # type: ignore[arg-type]


def _trace(config: ProvenanceConfig) -> tuple[str, int]:
    """600 results of mixed sizes from 7 sources, every 5th followed by a query cut from one
    of the last 40 results (some long gone): a digest of every run, source and occurrence
    found, and how many queries found a run."""
    rnd = random.Random(11)
    w = FingerprintWindow(config)
    results: list[bytes] = []
    out: list[list[Any]] = []
    for i in range(600):
        data = _noise(rnd, rnd.choice([1, 5, 20, 90, 300, 1024]))
        w.append(i % 7, data)
        results.append(data)
        if i % 5 == 0:
            w.prepare()
            src = results[-rnd.randrange(1, min(len(results), 40) + 1)]
            a = rnd.randrange(0, max(1, len(src) - 16))
            view = b"<" + src[a : a + rnd.randrange(16, 200)] + b">"
            out.append([[s, e, o, w.source_at(o)] for s, e, o in sorted(w.runs(view))])
            out.append(list(w.occurrences(src[a : a + 8], 5)))
    digest = hashlib.sha256(json.dumps(out).encode()).hexdigest()[:16]
    return digest, sum(bool(found) for found in out[::2])


@pytest.mark.parametrize(
    ("window_bytes", "expected"),
    [
        (4096, ("3a481d4bd7f2bb4e", 36)),  # both bounds drop results
        (65536, ("8e22807f517e851d", 36)),  # the segment count drops them
    ],
)
def test_dropping_results_leaves_the_window_it_always_did(
    window_bytes: int, expected: tuple[str, int]
) -> None:
    """The digests were recorded with the window that moved its buffer at every drop."""
    config = ProvenanceConfig(
        window_bytes=window_bytes, table_bits=12, max_result_bytes=1024, max_segments=16
    )
    assert _trace(config) == expected


def test_small_results_beyond_the_segment_bound_do_not_move_the_buffer_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past ``max_segments`` results every append dropped one and moved the whole buffer
    (≈ 1 MiB: ~50 µs a result); the bytes are now moved only when the buffer is full."""
    moves: list[int] = []
    compact = FingerprintWindow._compact

    def counted(self: FingerprintWindow) -> None:
        moves.append(self._start - self._base)
        compact(self)

    monkeypatch.setattr(FingerprintWindow, "_compact", counted)
    w = FingerprintWindow(CFG)
    for i in range(3 * CFG.max_segments):  # 3 × 8,192 results of 100 bytes: 2.4 MiB
        w.append(i % 3, (i + 1 << 8).to_bytes(4, "big") * 25)  # distinct, no 0x00 in a run
    assert len(w._seg_start) == CFG.max_segments
    assert 1 <= len(moves) <= 2  # each frees most of the buffer (≈ 0.7 MiB)
    assert min(moves) > CFG.buffer_bytes // 3
    w.prepare()
    last, first = (3 * CFG.max_segments << 8).to_bytes(4, "big"), (1 << 8).to_bytes(4, "big")
    assert w.runs(last * 25) and not w.runs(first * 25)


def test_buffer_and_tables_are_made_at_the_first_result_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every window allocated its 1.5 MiB buffer and 4 MiB of tables when made, and clear()
    zeroed them again: ≈ 2 ms a stream, most of an import of 10,000 tiny sessions whose calls
    never see a result. They are now made at the first result; until then a query finds
    nothing and clear() has nothing to overwrite; once made they are never made again."""
    made: list[int] = []
    allocate = FingerprintWindow._allocate
    monkeypatch.setattr(
        FingerprintWindow, "_allocate", lambda self: (made.append(1), allocate(self))[1]
    )
    w = FingerprintWindow(CFG)
    w.prepare()
    assert (w.runs(b"x" * 64), list(w.occurrences(b"x", 3)), made) == ([], [], [])
    w.clear()
    w.append(0, b"")  # an empty result keeps nothing
    assert made == []
    data = _noise(random.Random(9), 400)
    w.append(3, data)
    w.prepare()
    assert w.runs(data[50:150]) == [(0, 100, 50)] and w.source_at(60) == 3
    w.clear()
    w.append(1, data)
    w.prepare()
    assert w.runs(data[:40]) and made == [1]
