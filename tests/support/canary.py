"""Canary checks shared by the privacy tests: a fresh high-entropy string, every form of it that
must never be exported (verbatim, base64, URL-encoded, each 16-byte shingle, and the CRC-32,
sha256, sha1 and md5 of the canary and of every shingle), and searches over bytes, text and a
whole store (files, decoded Parquet values, every DuckDB table and view).
"""

from __future__ import annotations

import base64
import hashlib
import re
import urllib.parse
import uuid
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the store is the collector extra's: the instrumentation's floor-version
    # venv (tests/instrumentation/test_version_floor.py) searches logs and spans without it
    from toolwatch.collector.store.parquet_store import Store

SHINGLE = 16


def make_canary() -> str:
    """Fresh per test, 60 bytes; its ``/`` and ``:`` make the URL-encoded form differ."""
    return f"CANARY/{uuid.uuid4().hex}:{uuid.uuid4().hex[:20]}"


def forms(canary: str) -> dict[str, bytes]:
    """Every form of the canary that must not appear (name -> bytes)."""
    raw = canary.encode()
    out = {
        "canary": raw,
        "base64": base64.b64encode(raw),
        "url": urllib.parse.quote(canary, safe="").encode(),
    }
    pieces = [raw] + [raw[i : i + SHINGLE] for i in range(len(raw) - SHINGLE + 1)]
    for i, piece in enumerate(pieces):
        what = "canary" if i == 0 else f"shingle {i - 1}"
        if i:
            out[what] = piece
        crc = zlib.crc32(piece)
        out[f"crc32 of {what}"] = str(crc).encode()
        out[f"crc32 hex of {what}"] = f"{crc:08x}".encode()
        for algo in ("sha256", "sha1", "md5"):
            out[f"{algo} of {what}"] = hashlib.new(algo, piece).hexdigest().encode()
    return out


def _whole_number(digits: bytes) -> re.Pattern[bytes]:
    """``digits`` as a number of its own, not a run inside a longer one: a decimal CRC-32
    (often 9-10 digits) otherwise turns up by chance inside the digits of some float of a
    model file (a time cue keeps up to 5,000 of them), a false alarm about once in a few hundred
    runs."""
    return re.compile(rb"(?<![0-9])(?<![0-9]\.)" + re.escape(digits) + rb"(?![0-9])(?!\.[0-9])")


def assert_absent(haystack: bytes | str, canary: str, where: str) -> None:
    lower = (haystack.encode() if isinstance(haystack, str) else haystack).lower()
    for name, needle in forms(canary).items():  # case-blind: hex may be written either way
        if needle.isdigit():
            assert not _whole_number(needle).search(lower), f"{name} found in {where}"
        else:
            assert needle.lower() not in lower, f"{name} found in {where}"


def assert_store_clean(store: Store, canary: str, inputs: tuple[str, ...] = ()) -> None:
    """Every file of the store but ``inputs`` (paths relative to it: data the test itself
    put there for a server to serve), decoded Parquet values, every table and view."""
    import pyarrow.parquet as pq

    files = [
        p
        for p in store.root.rglob("*")
        if p.is_file() and p.relative_to(store.root).as_posix() not in inputs
    ]
    assert any(p.suffix == ".parquet" for p in files)
    for path in files:
        assert_absent(path.read_bytes(), canary, str(path))
        if path.suffix == ".parquet":
            assert_absent(repr(pq.read_table(path).to_pylist()), canary, f"{path} (decoded)")
    con = store.connect()
    try:
        names = [
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        ]
        for name in names:
            assert_absent(repr(con.execute(f'SELECT * FROM "{name}"').fetchall()), canary, name)
    finally:
        con.close()
