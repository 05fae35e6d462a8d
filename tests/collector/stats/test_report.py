"""The corpus facts' labels and formats, shared by ``toolwatch stats`` and the app."""

from __future__ import annotations

import math

from toolwatch.collector.stats import STAT_KEYS
from toolwatch.collector.stats.report import LABELS, format_report, format_stat, stats_document
from toolwatch.study import CORPUS


def test_every_fact_has_a_label_and_a_format() -> None:
    assert list(LABELS) == list(STAT_KEYS)
    assert {kind for _, kind in LABELS.values()} == {"n", "s", "%"}


def test_figures_are_formatted_by_kind() -> None:
    assert format_stat(26327.0, "n") == "26,327"
    assert format_stat(1.234, "s") == "1.23 s"
    assert format_stat(0.3712, "%") == "37.1 %"
    assert format_stat(math.nan, "s") == "—"
    assert format_stat(None, "n") == "—"


def test_document_turns_nan_into_null_and_keeps_the_study_beside() -> None:
    stats = {key: math.nan for key in STAT_KEYS} | {"calls": 10.0, "failure_rate": 0.25}
    doc = stats_document("/s", ["import"], {"import": 10}, stats)
    assert doc["stats"]["calls"] == 10 and isinstance(doc["stats"]["calls"], int)
    assert doc["stats"]["failure_rate"] == 0.25
    assert doc["stats"]["sessions"] is None
    assert doc["study"]["calls"] == CORPUS["calls"]
    assert (doc["store"], doc["selected_sources"], doc["calls_by_source"]) == (
        "/s",
        ["import"],
        {"import": 10},
    )


def test_report_flags_simulated_calls() -> None:
    stats = {key: 1.0 for key in STAT_KEYS}
    text = format_report("/s", None, {"simulated": 5}, stats)
    assert text.splitlines()[0] == "store /s (simulated 5 calls)"
    assert "includes SIMULATED calls" in text
    assert "SIMULATED" not in format_report("/s", None, {"import": 5}, stats)
