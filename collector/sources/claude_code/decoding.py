"""A transcript file as lines of UTF-8 JSON, whatever it was saved as: plain, or gzip-compressed
(a backup's ``*.jsonl.gz``, told by its first bytes, whatever its name), decompressed as it
streams so memory stays one line. Both passes of the importer (:mod:`.parsing`, then
:mod:`.provenance`) read through here, so a line has the same number in each.

A gzip stream that breaks (cut short, corrupt) ends the file there: the lines before it were
read and are kept, and :class:`TranscriptReadError` says what happened, never the bytes (a
gzip error's own text can quote the file's bytes or its checksum).
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
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
    ``disk_bytes()`` is how far into the file on disk the reading has come (for a progress bar
    sized by file sizes). Opening raises ``OSError`` as :func:`.transcripts.open_transcript`
    does; reading raises ``OSError``, and :class:`TranscriptReadError` when a gzip stream
    breaks."""

    def __init__(self, path: Path) -> None:
        self._disk = open_transcript(path)
        self._stream: io.BufferedIOBase = self._disk
        self._started = False
        self.foreign: str | None = None

    def start(self) -> str | None:
        """Sniff the first bytes (once): unzip a gzip'd file; why it is not read, else None."""
        if not self._started:
            self._started = True
            head = self._disk.peek(FOREIGN_HEAD_BYTES)[:FOREIGN_HEAD_BYTES]
            if head.startswith(GZIP_MAGIC):
                unzipped = gzip.GzipFile(fileobj=self._disk, mode="rb")
                self._stream = unzipped
                with _gzip_errors():
                    head = unzipped.peek(FOREIGN_HEAD_BYTES)[:FOREIGN_HEAD_BYTES]
            self.foreign = foreign_format(head)
        return self.foreign

    def __iter__(self) -> Iterator[bytes]:
        if self.start() is not None:
            return iter(())
        return iter(self._stream) if self._stream is self._disk else self._gzip_lines()

    def _gzip_lines(self) -> Iterator[bytes]:
        with _gzip_errors():  # the consumer's own errors are not thrown in here
            yield from self._stream

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


@contextmanager
def _gzip_errors() -> Iterator[None]:
    """A gzip failure as :class:`TranscriptReadError`, content-free."""
    try:
        yield
    except EOFError:  # "Compressed file ended before the end-of-stream marker was reached"
        raise TranscriptReadError(GZIP_CUT, KEPT) from None
    except (gzip.BadGzipFile, zlib.error):  # bad header, CRC or length, garbage after it
        raise TranscriptReadError(GZIP_CORRUPT, KEPT_GARBLED) from None
