"""A transcript file as lines of UTF-8 JSON, whatever it was saved as: plain, gzip-compressed
(a backup's ``*.jsonl.gz``, told by its first bytes, whatever its name), UTF-16 with a BOM or
without one (a PowerShell or Windows editor copy: told by the NUL at every other byte of its
first KB, as UTF-8 JSON Lines hold no NUL byte), or both; decoded as it streams so memory
stays one line. Text that is not valid UTF-16 (a lone surrogate, an odd last byte) reads as
U+FFFD, as a lone surrogate escape does in UTF-8 transcripts (:mod:`.measure`). Both passes of
the importer (:mod:`.parsing`, then :mod:`.provenance`) read through here, so a line has the
same number in each.

A gzip stream that breaks (cut short, corrupt) ends the file there: the lines before it were
read and are kept, and :class:`TranscriptReadError` says what happened, never the bytes (a
gzip error's own text can quote the file's bytes or its checksum).
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Final

from toolwatch.collector.sources.claude_code.transcripts import (
    FOREIGN_HEAD_BYTES,
    foreign_format,
    open_transcript,
)

GZIP_MAGIC: Final = b"\x1f\x8b"
#: How much of the (decompressed) start is looked at for BOM-less UTF-16.
SNIFF_BYTES: Final = 1024
UTF16_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")
#: Why a gzip stream stopped, by the error the decompressor raised (its own text is not shown).
GZIP_CUT: Final = "gzip stream cut short"
GZIP_CORRUPT: Final = "corrupt gzip stream"
#: What a break means for the lines read before it: a cut loses only what follows; damage is
#: found at the checksum, the end, so the lines decoded from it were read (mostly as invalid).
KEPT: Final = "(the lines before it were read)"
KEPT_GARBLED: Final = "(the lines before it were read; the damage may have garbled some of them)"


class TranscriptReadError(Exception):
    """The file's stream broke while it was read; the message is what happened, content-free,
    ``kept`` what that means for the lines read before it."""

    def __init__(self, what: str, kept: str) -> None:
        super().__init__(what)
        self.kept = kept


class TranscriptLines:
    """An open transcript (a context manager): iterate it for its lines as UTF-8 bytes.

    :meth:`start` reads the first bytes and says why the file is not read at all (bzip2, xz,
    zstd, zip: named, not guessed at), else None; iterating starts it if not yet done.
    ``gzip`` and ``encoding`` (None: UTF-8 as it is) say how it is read.
    ``disk_bytes()`` is how far into the file on disk the reading has come (for a progress bar
    sized by file sizes). Opening raises ``OSError`` as :func:`.transcripts.open_transcript`
    does; reading raises ``OSError``, and :class:`TranscriptReadError` when a gzip stream
    breaks."""

    def __init__(self, path: Path) -> None:
        self._disk = open_transcript(path)
        self._stream: io.BufferedReader | gzip.GzipFile = self._disk
        self._started = False
        self.foreign: str | None = None
        self.gzip = False
        self.encoding: str | None = None

    def start(self) -> str | None:
        """Sniff the first bytes (once): unzip a gzip'd file; why it is not read, else None."""
        if not self._started:
            self._started = True
            head = self._disk.peek(SNIFF_BYTES)[:SNIFF_BYTES]
            if head.startswith(GZIP_MAGIC):
                self.gzip = True
                unzipped = gzip.GzipFile(fileobj=self._disk, mode="rb")
                self._stream = unzipped
                with _gzip_errors():
                    head = unzipped.peek(SNIFF_BYTES)[:SNIFF_BYTES]
            self.encoding = utf16_encoding(head)
            if self.encoding is None:
                self.foreign = foreign_format(head[:FOREIGN_HEAD_BYTES])
        return self.foreign

    def __iter__(self) -> Iterator[bytes]:
        if self.start() is not None:
            return iter(())
        lines = self._stream if self.encoding is None else self._decoded(self.encoding)
        return self._gzip_lines(lines) if self.gzip else iter(lines)

    def _decoded(self, encoding: str) -> Iterator[bytes]:
        text = io.TextIOWrapper(self._stream, encoding=encoding, errors="replace", newline="\n")
        try:
            for line in text:
                yield line.encode()
        finally:
            text.detach()  # else collecting the wrapper closes the file under disk_bytes()

    @staticmethod
    def _gzip_lines(lines: Iterable[bytes]) -> Iterator[bytes]:
        with _gzip_errors():  # the consumer's own errors are not thrown in here
            yield from lines

    def disk_bytes(self) -> int:
        """Bytes of the file on disk consumed so far (compressed ones for a gzip file)."""
        return self._disk.tell()

    def close(self) -> None:
        if self._stream is not self._disk:
            self._stream.close()
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


@contextmanager
def _gzip_errors() -> Iterator[None]:
    """A gzip failure as :class:`TranscriptReadError`, content-free."""
    try:
        yield
    except EOFError:  # "Compressed file ended before the end-of-stream marker was reached"
        raise TranscriptReadError(GZIP_CUT, KEPT) from None
    except (gzip.BadGzipFile, zlib.error):  # bad header, CRC or length, garbage after it
        raise TranscriptReadError(GZIP_CORRUPT, KEPT_GARBLED) from None
