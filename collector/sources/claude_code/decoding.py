"""A transcript file as lines of UTF-8 JSON, whatever it was saved as: plain, compressed by
gzip, bzip2, xz or zstd (a backup's ``*.jsonl.gz`` / ``.bz2`` / ``.xz`` / ``.zst``, told by its
first bytes, whatever its name; zstd with the optional ``toolwatch[zstd]``, else named),
UTF-16 with a BOM or without one (a PowerShell or Windows editor copy: told by the NUL at every
other byte of its first KB, as UTF-8 JSON Lines hold no NUL byte), or both; decoded as it
streams so memory stays one line. Text that is not valid UTF-16 (a lone surrogate, an odd last
byte) reads as U+FFFD, as a lone surrogate escape does in UTF-8
transcripts (:mod:`.measure`). Both passes of the importer (:mod:`.parsing`, then
:mod:`.provenance`) read through here, so a line has the same number in each.

A compressed stream that breaks (cut short, corrupt) ends the file there: the lines before it
were read and are kept, and :class:`TranscriptReadError` says what happened, never the bytes (a
decompressor's own text can quote the file's bytes or its checksum). A member of a zip archive
(:mod:`.archives`) reads the same way, compressed or not, from its own stream; a ``.jsonl``
file that is a zip (many named members, not one stream) is named, not read.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Final

from toolwatch.collector.sources.claude_code.archives import (
    MemberReadError,
    member_disk_bytes,
    open_member,
)
from toolwatch.collector.sources.claude_code.transcripts import (
    FOREIGN_HEAD_BYTES,
    foreign_format,
    open_transcript,
)

GZIP_MAGIC: Final = b"\x1f\x8b"
BZIP2_MAGIC: Final = b"BZh"
XZ_MAGIC: Final = b"\xfd7zXZ\x00"
ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
#: The compressions read, by their first bytes, as messages name them.
COMPRESSIONS: Final = (
    (GZIP_MAGIC, "gzip"),
    (BZIP2_MAGIC, "bzip2"),
    (XZ_MAGIC, "xz"),
    (ZSTD_MAGIC, "zstd"),
)
#: Why a zstd file is not read without the optional ``zstandard`` package (the stdlib reads
#: zstd only from Python 3.14); the extra is never needed by the instrumentation.
ZSTD_MISSING: Final = (
    "zstd-compressed; reading it needs the zstandard package: pip install 'toolwatch[zstd]'"
)
#: Compressed bytes read from disk at a time (bzip2, xz).
CHUNK: Final = 1 << 16
#: Text a bzip2 or xz decompressor gives at most per step: a check found bad drops the text of
#: its step (the decompressor raises instead of returning it), so steps stay small.
STEP: Final = 1 << 12
#: How much of the (decompressed) start is looked at for BOM-less UTF-16.
SNIFF_BYTES: Final = 1024
UTF16_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")
#: Why a compressed stream stopped, by the error its decompressor raised (its own text is not
#: shown): "gzip stream cut short", "corrupt xz stream"...
CUT: Final = "{} stream cut short"
CORRUPT: Final = "corrupt {} stream"
#: What a break means for the lines read before it: a cut loses only what follows; damage is
#: found at the checksum, the end, so the lines decoded from it were read (mostly as invalid).
KEPT: Final = "(the lines before it were read)"
KEPT_GARBLED: Final = "(the lines before it were read; the damage may have garbled some of them)"
#: bzip2 and xz raise at a bad check instead of giving the text of that step (:data:`STEP`).
KEPT_BUT_STEP: Final = (
    "(the lines before it were read but for {}, lost with the damage; the damage may have "
    "garbled some of them)"
)
#: What a bad check costs, by compression (zstd decompresses a chunk read from disk at once).
STEP_LOST: Final = {
    "bzip2": "up to the last 4 KiB of text",
    "xz": "up to the last 4 KiB of text",
    "zstd": "the text of the last 64 KiB read",
}


class TranscriptReadError(Exception):
    """The file's stream broke while it was read; the message is what happened, content-free,
    ``kept`` what that means for the lines read before it."""

    def __init__(self, what: str, kept: str) -> None:
        super().__init__(what)
        self.kept = kept


class TranscriptLines:
    """An open transcript (a context manager): iterate it for its lines as UTF-8 bytes.

    :meth:`start` reads the first bytes and says why the file is not read at all (zstd, zip,
    a second compression inside the first: named, not guessed at), else None; iterating starts
    it if not yet done. ``compression`` ("gzip", "bzip2", "xz"; None: not compressed) and
    ``encoding`` (None: UTF-8 as it is) say how it is read; ``member``: the zip archive's
    member at ``path`` to read instead of the file itself.
    ``disk_bytes()`` is how far into the file on disk the reading has come (for a progress bar
    sized by file sizes). Opening raises ``OSError`` as :func:`.transcripts.open_transcript`
    does; reading raises ``OSError``, and :class:`TranscriptReadError` when a compressed stream
    or a zip member breaks."""

    def __init__(self, path: Path, member: zipfile.ZipInfo | None = None) -> None:
        self._disk = open_transcript(path)
        self._member = member
        self._base: io.BufferedReader = self._disk  # the member's content, or the file's
        self._stream: io.BufferedReader | gzip.GzipFile = self._disk
        self._started = False
        self.foreign: str | None = None
        self.compression: str | None = None
        self.encoding: str | None = None

    def start(self) -> str | None:
        """Sniff the first bytes (once): decompress a compressed file; why it is not read, else
        None."""
        if not self._started:
            self._started = True
            if self._member is not None:
                try:
                    self._base = self._stream = open_member(self._disk, self._member)
                except MemberReadError as exc:
                    self.foreign = str(exc)
                    return self.foreign
            with _member_errors():
                head = self._base.peek(SNIFF_BYTES)[:SNIFF_BYTES]
            self.compression = next((n for m, n in COMPRESSIONS if head.startswith(m)), None)
            if self.compression is not None:
                try:
                    self._stream = _decompressing(self._base, self.compression)
                except ImportError:  # zstd without the optional package
                    self.foreign = ZSTD_MISSING
                    return self.foreign
                with _member_errors(), _stream_errors(self.compression):
                    head = self._stream.peek(SNIFF_BYTES)[:SNIFF_BYTES]
            self.encoding = utf16_encoding(head)
            if self.encoding is None:
                self.foreign = foreign_format(head[:FOREIGN_HEAD_BYTES])
        return self.foreign

    def __iter__(self) -> Iterator[bytes]:
        if self.start() is not None:
            return iter(())
        lines = self._stream if self.encoding is None else self._decoded(self.encoding)
        if self.compression is None and self._member is None:
            return iter(lines)
        return self._checked(lines, self.compression)

    def _decoded(self, encoding: str) -> Iterator[bytes]:
        text = io.TextIOWrapper(self._stream, encoding=encoding, errors="replace", newline="\n")
        try:
            for line in text:
                yield line.encode()
        finally:
            text.detach()  # else collecting the wrapper closes the file under disk_bytes()

    @staticmethod
    def _checked(lines: Iterable[bytes], compression: str | None) -> Iterator[bytes]:
        # the consumer's own errors are not thrown in here
        with _member_errors(), _stream_errors(compression):
            yield from lines

    def disk_bytes(self) -> int:
        """Bytes of the file on disk consumed so far (compressed ones for a compressed file,
        the member's packed ones for a zip member)."""
        if self._member is not None:
            return member_disk_bytes(self._disk, self._member)
        return self._disk.tell()

    def close(self) -> None:
        if self._stream is not self._base:
            self._stream.close()
        if self._base is not self._disk:
            self._base.close()
        self._disk.close()

    def __enter__(self) -> TranscriptLines:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def utf16_encoding(head: bytes) -> str | None:
    """The codec of a file starting with ``head`` when it is UTF-16: ``utf-16`` with a BOM (the
    codec reads and drops it), ``utf-16-le`` / ``-be`` without one when at least half the odd
    (even) bytes are NUL — JSON's structure is ASCII, and text mostly so — and under a quarter
    of the others (a zero-filled file is not UTF-16); else None."""
    if head.startswith(UTF16_BOMS):
        return "utf-16"
    pairs = len(head) // 2
    if pairs < 2:
        return None
    low, high = head[0 : 2 * pairs : 2].count(0), head[1 : 2 * pairs : 2].count(0)
    if high * 2 >= pairs and low * 4 < pairs:
        return "utf-16-le"
    if low * 2 >= pairs and high * 4 < pairs:
        return "utf-16-be"
    return None


class _Corrupt(Exception):
    """A bzip2 or xz decompressor refused the data (told apart from a disk's ``OSError``);
    ``lost_step``: it raised instead of giving the text of its step (garbage after the last
    stream loses none)."""

    def __init__(self, lost_step: bool) -> None:
        super().__init__()
        self.lost_step = lost_step


class _Decompressed(io.RawIOBase):
    """The content of a bzip2 or xz file, stream after stream as ``bunzip2`` / ``unxz`` read
    concatenated ones. Unlike the stdlib's readers, which end the file without a word at bytes
    after a stream that do not start another, such bytes are damage (:class:`_Corrupt`), as
    they are for gzip; xz's NUL stream padding is skipped."""

    def __init__(self, disk: io.BufferedReader, compression: str) -> None:
        super().__init__()
        self._disk = disk
        self._magic = next(m for m, n in COMPRESSIONS if n == compression)
        self._new: Callable[[], bz2.BZ2Decompressor | lzma.LZMADecompressor | _ZstdFrame] = (
            bz2.BZ2Decompressor
            if compression == "bzip2"
            else _ZstdFrame
            if compression == "zstd"
            else lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ)
        )
        self._padding = compression == "xz"
        self._decompressor = self._new()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while True:
            data = b""
            if self._decompressor.eof:
                data = self._next_stream()
                if not data:
                    return 0  # the last stream ended with the file
                if not data.startswith(self._magic[: len(data)]):
                    raise _Corrupt(False)  # not another stream: garbage after the last one
                self._decompressor = self._new()
            elif self._decompressor.needs_input:
                data = self._disk.read(CHUNK)
                if not data:
                    raise EOFError  # the file ends inside a stream
            try:
                out = self._decompressor.decompress(data, min(len(buffer), STEP))
            except (OSError, lzma.LZMAError):
                raise _Corrupt(True) from None
            if out:
                buffer[: len(out)] = out
                return len(out)

    def _next_stream(self) -> bytes:
        """What follows the stream that ended (b"" at the end of the file)."""
        data = self._decompressor.unused_data or self._disk.read(CHUNK)
        while self._padding and data and not data.strip(b"\0"):
            data = self._disk.read(CHUNK)
        return data.lstrip(b"\0") if self._padding else data


