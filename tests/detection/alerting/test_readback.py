"""The scored window the live state keeps for the catch-up after a kill."""

from __future__ import annotations

import pytest

from toolwatch.detection.alerting import readback
from toolwatch.detection.alerting.readback import LATE_S, ScoredWindow


def test_the_window_forgets_what_lies_before_its_bound_and_caps_calls_stamped_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A skewed or hostile clock must not grow the state: calls after the newest trusted time
    are kept at most MAX_AHEAD, the farthest dropped first; the bound never moves back."""
    monkeypatch.setattr(readback, "MAX_AHEAD", 2)
    late = int(LATE_S * 1e6)
    window = ScoredWindow(0)
    for i, t in enumerate([10, late + 5, late + 20, 9 * late, 8 * late, 7 * late]):
        window.add(f"s{i}", t)
    window.prune(late + 20)
    assert window.from_us == 20 and set(window.seen) == {"s1", "s2", "s5", "s4"}
    window.prune(5)  # an older clock: nothing comes back
    assert window.from_us == 20 and window.newest_us == late + 20
    window.add("early", 19)  # before the bound: never caught up, so not kept
    again = ScoredWindow.from_json(window.to_json())
    assert (again.from_us, again.newest_us, again.seen) == (20, late + 20, window.seen)
