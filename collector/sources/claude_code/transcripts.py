"""Where the transcripts are: every ``*.jsonl`` under the paths given, in one order that does not
depend on the order the paths were given in.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final

TRANSCRIPT_SUFFIX: Final = ".jsonl"


class TranscriptPathError(FileNotFoundError):
    """A path given to the importer does not exist or holds no transcript."""


def find_transcripts(paths: Iterable[str | Path]) -> list[Path]:
    """Every ``*.jsonl`` under the given files/directories (recursive), sorted, deduplicated.

    Sorting by path makes the tie-breaks of deduplication and ``seq`` independent of the order
    in which paths were given. Raises :class:`TranscriptPathError` naming a missing path.
    """
    found: set[Path] = set()
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            found.update(p.resolve() for p in path.rglob(f"*{TRANSCRIPT_SUFFIX}") if p.is_file())
        elif path.is_file():
            found.add(path.resolve())
        else:
            raise TranscriptPathError(f"no such file or directory: {path}")
    return sorted(found, key=str)
