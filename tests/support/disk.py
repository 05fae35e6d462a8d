"""Disk conditions a test cannot create for real on CI (no special mounts), simulated at the
real boundary."""

from __future__ import annotations

import builtins
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import pytest

#: The uid and gid of ``nobody`` on Debian and most Linux systems.
NOBODY: Final = 65534


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


@contextmanager
def unprivileged() -> Iterator[None]:
    """Run the block as a normal user (``nobody``) when the tests run as root, as CI's
    container does: root lists a ``chmod 000`` directory, so permission bits bind only
    then. The effective ids are set back after; a normal user runs the block as is."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


@contextmanager
def world_readable_dir() -> Iterator[Path]:
    """A fresh directory any user can enter (pytest's ``tmp_path`` is under a 0700 directory,
    which :func:`unprivileged` could not traverse), removed after, its modes restored first."""
    path = Path(tempfile.mkdtemp(prefix="toolwatch-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for sub in path.rglob("*"):
            if sub.is_dir() and not sub.is_symlink():
                sub.chmod(0o755)
        shutil.rmtree(path)


def as_unprivileged(argv: list[str]) -> list[str]:
    """``argv`` run by a normal user: as is for one, under ``setpriv`` as ``nobody`` (real and
    effective ids, no groups) for root, whose ``os.access`` says yes to every permission bit;
    the test is skipped, saying why, only when root has no ``setpriv`` to drop to."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot run the command as a normal user")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
