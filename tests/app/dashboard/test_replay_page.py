"""The Replay page shows a saved ``toolwatch replay`` with the very figures the command printed:
the weekly table cell by cell, the weeks above 2× the target and those beyond chance, the
adaptive model beside the frozen one and detection at one threshold, the chart's rates.

The store is filled the way a user fills it: simulated calls, then ``toolwatch replay`` twice
(the second at another target), its printed text kept to compare with.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from support.app import chart_data, frame_with, metric, printed_weeks, run_replay
from toolwatch.app.dashboard.settings import MAIN_SCRIPT
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store

PAGE = "replay_page.py"
SHORT = ("burst", "runaway")


@pytest.fixture(scope="module")
def replays(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("replay") / "store"
    Store(root).append("calls", simulate(seed=2, scale=0.25))
    first, first_id = run_replay(root)
    second, second_id = run_replay(root, "--target-fa", "0.1")
    return {
        "root": root,
        "runs": {first_id: first, second_id: second},
        "order": [first_id, second_id],
    }


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.delenv("TOOLWATCH_MODEL", raising=False)

    def open_at(root: Path, **params: str) -> AppTest:
        monkeypatch.setenv("TOOLWATCH_STORE", str(root))
        at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=60)
        at.run()
        at.switch_page(PAGE)
        at.query_params.update(params)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert not at.error, [e.value for e in at.error]
        return at

    yield open_at


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_the_weekly_table_is_what_the_command_printed(replays: dict[str, Any], page: Any) -> None:
    first = replays["order"][0]
    text = replays["runs"][first]
    at = page(replays["root"], replay=first)
    assert at.title[0].value == "Replay"
    assert at.selectbox(key="w_replay").value == first
    table = frame_with(at, "adaptive: alarming (95% CI)", "week")
    printed = printed_weeks(text)
    assert list(table.index) == list(printed)  # every week, then "all"
    for week, cells in printed.items():
        row = table.loc[week]
        shown = [week, row["streams"]]
        for model in ("adaptive", "frozen"):
            alarming = f"{model}: alarming" + (" (95% CI)" if model == "adaptive" else "")
            shown += [row[alarming], row[f"{model}: threshold"]]
            shown += [row[f"{model}: {s}"] for s in SHORT]
        assert [c for c in shown if c] == cells, week
    # the weeks above 2× the target, and those beyond chance with the p-value printed
    marked = 0
    for model in ("adaptive", "frozen"):
        over = _line(text, f"{model}: weeks after the first")
        for week, row in table.iterrows():
            day = week.split()[0]
            above = row[f"{model}: above 2× target"]  # "yes", beyond chance "yes (p = …)"
            assert above.startswith("yes") == (
                week != "all" and day in over.split("alarming:", 1)[1].split(";")[0]
            )
            if p := above.removeprefix("yes").strip().removeprefix("(").removesuffix(")"):
                k_n = row[f"{model}: alarming" + (" (95% CI)" if model == "adaptive" else "")]
                assert f"{day}: {k_n.split()[0]}, {p}" in over
                marked += 1
    assert marked  # the fixture's replay has a week above 2× the target beyond chance
    header = [m.value for m in at.caption]
    assert any(text.splitlines()[1] in c for c in header)  # the report's header, as printed


def test_adaptive_beside_frozen_and_one_threshold_are_the_printed_figures(
    replays: dict[str, Any], page: Any
) -> None:
    first = replays["order"][0]
    text = replays["runs"][first]
    at = page(replays["root"], replay=first)
    models = frame_with(at, "one threshold: alarming, threshold", "model")
    printed = printed_weeks(text)["all"]
    assert metric(at, "Target") == "5%"
    assert metric(at, "adaptive: alarming") == " ".join(printed[2].split()[:2])
    assert metric(at, "frozen: alarming") == printed[5]
    for model in ("adaptive", "frozen"):
        row = models.loc[model]
        oracle = _line(text, f"{model}, at one threshold")
        level, threshold = row["one threshold: alarming, threshold"].split(", ")
        assert f"the experiment's rule: {level} normal streams alarm, {threshold})" in oracle
        for s in SHORT:
            assert f"{s} {row[f'one threshold: {s}']}" in oracle.split("; fewer")[0]
        if "next level: alarming, threshold" in models.columns:
            up_level, up_threshold = row["next level: alarming, threshold"].split(", ")
            assert f"({up_level} alarm, {up_threshold})" in oracle
            for s in SHORT:
                assert f"{s} {row[f'next level: {s}']}" in oracle.split("; fewer")[1]
        over = _line(text, f"{model}: weeks after the first")
        assert f": {row['weeks above 2× target']}" in over
        assert f"beyond chance (one-sided binomial test, p < 0.05): {row['beyond chance']}" in over
    counts = _line(text, "adaptive model:")
    assert any(counts in c.value for c in at.caption)


def test_the_chart_and_the_run_follow_the_url(replays: dict[str, Any], page: Any) -> None:
    first, second = replays["order"]
    at = page(replays["root"])  # the newest run by default: the second, at a 10% target
    assert at.selectbox(key="w_replay").value == second
    assert metric(at, "Target") == "10%"
    weeks = printed_weeks(replays["runs"][second])
    data = chart_data(at, "rate")
    for _, point in data.iterrows():
        week = next(w for w in weeks if w.startswith(str(point["week"])))
        cells = weeks[week]
        alarming = cells[2] if point["what"] == "adaptive" else cells[3 + len(SHORT) + 1]
        k, n = (int(x) for x in alarming.split()[0].split("/"))
        assert point["rate"] == pytest.approx(k / n)
    assert set(data["what"]) == {"adaptive", "frozen"}
    # the other run by link; a stale link falls back to the newest
    at = page(replays["root"], replay=first)
    assert metric(at, "Target") == "5%"
    at = page(replays["root"], replay="gone")
    assert at.selectbox(key="w_replay").value == second


def test_an_empty_replay_page_says_how_to_fill_it(tmp_path: Path, page: Any) -> None:
    root = tmp_path / "store"
    Store(root).append("calls", simulate(seed=1, sessions=12))
    at = page(root)
    (info,) = at.info
    assert "No replay results in the store" in info.value
    assert "`toolwatch " in info.value and "replay --store" in info.value
