"""Zip archives of transcripts (a backup or a download of ``~/.claude/projects``): their members
listed and read one at a time as streams, with the standard library's :mod:`zipfile`, never
extracted to disk.

A whole archive is listed by its central directory (the member list at its end). A cut one
(a download stopped short) has none: its members are then found one after another by their
local headers from the start, as far as the data goes (ZIP64 and data-descriptor members
too: :mod:`.zip_descriptors`), and the archive is named damaged; the member the cut falls in
reads up to the cut. A member is read from its local header on, so a
thousand-member archive is not listed again for each member. Messages name members and what
happened, never their bytes (zipfile's own CRC message quotes nothing of the content, but is
not shown either).
"""

from __future__ import annotations

import io
import lzma
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Final

from toolwatch.collector.sources.claude_code.zip_descriptors import data_descriptor, zip64_sizes
from toolwatch.words import counted, noun_for

ZIP_SUFFIX: Final = ".zip"
ZIP_MAGIC: Final = b"PK\x03\x04"
#: A local file header: signature, version, flags, method, time, date, CRC, sizes, name and
#: extra field lengths (APPNOTE 4.3.7).
_LOCAL: Final = struct.Struct("<4sHHHHHLLLHH")
_ENCRYPTED: Final = 0x1
_DATA_DESCRIPTOR: Final = 0x8  # sizes after the data (a zip written to a pipe)
_UTF8_NAME: Final = 0x800
_ZIP64: Final = 0xFFFFFFFF
#: Text a member gives at most per read: a failed CRC, found at the member's end, drops the text
#: of the read that found it (zipfile raises instead of returning it), so reads stay small.
STEP: Final = 1 << 12


def no_directory(found: int) -> str:
    """What happened to an archive whose member list is unreadable (a cut download), with the
    number of transcript members read all the same."""
    one = found == 1
    return (
        "zip archive cut short or damaged: its member list (at the end) is unreadable; "
        f"{counted(found, 'transcript member')} found by {'its' if one else 'their'} local "
        f"{noun_for(found, 'header')} before the damage {'was' if one else 'were'} read"
    )


MEMBER_CUT: Final = "zip member cut short"
MEMBER_CORRUPT: Final = "corrupt zip member"


class MemberReadError(Exception):
    """A member's stream broke while it was read (content-free message), ``cut``: the archive
    ends inside it (only what follows is lost)."""

    def __init__(self, what: str, cut: bool) -> None:
        super().__init__(what)
        self.cut = cut


@dataclass(slots=True)
class Listing:
    """An archive's members (directory entries left out), in archive order; ``damaged``: its
    member list was unreadable and these were found by their local headers."""

    members: list[zipfile.ZipInfo] = field(default_factory=list)
    damaged: bool = False


def list_members(disk: IO[bytes]) -> Listing:
    """The members of the zip archive open in ``disk`` (seekable). Raises ``OSError`` when the
    file cannot be read."""
    try:
        with zipfile.ZipFile(disk) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError):
        return Listing(_by_local_headers(disk), damaged=True)
    return Listing([i for i in infos if not i.is_dir()])