def _decompressing(disk: io.BufferedReader, compression: str) -> io.BufferedReader | gzip.GzipFile:
    """``disk``'s content, decompressed as it is read."""
    if compression == "gzip":
        return gzip.GzipFile(fileobj=disk, mode="rb")
    if compression == "zstd":
        import zstandard  # noqa: F401  (the optional extra: ImportError says it is missing)
    return io.BufferedReader(_Decompressed(disk, compression), CHUNK)


@contextmanager
def _member_errors() -> Iterator[None]:
    """A zip member breaking as :class:`TranscriptReadError`: a cut loses what follows; a bad
    CRC or corrupt data is found in a read whose text zipfile drops as it raises."""
    try:
        yield
    except MemberReadError as exc:
        kept = KEPT if exc.cut else KEPT_BUT_STEP.format("up to the last 4 KiB of text")
        raise TranscriptReadError(str(exc), kept) from None


@contextmanager
def _stream_errors(compression: str | None) -> Iterator[None]:
    """A decompression failure as :class:`TranscriptReadError`, content-free."""
    if compression is None:
        yield
        return
    try:
        yield
    except EOFError:  # "Compressed file ended before the end-of-stream marker was reached"
        raise TranscriptReadError(CUT.format(compression), KEPT) from None
    except (gzip.BadGzipFile, zlib.error):  # bad header, check, garbage after it
        raise TranscriptReadError(CORRUPT.format(compression), KEPT_GARBLED) from None
    except _Corrupt as exc:  # the same for bzip2 and xz, less the text of a step that raised
        kept = KEPT_BUT_STEP.format(STEP_LOST[compression]) if exc.lost_step else KEPT_GARBLED
        raise TranscriptReadError(CORRUPT.format(compression), kept) from None


class _ZstdFrame:
    """One zstd frame behind the interface :class:`_Decompressed` drives (``bz2``'s and
    ``lzma``'s: ``decompress(data, max_length)``, ``needs_input``, ``eof``, ``unused_data``);
    ``zstandard``'s own stream reader ends a cut file without a word."""

    def __init__(self) -> None:
        import zstandard

        self._error = zstandard.ZstdError
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._out = bytearray()

    @property
    def needs_input(self) -> bool:
        return not self._out

    @property
    def eof(self) -> bool:
        return bool(self._frame.eof) and not self._out

    @property
    def unused_data(self) -> bytes:
        return bytes(self._frame.unused_data)

    def decompress(self, data: bytes, max_length: int) -> bytes:
        if data:
            try:
                self._out += self._frame.decompress(data)
            except self._error:
                raise OSError("corrupt zstd data") from None
        out = bytes(self._out[:max_length])
        del self._out[:max_length]
        return out
