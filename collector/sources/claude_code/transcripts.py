"""Where the transcripts are: every ``*.jsonl`` (and compressed ``*.jsonl.gz``, ``.bz2``,
``.xz``, ``.zst``) under the paths given, in one order that does not depend on the order the
paths were given in, and the ``*.jsonl`` entries that cannot be read as one (each with its
reason: nothing found is passed over without a word), among them files whose first bytes say
they are a zip or compressed twice rather than JSON Lines (:mod:`.decoding` reads gzip'd,
bzip2'd, xz'd, zstd'd and UTF-16 ones).
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, cast

TRANSCRIPT_SUFFIX: Final = ".jsonl"
#: A gzip'd transcript's name (a backup's): read, decompressed, when its first bytes are gzip.
GZIP_TRANSCRIPT_SUFFIX: Final = ".jsonl.gz"
#: Compressed transcripts' names (a backup's): read, decompressed by their first bytes.
COMPRESSED_TRANSCRIPT_SUFFIXES: Final = (
    GZIP_TRANSCRIPT_SUFFIX,
    ".jsonl.bz2",
    ".jsonl.xz",
    ".jsonl.zst",
)
#: Every name a transcript is looked for by (messages list them).
TRANSCRIPT_NAMES: Final = tuple(
    f"*{s}" for s in (TRANSCRIPT_SUFFIX, *COMPRESSED_TRANSCRIPT_SUFFIXES)
)
#: Why a FIFO, a device or a socket is not read (opening a FIFO would wait for a writer).
NOT_REGULAR: Final = "not a regular file"
#: First bytes of files that are not UTF-8 JSON Lines, what they are and what to do: read line
#: by line, each would be one more "invalid JSON" line and the file's calls lost without reason.
#: (:mod:`.decoding` decompresses gzip, bzip2 and xz once: here they are compressed twice)
_FOREIGN_HEADS: Final = (
    (b"\x1f\x8b", "gzip-compressed", "gunzip it"),
    (b"BZh", "bzip2-compressed", "bunzip2 it"),
    (b"\xfd7zXZ\x00", "xz-compressed", "unxz it"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "unzstd it"),
    (b"PK\x03\x04", "a zip archive", "unzip it"),
)
#: How many first bytes :func:`foreign_format` needs.
FOREIGN_HEAD_BYTES: Final = 6


class TranscriptPathError(FileNotFoundError):
    """A path given to the importer does not exist, is not a file or directory, or holds no
    transcript."""


@dataclass(frozen=True, slots=True)
class Transcript:
    """One transcript file: ``path`` resolved (order and deduplication), ``shown`` the path the
    user gave or reached it by under a directory they gave (every message names this one)."""

    path: Path
    shown: str


@dataclass(slots=True)
class TranscriptScan:
    """The transcripts found, sorted by resolved path, the ``*.jsonl`` entries under the
    directories given that are not read, and the directories under them the walk could not list
    (permission denied: any transcript inside is unseen): ``(shown path, reason)``, sorted."""

    files: list[Transcript] = field(default_factory=list)
    not_read: list[tuple[str, str]] = field(default_factory=list)
    unlisted_dirs: list[tuple[str, str]] = field(default_factory=list)


def scan_transcripts(paths: Iterable[str | Path]) -> TranscriptScan:
    """Every ``*.jsonl`` and ``*.jsonl.gz`` / ``.bz2`` / ``.xz`` / ``.zst`` under the given
    files/directories (recursive), sorted, deduplicated.

    Sorting by resolved path makes the tie-breaks of deduplication and ``seq`` independent of
    the order in which paths were given. A given path that is missing or neither a regular file
    nor a directory raises :class:`TranscriptPathError` naming it; under a directory, such an
    entry (a dangling symlink, a FIFO, a device) is listed in ``not_read`` with its reason; a
    directory that cannot be listed is in ``unlisted_dirs`` (the walk goes on beside it).
    Nothing is opened here, so a FIFO cannot block the scan. Directories named ``*.jsonl`` are
    searched like any other; symlinked directories are not followed (no loops).
    """
    found: dict[Path, str] = {}
    not_read: dict[str, str] = {}
    unlisted: dict[str, str] = {}

    def add(path: Path) -> None:
        resolved = path.resolve()
        shown = str(path)
        if resolved not in found or shown < found[resolved]:
            found[resolved] = shown  # the same file by two paths: one name, whatever the order

    for raw in paths:
        path = Path(raw).expanduser()
        try:
            mode = path.stat().st_mode
        except OSError as exc:
            raise TranscriptPathError(f"{_stat_problem(path, exc)}: {path}") from None
        if stat.S_ISDIR(mode):
            for entry in _walk(path, unlisted):
                if transcript_stem(entry.name) is None:
                    continue  # x.jsonl.bak, x.jsonl.lock ...: not a transcript
                problem = _entry_problem(entry)
                if problem is None:
                    add(entry)
                elif problem:  # "" is a directory: the walk searches it
                    not_read[str(entry)] = problem
        elif stat.S_ISREG(mode):
            add(path)
        else:
            raise TranscriptPathError(f"{NOT_REGULAR}: {path}")
    return TranscriptScan(
        files=[Transcript(p, found[p]) for p in sorted(found, key=str)],
        not_read=sorted(not_read.items()),
        unlisted_dirs=sorted(unlisted.items()),
    )


def _walk(root: Path, unlisted: dict[str, str]) -> Iterator[Path]:
    """Every entry under ``root`` whose name holds ``.jsonl`` (files and directories, symlinks
    not followed). A directory that cannot be listed goes into ``unlisted`` with its reason:
    ``Path.rglob`` passed over it without a word, and the transcripts in it with it."""

    def failed(exc: OSError) -> None:
        where = exc.filename or root
        unlisted[str(where)] = _stat_problem(Path(where), exc)

    for top, dirs, files in os.walk(root, onerror=failed):
        for name in (*dirs, *files):
            if TRANSCRIPT_SUFFIX in name:
                yield Path(top, name)


def find_transcripts(paths: Iterable[str | Path]) -> list[Path]:
    """The resolved paths of :func:`scan_transcripts` (raises as it does)."""
    return [t.path for t in scan_transcripts(paths).files]


def open_transcript(path: Path) -> io.BufferedReader:
    """``path`` opened for binary reading; ``OSError`` (strerror :data:`NOT_REGULAR`) when it is
    not a regular file. Opened non-blocking first, so a FIFO put in a transcript's place is
    refused at once instead of waiting for a writer."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, NOT_REGULAR, str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return cast(io.BufferedReader, os.fdopen(fd, "rb", buffering=1 << 20))


