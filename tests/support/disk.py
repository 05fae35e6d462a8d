"""Disk conditions a test cannot create for real on CI (no special mounts), simulated at the
real boundary."""

from __future__ import annotations

import builtins
import errno
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
