"""Shared formatting of the pages (``app/dashboard/ui.py``)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

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


def test_fact_cards_name_a_detail_by_its_fact_and_escape_the_cells() -> None:
    """The phone layout of a facts table: one block per row, every other column a key/value
    pair; "· median" appears under two facts, so each detail is named with the fact above it."""
    frame = pd.DataFrame(
        {
            "fact": ["inter-response gaps", "  · median", "within-response gaps", "  · median"],
            "otlp": ["4", "0.01 s", "0", "—"],
            "a<b": ["1", "2", "3", "4"],
        }
    )
    cards = ui.fact_cards(frame, "fact")
    names = re.findall(r'<div class="tw-fact">([^<]*)<dl>', cards)
    assert names == [
        "inter-response gaps",
        "inter-response gaps · median",
        "within-response gaps",
        "within-response gaps · median",
    ]
    pairs = re.findall(r"<dt>([^<]*)</dt><dd>([^<]*)</dd>", cards)
    assert pairs[:2] == [("otlp", "4"), ("a&lt;b", "1")]
    assert ("otlp", "—") in pairs and len(pairs) == 8