def foreign_format(head: bytes) -> str | None:
    """Why a file starting with ``head`` is not JSON Lines (compressed, an archive), else None.
    A UTF-8 BOM is not foreign (the line parser takes it), nor UTF-16 (:mod:`.decoding`)."""
    for magic, what, fix in _FOREIGN_HEADS:
        if head.startswith(magic):
            return f"{what}, not UTF-8 JSON Lines ({fix} first)"
    return None


def transcript_stem(name: str) -> str | None:
    """A transcript's file name without ``.jsonl`` / ``.jsonl.gz`` / ``.bz2`` / ``.xz`` /
    ``.zst`` (what names its agent or session), None for another name."""
    for suffix in (*COMPRESSED_TRANSCRIPT_SUFFIXES, TRANSCRIPT_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None


def _entry_problem(entry: Path) -> str | None:
    """None for a regular file (after symlinks), "" for a directory (searched by the walk
    itself), else why the entry is not read."""
    try:
        mode = entry.stat().st_mode
    except OSError as exc:
        return _stat_problem(entry, exc)
    if stat.S_ISREG(mode):
        return None
    return "" if stat.S_ISDIR(mode) else NOT_REGULAR


def _stat_problem(path: Path, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "broken symbolic link" if path.is_symlink() else "no such file or directory"
    reason = exc.strerror or str(exc)
    return reason[:1].lower() + reason[1:]
