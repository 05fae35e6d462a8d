"""Where the dashboard reads from: the store, the model, the refresh period.

``toolwatch app`` starts ``streamlit run main.py -- --store S [--model M] [--refresh N]``, so
the script reads its own command line; anything not given there (and every run under
``streamlit.testing``, where ``sys.argv`` is the test runner's) falls back to the environment:
``TOOLWATCH_STORE`` (shared with every command), ``TOOLWATCH_MODEL`` and
``TOOLWATCH_APP_REFRESH``.

The model is the artifact ``toolwatch train`` writes. Without ``--model`` the app looks for the
store-relative convention ``<store>/models/model.json`` (:data:`MODEL_IN_STORE`), so a store and
its model travel together; with neither, pages that need scores say how to get one.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolwatch.collector.store.location import resolve_store
from toolwatch.detection.model.location import MODEL_IN_STORE

ENV_MODEL: Final = "TOOLWATCH_MODEL"
ENV_REFRESH: Final = "TOOLWATCH_APP_REFRESH"
DEFAULT_REFRESH_S: Final = 5.0
MAIN_SCRIPT: Final = Path(__file__).with_name("main.py")


@dataclass(frozen=True)
class AppSettings:
    """Resolved inputs of one dashboard process."""

    store: Path
    model: Path | None
    model_origin: str  # "--model", "store", or "" when there is no model
    refresh_s: float


def script_arguments(argv: Sequence[str] | None = None) -> list[str]:
    """The script's own arguments when run by ``streamlit run`` (``[]`` under a test runner)."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return []
    try:
        is_main = Path(argv[0]).resolve() == MAIN_SCRIPT.resolve()
    except OSError:
        is_main = False
    return argv[1:] if is_main else []


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="toolwatch app script", add_help=False)
    p.add_argument("--store")
    p.add_argument("--model")
    p.add_argument("--refresh", type=float)
    return p


def load_settings(argv: Sequence[str] | None = None) -> AppSettings:
    """Settings from the script's arguments, then the environment, then defaults."""
    args, _ = _parser().parse_known_args(script_arguments(argv))
    store = resolve_store(args.store)  # None -> $TOOLWATCH_STORE -> ~/.toolwatch/store
    explicit = args.model or os.environ.get(ENV_MODEL) or None
    model, origin = resolve_model(store, explicit)
    refresh = args.refresh
    if refresh is None:
        try:
            refresh = float(os.environ.get(ENV_REFRESH, DEFAULT_REFRESH_S))
        except ValueError:
            refresh = DEFAULT_REFRESH_S
    return AppSettings(store=store, model=model, model_origin=origin, refresh_s=max(1.0, refresh))


def resolve_model(store: Path, explicit: str | os.PathLike[str] | None) -> tuple[Path | None, str]:
    """``(path, origin)``: the explicit model, else ``<store>/models/model.json`` if present."""
    if explicit:
        return Path(explicit).expanduser(), "--model"
    candidate = store / MODEL_IN_STORE
    if candidate.is_file():
        return candidate, "store"
    return None, ""
