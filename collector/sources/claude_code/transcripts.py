"""Where the transcripts are: every ``*.jsonl`` (and compressed ``*.jsonl.gz``, ``.bz2``,
``.xz``, ``.zst``) under the paths given, in one order that does not depend on the order the
paths were given in, and the ``*.jsonl`` entries that cannot be read as one (each with its
reason: nothing found is passed over without a word), among them files whose first bytes say
they are a zip or compressed twice rather than JSON Lines (:mod:`.decoding` reads gzip'd,
bzip2'd, xz'd, zstd'd and UTF-16 ones). A ``*.zip`` archive is opened here to list its
members (:mod:`.archives`): each transcript member is one more transcript, named
``archive.zip!member.jsonl``.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Final, cast

from toolwatch.collector.sources.claude_code.archives import (
    ZIP_SUFFIX,
    list_members,
    no_directory,
)
from toolwatch.words import counted

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
#: Every name a transcript is looked for by (messages list them), and the archives whose
#: members of those names are read.
FILE_NAMES: Final = tuple(f"*{s}" for s in (TRANSCRIPT_SUFFIX, *COMPRESSED_TRANSCRIPT_SUFFIXES))
TRANSCRIPT_NAMES: Final = (*FILE_NAMES, f"*{ZIP_SUFFIX}")
#: Why a zip archive adds no transcript.
NO_TRANSCRIPT_MEMBER: Final = "zip archive holding no transcript member ({})"
#: Members of a zip archive named like a transcript (or an archive) that are not read, each
#: kind with why: an archive inside the archive (not opened: one level, no zip bomb to bound),
#: and macOS Finder's metadata (``__MACOSX/…``, ``._name``: resource forks, not JSON Lines).
NESTED_ARCHIVE: Final = "nested archive"
MACOS_METADATA: Final = "macOS metadata member"
SKIPPED_MEMBER_WHY: Final = {
    NESTED_ARCHIVE: "a zip inside a zip is not opened; unzip the outer one and import the folder",
    MACOS_METADATA: "__MACOSX/ and ._* entries are Finder's resource forks, not transcripts",
}
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
    (b"PK\x03\x04", "a zip archive", "name it *.zip to have its transcripts read, or unzip it"),
)
#: How many first bytes :func:`foreign_format` needs.
FOREIGN_HEAD_BYTES: Final = 6


class TranscriptPathError(FileNotFoundError):
    """A path given to the importer does not exist, is not a file or directory, or holds no
    transcript."""


@dataclass(frozen=True, slots=True)
class Transcript:
    """One transcript file: ``path`` resolved (order and deduplication), ``shown`` the path the
    user gave or reached it by under a directory they gave (every message names this one);
    ``member``: the member of the zip archive at ``path`` that is the transcript (``shown`` is
    then ``archive!member``)."""

    path: Path
    shown: str
    member: zipfile.ZipInfo | None = None

    def disk_size(self) -> int:
        """Bytes on disk reading it goes through (a member's packed ones; 0 when unknown)."""
        if self.member is not None:
            return self.member.compress_size
        try:
            return self.path.stat().st_size
        except OSError:
            return 0


@dataclass(slots=True)
class TranscriptScan:
    """The transcripts found, sorted by resolved path, the ``*.jsonl`` entries under the
    directories given that are not read, and the directories under them the walk could not list
    (permission denied: any transcript inside is unseen): ``(shown path, reason)``, sorted."""

    files: list[Transcript] = field(default_factory=list)
    not_read: list[tuple[str, str]] = field(default_factory=list)
    unlisted_dirs: list[tuple[str, str]] = field(default_factory=list)
    #: of ``not_read``, the zip archives whose member list was unreadable (cut, damaged): the
    #: members found before the damage are in ``files``
    damaged_archives: list[str] = field(default_factory=list)
    #: ``(archive!member, kind)``: members of the zip archives not read, kind a key of
    #: :data:`SKIPPED_MEMBER_WHY` (a nested archive, macOS metadata), in archive order
    skipped_members: list[tuple[str, str]] = field(default_factory=list)


def scan_transcripts(paths: Iterable[str | Path]) -> TranscriptScan:
    """Every ``*.jsonl`` and ``*.jsonl.gz`` / ``.bz2`` / ``.xz`` / ``.zst`` under the given
    files/directories (recursive), sorted, deduplicated.

    Sorting by resolved path makes the tie-breaks of deduplication and ``seq`` independent of
    the order in which paths were given. A given path that is missing or neither a regular file
    nor a directory raises :class:`TranscriptPathError` naming it; under a directory, such an
    entry (a dangling symlink, a FIFO, a device) is listed in ``not_read`` with its reason; a
    directory that cannot be listed is in ``unlisted_dirs`` (the walk goes on beside it).
    Only ``*.zip`` archives are opened here (regular files, opened non-blocking), to list their
    transcript members, so a FIFO cannot block the scan. Directories named ``*.jsonl`` are
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
                if transcript_stem(entry.name) is None and not _is_zip(entry.name):
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
    files: list[Transcript] = []
    damaged: list[str] = []
    skipped: list[tuple[str, str]] = []
    for resolved in sorted(found, key=str):
        shown = found[resolved]
        if not _is_zip(resolved.name):
            files.append(Transcript(resolved, shown))
            continue
        members, problem, broken = _archive_members(resolved, shown, skipped)
        files.extend(members)
        if problem is not None:
            not_read[shown] = problem
        if broken:
            damaged.append(shown)
    return TranscriptScan(
        files=files,
        not_read=sorted(not_read.items()),
        unlisted_dirs=sorted(unlisted.items()),
        damaged_archives=damaged,
        skipped_members=skipped,
    )


def _is_zip(name: str) -> bool:
    return name.lower().endswith(ZIP_SUFFIX)


def _archive_members(
    path: Path, shown: str, skipped: list[tuple[str, str]]
) -> tuple[list[Transcript], str | None, bool]:
    """The transcript members of the zip archive at ``path`` (by name, in archive order); why
    the archive is named among the files not read (none found, cut, unreadable), else None;
    whether it is damaged (its member list unreadable). Members not read for a reason of
    their own (:data:`SKIPPED_MEMBER_WHY`) are added to ``skipped``."""
    try:
        with open_transcript(path) as disk:
            listing = list_members(disk)
    except OSError as exc:
        return [], exc.strerror or str(exc), False
    members = []
    passed: list[tuple[str, str]] = []
    for info in listing.members:
        kind = _skipped_kind(member_path(info.filename))
        if kind is not None:
            passed.append((f"{shown}!{info.filename}", kind))
        elif transcript_stem(member_path(info.filename).name) is not None:
            members.append(Transcript(path, f"{shown}!{info.filename}", info))
    skipped.extend(passed)
    if listing.damaged:
        return members, no_directory(len(members)), True
    if not members:
        problem = NO_TRANSCRIPT_MEMBER.format(", ".join(FILE_NAMES))
        kinds = Counter(kind for _, kind in passed)
        if kinds:
            problem += " but " + ", ".join(counted(n, k) for k, n in kinds.items())
            problem += ", not read (listed with the skipped members)"
        return [], problem, False
    return members, None, False


def member_path(name: str) -> PurePosixPath:
    """A member's path inside its archive; a backslash is a folder separator (zips made by
    old Windows tools write ``project\\s.jsonl``), so its folders name session and agent."""
    return PurePosixPath(name.replace("\\", "/"))


def _skipped_kind(path: PurePosixPath) -> str | None:
    """Why a member is not read though its name might say transcript (or archive), else None."""
    if "__MACOSX" in path.parts[:-1] or path.name.startswith("._"):
        if transcript_stem(path.name) is not None or _is_zip(path.name):
            return MACOS_METADATA
        return None
    return NESTED_ARCHIVE if _is_zip(path.name) else None


def _walk(root: Path, unlisted: dict[str, str]) -> Iterator[Path]:
    """Every entry under ``root`` whose name holds ``.jsonl`` or ends ``.zip`` (files and
    directories, symlinks not followed). A directory that cannot be listed goes into
    ``unlisted`` with its reason: ``Path.rglob`` passed over it without a word, and the
    transcripts in it with it."""

    def failed(exc: OSError) -> None:
        where = exc.filename or root
        unlisted[str(where)] = _stat_problem(Path(where), exc)

    for top, dirs, files in os.walk(root, onerror=failed):
        for name in (*dirs, *files):
            if TRANSCRIPT_SUFFIX in name.lower() or _is_zip(name):
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
    ``.zst`` (what names its agent or session), None for another name. The suffix in any case
    (``S.JSONL``, a copy through a case-folding tool), as ``.zip`` is."""
    lowered = name.lower()
    for suffix in (*COMPRESSED_TRANSCRIPT_SUFFIXES, TRANSCRIPT_SUFFIX):
        if lowered.endswith(suffix):
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