def _by_local_headers(disk: IO[bytes]) -> list[zipfile.ZipInfo]:
    """Members found header after header from the start, up to the first thing that is not a
    local header (the central directory, the cut, damage). ZIP64 sizes are read from the
    header's extra field; a member whose sizes follow its data (a data descriptor, as a zip
    written to a pipe has) is passed by finding where its data ends (:mod:`.zip_descriptors`).
    The member the cut falls in is listed to be read up to the cut; a member whose end cannot
    be found ends the search after it."""
    found: list[zipfile.ZipInfo] = []
    offset = 0
    end_of_file = disk.seek(0, io.SEEK_END)
    while True:
        disk.seek(offset)
        head = disk.read(_LOCAL.size)
        if len(head) < _LOCAL.size or not head.startswith(ZIP_MAGIC):
            return found
        _, _, flags, method, _, _, crc, packed, size, name_len, extra_len = _LOCAL.unpack(head)
        raw_name = disk.read(name_len)
        extra = disk.read(extra_len)
        if len(raw_name) < name_len or len(extra) < extra_len:
            return found
        info = zipfile.ZipInfo(raw_name.decode("utf-8" if flags & _UTF8_NAME else "cp437"))
        info.header_offset, info.flag_bits, info.compress_type = offset, flags, method
        data = offset + _LOCAL.size + name_len + extra_len
        wide = zip64_sizes(extra)
        if _ZIP64 in (packed, size) and wide is not None:
            size, packed = wide
        after: tuple[int, int, int, int] | int | None = (crc, packed, size, data + packed)
        if flags & _DATA_DESCRIPTOR:
            after = data_descriptor(disk, data, method, wide is not None)
        elif _ZIP64 in (packed, size):  # ZIP64 without its sizes: where it ends is unknown
            after = None
        if not isinstance(after, tuple):  # the last member found: the cut is in it or after
            # read to its data's end if known (its descriptor is cut), else past the file's
            # end, so that a cut reads as one; the CRC left unset: none to check it by
            info.compress_size = end_of_file - data + 1 if after is None else after - data
            info.file_size = 1 << 62
            found.extend(() if info.is_dir() else (info,))
            return found
        info.CRC, info.compress_size, info.file_size, offset = after
        if not info.is_dir():
            found.append(info)


def open_member(disk: IO[bytes], info: zipfile.ZipInfo) -> io.BufferedReader:
    """``info``'s content, decompressed as it is read. Raises :class:`MemberReadError` when its
    local header is not where the listing says, the member is encrypted or packed by a method
    zipfile cannot read (told, not guessed at)."""
    if info.flag_bits & _ENCRYPTED:
        raise MemberReadError("encrypted zip member (decrypt the archive first)", cut=False)
    disk.seek(info.header_offset)
    head = disk.read(_LOCAL.size)
    if len(head) < _LOCAL.size:
        raise MemberReadError(MEMBER_CUT, cut=True)
    if not head.startswith(ZIP_MAGIC):
        raise MemberReadError(f"{MEMBER_CORRUPT} (no local header where listed)", cut=False)
    name_len, extra_len = _LOCAL.unpack(head)[-2:]
    disk.seek(info.header_offset + _LOCAL.size + name_len + extra_len)
    try:
        member = zipfile.ZipExtFile(disk, "r", info)
    except NotImplementedError:
        raise MemberReadError(
            f"zip member packed by method {info.compress_type}, which zipfile cannot read",
            cut=False,
        ) from None
    return io.BufferedReader(_Stepped(member), 1 << 16)


def member_disk_bytes(disk: IO[bytes], info: zipfile.ZipInfo) -> int:
    """How far into ``info``'s packed bytes the reading has come (a progress bar's step)."""
    return min(max(disk.tell() - info.header_offset, 0), info.compress_size)


@contextmanager
def member_errors() -> Iterator[None]:
    """A member's stream breaking as :class:`MemberReadError`, content-free: zipfile raises
    ``EOFError`` where the archive ends inside it, ``BadZipFile`` at a bad CRC (found at the
    member's end) and its decompressor's error at corrupt data (zlib's, lzma's, bz2's
    errno-less ``OSError``); the disk's own ``OSError`` passes (the reader says it as such)."""
    try:
        yield
    except EOFError:
        raise MemberReadError(MEMBER_CUT, cut=True) from None
    except (zipfile.BadZipFile, zlib.error, lzma.LZMAError):
        raise MemberReadError(MEMBER_CORRUPT, cut=False) from None
    except OSError as exc:
        if exc.errno is not None:
            raise
        raise MemberReadError(MEMBER_CORRUPT, cut=False) from None


class _Stepped(io.RawIOBase):
    """A member read at most :data:`STEP` bytes at a time (see there)."""

    def __init__(self, member: zipfile.ZipExtFile) -> None:
        super().__init__()
        self._member = member

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        with member_errors():  # here, so a gzip'd member's reader does not take it for its own
            data = self._member.read(min(len(buffer), STEP))
        buffer[: len(data)] = data
        return len(data)
