"""Shared formatting of the pages (``app/dashboard/ui.py``)."""

from __future__ import annotations

import re

import numpy as np

from support.paths import REPO
from toolwatch.app.dashboard import ui

APP = REPO / "app"


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


def test_a_share_rounds_a_half_up_as_the_cli_does() -> None:
    """The Workbench's pass rates and the Corpus page's failure rates were formatted by
    Python's own ``{:.0%}`` / ``{:.1f}%``, which round a half to even: 1/8 of the runs read
    12% on the page and 13% in ``toolwatch workbench``; they now share ``formats.pct``."""
    assert ui.pct(1 / 8) == "13%"
    assert ui.pct(0.0125, 1) == "1.3%"
    assert ui.pct(0.145) == "15%"  # 14.4999… in binary: the half it stands for
    assert ui.pct(None) == "–" and ui.pct(float("nan")) == "–"


def test_no_page_formats_a_percent_on_its_own() -> None:
    """Every percent a page writes goes through ``ui.pct`` (a half rounded up): no format of
    its own, ``{:.0%}`` or ``{100 * x:.1f}%``, in the dashboard or the demo."""
    own = re.compile(r"""\{[^{}]*:[^{}]*%\}|:\.?\d*f\}\s?%""")
    found = [
        f"{path.relative_to(APP)}:{n}: {line.strip()}"
        for path in sorted(APP.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if own.search(line) and "strftime" not in line
    ]
    assert not found, "use ui.pct (formats.pct):\n" + "\n".join(found)
