"""The commands the pages offer name the store as one shell word."""

from __future__ import annotations

import shlex
from pathlib import Path

from toolwatch.app.dashboard import hints, ui


def test_every_fill_hint_names_a_store_with_a_space_as_one_argument() -> None:
    """The hints wrote the path bare, so a store at 'my store' became two arguments (the
    Detection page's re-run and guide already quoted it)."""
    store = Path("/tmp/my store")
    for table in hints.FILL_HINTS:
        hint = ui.fill_hint(table, store)
        for command in hint.split("`")[1::2]:  # the code spans are the commands
            words = shlex.split(command)
            assert words[0] == "toolwatch", command
            if "--store" in words:
                assert words[words.index("--store") + 1] == str(store), command
