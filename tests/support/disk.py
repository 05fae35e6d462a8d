"""Disk conditions a test cannot create for real on CI (no special mounts), simulated at the
real boundary."""

from __future__ import annotations

import builtins
import errno
import os
from pathlib import Path
from typing import Any

import pytest


def read_only(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Every open for writing under ``root`` fails with EROFS, as on a ``ro`` mount."""
    real = builtins.open

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith(str(root)) and set(mode) & set("wxa+"):
            raise OSError(errno.EROFS, "Read-only file system", str(file))
        return real(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", open_)


def record_fsync_and_replace(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Patch ``os.fsync``/``os.replace`` to record what they touch, in order (a power cut
    cannot be simulated, so the order of the calls is what a test can check)."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        events.append(("replace", f"{src} -> {dst}"))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events
