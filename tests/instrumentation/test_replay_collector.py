"""The OTLP replay against a real collector (not in the floor venv: the collector is not
installed there): what the collector says of an accepted batch reaches the user."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from support.collector import record
from toolwatch.collector.otlp import Collector
from toolwatch.collector.store import Store
from toolwatch.conventions import ATTR_SESSION_POSITION
from toolwatch.instrumentation.export import replay
from toolwatch.instrumentation.export.replay import replay_records

_STEPPED = (
    "1 span ends before it starts: stored without a duration (did the sender's clock step back "
    "during the call?)"
)


def test_a_batch_accepted_with_a_warning_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The collector keeps a span that ends before it starts and warns (partial_success with
    rejected_spans 0 and a message); the replay read only rejected_spans, so the warning was
    lost. Now each distinct warning is logged once, however many batches repeat it, and the
    report counts the batches."""
    prepare = replay._prepare

    def stepped(*args: Any) -> tuple[int, int, bool, dict[str, Any]]:
        start, end, failed, attrs = prepare(*args)
        odd = attrs[ATTR_SESSION_POSITION] % 3 == 1  # a clock step back in one call of 3
        return start, (start - 1_000_000 if odd else end), failed, attrs

    monkeypatch.setattr(replay, "_prepare", stepped)
    records = [record(i) for i in range(9)]
    caplog.set_level(logging.INFO, logger=replay.__name__)
    with Collector(Store(tmp_path / "store"), compact_interval=None) as collector:
        report = replay_records(records, collector.url, batch=3)
        assert collector.stats.flagged_by == {"end_before_start": 3}
    assert (report.sent, report.rejected, report.warned) == (9, 0, 3)
    assert report.warnings == [_STEPPED] and report.messages == []
    said = [r for r in caplog.records if r.name == replay.__name__]
    assert [(r.levelno, r.getMessage()) for r in said] == [
        (
            logging.WARNING,
            f"{collector.traces_url} accepted every span but warned (said once): {_STEPPED}",
        ),
        (
            logging.INFO,
            f"replayed 9 call records to {collector.traces_url} "
            "(3 batches accepted with a warning)",
        ),
    ]
