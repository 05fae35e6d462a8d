"""Privacy of the importer's newer skip paths, driven as hard as a transcript can: a canary in an
incomplete last line cut mid-canary, in the input, name and result of call blocks in lines of
other types, in a garbled line, in an input and a result nested 1,000 deep, in gzip'd copies
(read; one with a bad checksum, which is not shown either) and a UTF-16 copy (read) given by
name and a ``*.jsonl.gz`` under the directory. ``toolwatch -v import`` (every
logger at DEBUG), text and ``--json`` summaries and an OTLP export: the canary is in no form
(verbatim, shingles, hashes) on stdout, stderr, the log, the export or the store, while the
calls and every skip reason are there (positive control).
"""

from __future__ import annotations

import bz2
import gzip
import json
import logging
import lzma
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
import zstandard

from support.canary import assert_absent, assert_store_clean, make_canary
from support.otlp_sink import OTLPSink
from toolwatch.cli import main
from toolwatch.collector.sources.claude_code.parsing import (
    INCOMPLETE_LINE,
    OTHER_TYPE_CALL,
    OTHER_TYPE_RESULT,
)
from toolwatch.collector.store import Store

SID = "0d9c4f52-aaaa-4bbb-8ccc-00000000c0de"
DEPTH = 500  # {"k":[…]} twice a level: 1,000 deep, past the encoders, within the parser's 1,024
DEEP = "DEEP-PLACEHOLDER"


def _deep(canary: str) -> str:
    """``canary`` nested ``DEPTH`` times, as JSON text (too deep for json.dumps to write)."""
    return '{"k":[' * DEPTH + json.dumps(canary) + "]}" * DEPTH


def _line(kind: str, blocks: list[dict[str, Any]], stamp: str, msg: str | None = None) -> str:
    message: dict[str, Any] = {"content": blocks}
    if msg is not None:
        message["id"] = msg
    doc = {"type": kind, "sessionId": SID, "timestamp": stamp, "cwd": "/w", "message": message}
    return json.dumps(doc) + "\n"


def _with_deep(line: str, canary: str) -> str:
    return line.replace(json.dumps(DEEP), _deep(canary))


def _transcript(canary: str) -> str:
    use = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"p": canary}}
    deep = {"type": "tool_use", "id": "toolu_2", "name": "Grep", "input": {"q": DEEP}}
    lines = [
        _with_deep(_line("assistant", [use, deep], "2026-03-01T10:00:00.000Z", "msg_1"), canary),
        _with_deep(
            _line(
                "user",
                [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": canary},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": [DEEP]},
                ],
                "2026-03-01T10:00:01.000Z",
            ),
            canary,
        ),
        # calls and results in lines of other types: skipped, named by reason only
        _line(
            "progress",
            [{"type": "tool_use", "id": canary, "name": canary, "input": {canary: canary}}],
            "2026-03-01T10:00:02.000Z",
            canary,
        ),
        _line(
            "agent_event",
            [{"type": "tool_result", "tool_use_id": canary, "content": canary, "is_error": True}],
            "2026-03-01T10:00:03.000Z",
        ),
        _line("system", [{"type": "text", "text": canary}], "2026-03-01T10:00:04.000Z"),
        f'{{"type":"assistant","message":{{"content":"{canary}\n',  # garbled mid-file
    ]
    use3 = {"type": "tool_use", "id": "toolu_3", "name": canary, "input": {"p": canary}}
    last = _line("assistant", [use3], "2026-03-01T10:00:05.000Z", "msg_3")
    cut = last.index(canary) + len(canary) // 2  # cut inside the canary, no newline
    return "".join(lines) + last[:cut]


