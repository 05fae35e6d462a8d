"""Shared formatting of the pages (``app/dashboard/ui.py``)."""

from __future__ import annotations

import numpy as np

from toolwatch.app.dashboard import ui


def test_a_count_of_one_names_its_noun_in_the_singular() -> None:
    """The Sessions line said "1 streams (1 main agents, …) in 1 sessions"; every count the
    pages write goes through ui.counted, singular for exactly one."""
    assert ui.counted(0, "stream") == "0 streams"
    assert ui.counted(1, "main agent") == "1 main agent"
    assert ui.counted(np.int64(1), "session") == "1 session"  # a count read from a frame
    assert ui.counted(2, "subagent") == "2 subagents"
    assert ui.counted(8729, "call") == "8,729 calls"
    assert ui.counted(3, "other stream") == "3 other streams"
    assert ui.counted(2, "child", "children") == "2 children"
    assert ui.counted(1, "child", "children") == "1 child"
