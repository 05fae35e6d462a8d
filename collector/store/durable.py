"""Durable small-file writes: what a power cut may not leave empty or half written.

A rename is atomic, but without an fsync of the data first a crash can leave the new name
pointing at an empty file; without an fsync of the directory after it, the rename itself may
be lost. The store's journals, the live scorer's state and model files all need both.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def fsync_path(path: Path) -> None:
    """Flush a file's (or a directory's entries') writes to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_text_durably(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically and durably: ``path.tmp``, fsync, rename, then
    fsync of the directory where the OS allows opening one. A failure removes the temp file
    (a full disk's partial copy would hold the very space the next write needs) and raises."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        fsync_path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # not every OS opens a directory
        fsync_path(path.parent)
