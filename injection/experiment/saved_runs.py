"""What `experiment` and `replay` say around a run they save: one wording for both commands.

Both save a run in the store, can re-run a saved one, and must refuse an unwritable store before
the long work starts (not after it), so these lines live here once.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwatch.collector.store.location import StoreError
from toolwatch.usage import UsageError, UserError

if TYPE_CHECKING:  # `experiment` and `replay --help` need no DuckDB or Arrow
    from toolwatch.collector.store.parquet_store import Store

log = logging.getLogger(__name__)


def require_writable(store: Store, command: str) -> None:
    """Refuse an unwritable store now, naming ``--no-save``, before the run starts."""
    from toolwatch.collector.store.compaction import probe_writable

    try:
        probe_writable(store.root)
    except OSError as exc:
        raise UserError(
            f"cannot write the store {store.root}: {exc.strerror or exc} "
            f"(--no-save runs the {command} without saving it)"
        ) from exc


def warn_if_data_changed(command: str, rerun: str, changed: str | None) -> None:
    """Say on stderr that a re-run's store changed since the saved run (``changed`` says how)."""
    if changed:
        print(
            f"toolwatch {command}: the store's calls changed since run {rerun} "
            f"({changed}): same configuration and seeds, but the numbers can differ",
            file=sys.stderr,
        )


def saved_as_line(
    command: str, store_arg: Path | str | None, store: Store, run_id: Any, more: str = ""
) -> str:
    """The closing line of a saved run: where it is and the command that re-runs it."""
    where = f"--store {shlex.quote(str(store_arg))} " if store_arg else ""
    return (
        f"saved as run {run_id} in {store.root} "
        f"(re-run: toolwatch {command} {where}--rerun {run_id}{more})"
    )


def refuse_options_beside_rerun(
    args: argparse.Namespace,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    command: str,
    kept: Iterable[str],
) -> None:
    """A re-run takes its saved configuration: an option given beside ``--rerun`` that the saved
    one replaces would be ignored without a word, so it is a usage error naming it. ``kept``:
    the options a re-run still reads (where to read, how to print, ``--target-fa``)."""
    parser = argparse.ArgumentParser(prog=f"toolwatch {command}", add_help=False)
    add_arguments(parser)
    defaults = vars(parser.parse_args([]))
    flags = {a.dest: a.option_strings for a in parser._actions if a.option_strings}

    def as_given(name: str, value: Any) -> str:  # --no-ablation for a switch turned off
        options = [o for o in flags.get(name, [f"--{name}"]) if o.startswith("--")]
        negative = [o for o in options if o.startswith("--no-")]
        return negative[0] if value is False and negative else options[0]

    ignored = [
        as_given(name, getattr(args, name))
        for name, default in defaults.items()
        if name not in {"rerun", *kept} and getattr(args, name, default) != default
    ]
    if ignored:
        raise UsageError(
            f"{', '.join(ignored)} cannot be given with --rerun: a re-run repeats the saved "
            "run's configuration (drop --rerun to run with new options)"
        )


def saved(command: str, save: Callable[[], object], run_id: Any, root: Path) -> bool:
    """Run ``save``; a store that refuses it is one line on stderr (``False``: exit 1), the
    results already computed still printed by the caller's JSON or text."""
    try:
        save()
    except (StoreError, OSError) as exc:
        print(f"toolwatch {command}: could not save results: {exc}", file=sys.stderr)
        return False
    log.info("saved %s %s in %s", command, run_id, root)
    return True
