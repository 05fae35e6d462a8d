"""The experiment's report: the study's tables, notes and the headline's latency legend."""

from __future__ import annotations

from toolwatch.injection.experiment.report import headline, render
from toolwatch.injection.experiment.results import ExperimentResult


def test_exfiltration_without_a_read_is_reported(result: ExperimentResult) -> None:
    notes = result.notes["key_exfiltration"]
    text = render(result)
    if notes.get("read_pair_inserted"):
        assert "Read + network call pair was inserted" in text
    assert "study (95% CI)" in text and "91% (85–95)" in text


def test_headline_labels_its_latency_and_the_studys(result: ExperimentResult) -> None:
    text = headline(result)
    assert "latency all·CUSUM" in text
    burst = result.cell("burst", "time", "point")
    assert burst is not None
    assert (
        f"burst (different responses): study 1, ours {burst.median_latency:g} (both time·point)"
        in text
    )
    fa = result.thresholds[("standard", "all", "cusum", "fa_target")].fa_reached
    assert f"reached {100 * fa:.1f}% = {round(fa * 64)}/64 sessions" in text
