"""The demo's own store: a new or empty directory, or a previous demo store (recognised by its
marker file), which is wiped first. Anything else is refused untouched.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolwatch.app.demo.options import (
    MARKER,
    MODEL_FILE,
    SCENARIO_FILE,
    TABLE_DIR,
    DemoError,
    DemoOptions,
    DemoResult,
)
from toolwatch.collector.store.compaction import COMMIT_LOCK, COMPACT_LOCK
from toolwatch.collector.store.parquet_store import Store
from toolwatch.documents import loads_json

# --------------------------------------------------------------------------------- the store


def prepare_store(path: Path, options: DemoOptions | None = None) -> Store:
    """A fresh demo store at ``path``: created, or wiped when it is a previous demo store.

    Refuses (nothing deleted) a path that is a file, or a non-empty directory that is not a
    demo store, or a demo store holding anything a demo does not write.
    """
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise DemoError("store", f"{path} exists and is not a directory; give --store a directory")
    if path.is_dir():
        entries = sorted(path.iterdir())
        if entries:
            if not _is_demo_marker(path / MARKER):
                raise DemoError(
                    "store",
                    f"{path} is not empty and is not a previous demo store (no {MARKER}); "
                    "nothing was deleted — give a new or empty directory with --store",
                )
            foreign = [e.name for e in entries if not _demo_entry(e)]
            if foreign:
                raise DemoError(
                    "store",
                    f"{path} is a previous demo store but also holds {', '.join(foreign)}; "
                    "nothing was deleted — move those away or give another --store",
                )
            for entry in entries:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
        write_marker(path, options or DemoOptions(store=path), status="running")
    except OSError as exc:
        raise DemoError("store", f"cannot create the demo store {path}: {exc}") from exc
    return Store(path)


def _is_demo_marker(path: Path) -> bool:
    try:
        data = loads_json(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("toolwatch_demo") == 1


def _demo_entry(entry: Path) -> bool:
    """Whether a demo wrote this top-level entry: its marker, models/, demo/, the store's
    commit lock (left by any read), or a store table (a directory of ``date=…`` partitions)."""
    if entry.name in (MARKER, COMMIT_LOCK):
        return entry.is_file() and not entry.is_symlink()
    if entry.is_symlink() or not entry.is_dir():
        return False
    if entry.name in (MODEL_FILE.parent.name, SCENARIO_FILE.parent.name):
        return True
    if not TABLE_DIR.match(entry.name):
        return False
    return all(
        (child.is_dir() and child.name.startswith("date=")) or child.name == COMPACT_LOCK
        for child in entry.iterdir()
    )


def write_marker(
    root: Path, options: DemoOptions, *, status: str, result: DemoResult | None = None
) -> None:
    data: dict[str, Any] = {
        "toolwatch_demo": 1,
        "status": status,
        "updated": datetime.now(UTC).isoformat(),
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()},
    }
    if result is not None:
        data["timings_s"] = {k: round(v, 3) for k, v in result.timings.items()}
        data["model"] = str(result.model_path) if result.model_path else None
        data["experiment_run"] = result.experiment_run
        if result.live is not None:
            data["live"] = {
                "alerts": [
                    {k: v.isoformat() if isinstance(v, datetime) else v for k, v in a.items()}
                    for a in result.live.alerts
                ],
                "peaks": result.live.peaks,
            }
    (root / MARKER).write_text(json.dumps(data, indent=2) + "\n")
