"""Coverage-guided fuzz target (atheris / libFuzzer) for the collector's OTLP decoders.

The first input byte picks the path (mod 3), the rest is the request body:

* 0 — protobuf: ``parse_protobuf`` → the columnar ``map_parsed`` (the fast path), with the
  reference ``map_spans(iter_protobuf_spans(...))`` as a differential oracle (same rows,
  rejections, reasons);
* 1 — OTLP/JSON: ``decode_json`` → ``map_spans``;
* 2 — gzip: ``gunzip_bounded`` (1 MiB), then the protobuf path on its output.

The mapped rows then go through what the writer does with them — the retry filter's span keys
and the store's date split — since a row that maps but cannot be written would fail a group
commit. The declared error is ``OtlpError`` (a 4xx the server answers); anything else raised is
a finding (libFuzzer stops with the input saved as ``crash-*``).

Run: ``python tests/collector/otlp/fuzz/fuzz_decoders.py CORPUS_DIR SEEDS_DIR
-dict=tests/collector/otlp/fuzz/otlp.dict -max_total_time=60``; ``python ... regress/*.bin`` runs
each saved input once. ``tests/collector/otlp/test_fuzz.py`` does both in CI, time-bounded.
"""

from __future__ import annotations

import sys

import atheris

# The compiled walks are left uninstrumented: numba compiles their bytecode, which must stay
# numba's (their behaviour is still checked, through the differential oracle above).
with atheris.instrument_imports(
    include=["toolwatch"], exclude=["toolwatch.collector.otlp.wire_kernels"]
):
    from toolwatch.collector.otlp import columnar, decode, dedup, mapping
    from toolwatch.collector.store import parquet_store

LIMIT = 1 << 20


def _summary(m: mapping.Mapped) -> tuple[object, ...]:
    return (
        m.spans,
        m.rejected,
        m.ignored,
        m.reasons,
        m.rejected_by,
        m.ignored_by,
        m.calls.to_pylist(),
        m.tool_lists.to_pylist(),
    )


def run(data: bytes) -> None:
    if not data:
        return
    mode, body = data[0] % 3, data[1:]
    try:
        if mode == 2:
            body = decode.gunzip_bounded(body, LIMIT)
            mode = 0
        if mode == 0:
            request = decode.parse_protobuf(body)
            mapped = columnar.map_parsed([(body, request)])[0]
            reference = mapping.map_spans(decode.iter_protobuf_spans(request))
            if _summary(mapped) != _summary(reference):
                raise AssertionError("the columnar path and the reference mapping disagree")
        else:
            mapped = mapping.map_spans(decode.decode_json(body))
    except decode.OtlpError:
        return
    dedup.span_keys(mapped.calls["trace_id"], mapped.calls["span_id"])
    dedup.span_keys(mapped.tool_lists["trace_id"], mapped.tool_lists["span_id"])
    for table, column in ((mapped.calls, "start_time"), (mapped.tool_lists, "listed_time")):
        if table.num_rows:
            list(parquet_store._split_by_date(table, column))


def TestOneInput(data: bytes) -> None:  # libFuzzer's name for the entry point
    run(data)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