def _write(root: Path, canary: str) -> tuple[Path, list[Path]]:
    text = _transcript(canary)
    proj = root / "proj"
    proj.mkdir(parents=True)
    (proj / f"{SID}.jsonl").write_text(text, encoding="utf-8")
    (proj / "backup.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    gz = root / "copy-gz.jsonl"
    gz.write_bytes(gzip.compress(text.encode()))
    damaged = bytearray(gzip.compress(text.encode()))
    damaged[-8] ^= 0xFF  # its checksum (of the content) no longer matches: never shown
    (root / "copy-crc.jsonl").write_bytes(bytes(damaged))
    utf16 = root / "copy-utf16.jsonl"
    utf16.write_bytes(text.encode("utf-16"))  # with its BOM, as PowerShell writes
    return proj, [gz, root / "copy-crc.jsonl", utf16]


def test_no_canary_through_the_new_skip_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    canary = make_canary()
    proj, copies = _write(tmp_path / "in", canary)
    store = tmp_path / "store"
    paths = [str(proj), *map(str, copies)]
    printed: list[str] = []
    with caplog.at_level(logging.DEBUG), OTLPSink() as sink:
        assert main(["-v", "import", "claude-code", *paths, "--store", str(store)]) == 0
        text = capsys.readouterr()
        code = main(["import", "claude-code", *paths, "--store", str(store), "--json", "-v"])
        assert code == 0
        as_json = capsys.readouterr()
        again = ["import", "claude-code", str(proj), "--store", str(tmp_path / "s2")]
        assert main(["-v", *again, "--otlp", sink.url]) == 0
        exported = capsys.readouterr()
        spans = sink.wait_for(2)
        raw = sink.raw()
    for captured in (text, as_json, exported):
        printed += [captured.out, captured.err]
    out = text.out
    doc = json.loads(as_json.out)
    reasons = doc["skipped_by_reason"]
    # read five times: the transcript, its gzip'd backup and copy, its UTF-16 copy, the copy with
    # a bad checksum (found at the end, before its unfinished last line: that file stops there)
    assert reasons[OTHER_TYPE_CALL] == reasons[OTHER_TYPE_RESULT] == reasons["invalid JSON"] == 5
    assert reasons[INCOMPLETE_LINE] == 4
    assert doc["calls"] == 2 and len(spans) == 2  # the calls are there, only not their content
    assert doc["duplicates_removed"] == 8
    unread = " ".join(map(str, doc.values()))
    assert "corrupt gzip stream after line" in unread
    assert "backup.jsonl.gz:" in out  # its skipped lines, by file and line
    crc = f"{zlib.crc32(_transcript(canary).encode()):x}"  # what gzip's own error would show
    rows = Store(store).query("SELECT input_bytes, output_bytes FROM calls ORDER BY seq")
    assert rows.column("input_bytes").to_pylist()[1] > DEPTH * 8  # the deep input was sized
    assert all(crc not in said for said in printed)
    for i, said in enumerate(printed):
        assert_absent(said, canary, f"{('stdout', 'stderr')[i % 2]} of run {i // 2}")
    assert_absent(caplog.text, canary, "the log")
    assert_absent(raw, canary, "the OTLP export")
    assert_absent(repr(spans), canary, "the exported spans")
    assert_store_clean(Store(store), canary)
    assert_store_clean(Store(tmp_path / "s2"), canary)


def _compressed_copies(root: Path, canary: str) -> list[Path]:
    """The transcript as bzip2, xz, BOM-less UTF-16 (inside gzip too), and broken streams: a
    bzip2 copy cut inside the canary, an xz copy with the canary's bytes after its last stream,
    a bzip2 copy whose middle is overwritten by them, a zstd copy, a corrupt zstd one (the
    canary's bytes after its magic), a zip copy named ``.jsonl`` (named, not read), a zip
    archive (read) and one whose member's middle is overwritten by them (its CRC fails)."""
    text = _transcript(canary).encode()
    root.mkdir(parents=True)
    made = {
        "copy.jsonl.bz2": bz2.compress(text),
        "copy.jsonl.xz": lzma.compress(text),
        "copy-le.jsonl": text.decode().encode("utf-16-le"),
        "copy-le-gz.jsonl": gzip.compress(text.decode().encode("utf-16-le")),
        "cut.jsonl.bz2": bz2.compress(text)[: len(bz2.compress(text)) // 2],
        "tail.jsonl.xz": lzma.compress(text) + canary.encode(),
        "zstd.jsonl": zstandard.compress(text),
        "bad-zstd.jsonl": b"\x28\xb5\x2f\xfd" + text,
        "zip.jsonl": b"PK\x03\x04" + text,
    }
    hit = bytearray(bz2.compress(text))
    middle = len(hit) // 2
    hit[middle : middle + len(canary)] = canary.encode()
    made["hit.jsonl.bz2"] = bytes(hit)
    for name, data in made.items():
        (root / name).write_bytes(data)
    for name in ("copy.zip", "crc.zip"):
        with zipfile.ZipFile(root / name, "w", zipfile.ZIP_STORED) as archive:
            archive.writestr("p/copy.jsonl", text)
        made[name] = data = (root / name).read_bytes()
    hit = bytearray(data)
    hit[len(hit) // 2 : len(hit) // 2 + len(canary)] = canary.encode()
    (root / "crc.zip").write_bytes(hit)
    return [root / name for name in made]


def test_no_canary_through_compressed_utf16_and_broken_streams(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """bzip2, xz, BOM-less UTF-16 are read; a cut, a corrupt and a garbage-tailed stream are
    named by what happened (never the decompressor's words, nor the bytes next to the break),
    zstd and a zip archive read, a corrupt zstd copy, a zip named .jsonl and a zip member failing
    its CRC named: the canary in the text and in the bytes
    beside a break is in no form on stdout, stderr, the log or the store."""
    canary = make_canary()
    copies = _compressed_copies(tmp_path / "in", canary)
    store = tmp_path / "store"
    args = ["import", "claude-code", *map(str, copies), "--store", str(store)]
    with caplog.at_level(logging.DEBUG):
        assert main(["-v", *args]) == 0
        text = capsys.readouterr()
        assert main([*args, "--json", "-v"]) == 0
        as_json = capsys.readouterr()
    doc = json.loads(as_json.out)
    said = " ".join(map(str, doc.values())) + text.out + text.err
    for what in ("bzip2 stream cut short", "corrupt xz stream", "corrupt bzip2 stream"):
        assert what in said  # positive control: each break is named
    assert "corrupt zstd stream" in said and "a zip archive" in said
    assert "crc.zip!p/copy.jsonl', 'error': 'corrupt zip member" in said
    assert doc["calls"] == 2 and doc["duplicates_removed"] == 14  # 6 copies, the crc.zip part
    assert f"{tmp_path / 'in' / 'crc.zip'}!p/copy.jsonl" in doc["damaged_files"]
    for name, captured in (("run", text), ("--json run", as_json)):
        assert_absent(captured.out, canary, f"stdout of the {name}")
        assert_absent(captured.err, canary, f"stderr of the {name}")
    assert_absent(caplog.text, canary, "the log")
    assert_store_clean(Store(store), canary)
