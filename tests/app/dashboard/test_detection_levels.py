"""The Detection page on a thin split says what ``toolwatch experiment`` says: the report's
warnings in its words, the next level above the target beside the target's (the report's
``fa_next`` column), and the statistics beyond the study (novelty) it prints.

A small simulated corpus split 80 / 5 / 15 % leaves a handful of normal test streams and a
calibration split of a few streams: both warnings apply.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from support.app import shown_tables
from toolwatch.app.dashboard.settings import MAIN_SCRIPT
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment import ExperimentConfig, run_experiment, save_result
from toolwatch.injection.experiment.formats import rate_ci
from toolwatch.injection.experiment.levels import (
    fa_sentence,
    thin_calibration_warning,
    thin_warning,
)
from toolwatch.injection.experiment.report import label
from toolwatch.injection.experiment.results import ExperimentResult

KINDS = ("burst", "runaway_retry")


@pytest.fixture(scope="module")
def thin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ExperimentResult]:
    root = tmp_path_factory.mktemp("thin") / "store"
    calls = simulate(seed=2, sessions=120)
    config = ExperimentConfig(
        split_shares=(0.8, 0.05), seeds=(0, 1), bootstrap=100, kinds=KINDS, ablation=False
    )
    result = run_experiment(calls, config)
    save_result(Store(root), result)
    return root, result


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch, thin: tuple[Path, ExperimentResult]) -> Iterator[Any]:
    monkeypatch.delenv("TOOLWATCH_MODEL", raising=False)
    monkeypatch.setenv("TOOLWATCH_STORE", str(thin[0]))

    def open_at(**params: str) -> AppTest:
        at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=60)
        at.query_params.update(params)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    yield open_at


def _table(at: AppTest) -> Any:
    return shown_tables(at)["kinds"].frame.set_index("kind")


def test_a_thin_split_is_warned_about_in_the_reports_words(
    page: Any, thin: tuple[Path, ExperimentResult]
) -> None:
    result = thin[1]
    expected = [thin_warning(result), thin_calibration_warning(result)]
    assert all(expected) and result.split["test"][0] < 50  # the fixture is thin both ways
    at = page()
    assert [w.value for w in at.warning] == expected
    # the target as the CLI prints it (never rounded to one decimal)
    assert next(m.value for m in at.metric if m.label == "Target") == "5%"
    # at the operating point no next-level column: the warning does not claim one
    at = page(mode="operating")
    shown = [w.value for w in at.warning]
    assert shown[1] == expected[1]
    assert shown[0] == expected[0].replace(", and detection is shown at both", "")


def test_the_next_level_above_the_target_is_beside_it(
    page: Any, thin: tuple[Path, ExperimentResult]
) -> None:
    result = thin[1]
    table = _table(page())
    column = f"at {fa_sentence(result, 'all', 'cusum', mode='fa_next')}"  # "… = 2/7 streams"
    assert column.endswith(" streams"), column
    assert column in table.columns, list(table.columns)
    for kind in KINDS:
        at, up = result.cell(kind, "all", "cusum"), result.cell(kind, "all", "cusum", "fa_next")
        assert at is not None and up is not None
        row = table.loc[label(kind)]
        assert row["detected (95% CI)"] == rate_ci(at.rate, at.ci_low, at.ci_high)
        assert row[column] == f"{rate_ci(up.rate, up.ci_low, up.ci_high)} {up.detected}/{up.runs}"


def test_the_novelty_cue_the_report_prints_can_be_shown(
    page: Any, thin: tuple[Path, ExperimentResult]
) -> None:
    """`?cue_set=novelty` fell back to all cues without a word: the report's 'Beyond the
    study' statistics were stored but unreachable in the app."""
    result = thin[1]
    at = page(cue_set="novelty", detector="cusum")
    assert at.selectbox(key="w_cue_set").value == "novelty"
    assert any("Detection — novelty · cusum" in h.value for h in at.subheader)
    table = _table(at)
    for kind in KINDS:
        cell = result.cell(kind, "novelty", "cusum")
        assert cell is not None
        assert table.loc[label(kind), "runs"] == f"{cell.detected}/{cell.runs}"
