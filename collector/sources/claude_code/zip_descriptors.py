"""Where a zip member ends when its local header does not say: the ZIP64 sizes of its extra
field, and the data descriptor that follows the data of a member written to a pipe (sizes and
CRC after the data, APPNOTE 4.3.9). Needed only for an archive whose member list (at its end)
is unreadable — a cut download —, whose members are found header after header
(:mod:`.archives`).

A deflated member's end is where its deflate stream ends (decompressed step by step, the text
dropped: memory stays one step, whatever the member expands to); a stored one's is the first
descriptor whose size is the distance to it. Other methods are not searched: the member is read
up to where its stream stops and the search ends there.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from typing import IO, Final

_ZIP64_EXTRA: Final = 0x0001
_DESCRIPTOR_MAGIC: Final = b"PK\x07\x08"
#: Packed bytes read at a time, and text decompressed at most per step (memory bound).
_CHUNK: Final = 1 << 16
_STEP: Final = 1 << 20


def zip64_sizes(extra: bytes) -> tuple[int, int] | None:
    """(size, packed size) of a local header's ZIP64 extra field, None without one."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind == _ZIP64_EXTRA and length >= 16 and at + 4 + length <= len(extra):
            size, packed = struct.unpack_from("<QQ", extra, at + 4)
            return size, packed
        at += 4 + length
    return None


def data_descriptor(
    disk: IO[bytes], data: int, method: int, zip64: bool
) -> tuple[int, int, int, int] | int | None:
    """(CRC, packed size, size, offset after the descriptor) of the member whose data starts
    at ``data``; where its data ends when only the descriptor is cut (a deflated member's);
    None when the data is cut or where it ends is unknown (a method not searched)."""
    if method == zipfile.ZIP_DEFLATED:
        end = _deflate_end(disk, data)
        if end is None:
            return None
        return _descriptor_at(disk, data, end, zip64) or end
    if method == zipfile.ZIP_STORED:
        return _stored_descriptor(disk, data, zip64)
    return None


def _deflate_end(disk: IO[bytes], data: int) -> int | None:
    """Offset just past the deflate stream starting at ``data`` (None: cut or corrupt)."""
    disk.seek(data)
    inflate = zlib.decompressobj(-zlib.MAX_WBITS)
    read = 0
    try:
        while not inflate.eof:
            chunk = disk.read(_CHUNK)
            if not chunk:
                return None
            read += len(chunk)
            inflate.decompress(chunk, _STEP)
            while inflate.unconsumed_tail and not inflate.eof:
                inflate.decompress(inflate.unconsumed_tail, _STEP)
    except zlib.error:
        return None
    return data + read - len(inflate.unused_data)


def _descriptor_at(
    disk: IO[bytes], data: int, end: int, zip64: bool
) -> tuple[int, int, int, int] | None:
    """The descriptor at ``end`` (its signature optional) if its packed size is the data's."""
    disk.seek(end)
    raw = disk.read(24)
    skip = 4 if raw.startswith(_DESCRIPTOR_MAGIC) else 0
    for wide in (zip64, not zip64):
        fmt = "<LQQ" if wide else "<LLL"
        length = skip + struct.calcsize(fmt)
        if len(raw) >= length:
            crc, packed, size = struct.unpack_from(fmt, raw, skip)
            if packed == end - data:
                return crc, packed, size, end + length
    return None


def _stored_descriptor(disk: IO[bytes], data: int, zip64: bool) -> tuple[int, int, int, int] | None:
    """The first signed descriptor after ``data`` whose packed size is its distance."""
    at = data
    while True:
        disk.seek(at)
        chunk = disk.read(_CHUNK + 3)
        if len(chunk) < 4:
            return None
        found = chunk.find(_DESCRIPTOR_MAGIC)
        while found >= 0:
            after = _descriptor_at(disk, data, at + found, zip64)
            if after is not None:
                return after
            found = chunk.find(_DESCRIPTOR_MAGIC, found + 1)
        at += _CHUNK
