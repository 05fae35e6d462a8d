"""The Detection page's cells at a target other than the run's own against what
``toolwatch experiment --rerun RUN --target-fa X --json`` prints: every rate and interval the
same number, since both resample the streams in the experiment's split order with one function
(``metrics.stream_rates``); a main agent and its subagent are two streams; a run saved before
the stream order was stored is said to have approximate intervals."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from toolwatch.app.dashboard import detection_view as dv
from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard.settings import MAIN_SCRIPT
from toolwatch.cli import main as cli_main
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment import ExperimentConfig, load_calls, run_experiment
from toolwatch.injection.experiment.storage import run_rows, save_result

KINDS = ("burst", "runaway_retry", "control_same_response_burst")
CONFIG = ExperimentConfig(target_fa=0.1, seeds=(0, 1), bootstrap=300, kinds=KINDS)
COMPARED = ("threshold", "fa_reached", "runs", "detected", "rate", "ci_low", "ci_high")


def _save(root: Path, calls: pa.Table) -> str:
    store = Store(root)
    store.append("calls", calls)
    result = run_experiment(load_calls(store), CONFIG)
    save_result(store, result)
    return result.run_id


def _page_cells(root: Path, run_id: str, variant: str, target: float) -> pd.DataFrame:
    """What the page computes at ``target``: its own query, then :func:`dv.cells_at_target`."""
    with q.open_store(root) as con:
        maxima = q.experiment_run_maxima(con, run_id, variant)
    return dv.cells_at_target(maxima, target, CONFIG.bootstrap, CONFIG.bootstrap_seed)


def _cli(root: Path, run_id: str, target: float, capsys: pytest.CaptureFixture[str]) -> Any:
    args = ["experiment", "--store", str(root), "--rerun", run_id, "--target-fa", str(target)]
    assert cli_main([*args, "--json", "--no-save"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["config"]["target_fa"] == target  # the saved run, at the target asked
    return printed


def _mismatches(root: Path, run_id: str, target: float, printed: Any) -> list[str]:
    """Every fa_target cell the CLI printed that the page computes otherwise."""
    found = []
    for variant in ("standard", "no_response_ids"):
        page = _page_cells(root, run_id, variant, target).set_index(["cue_set", "detector", "kind"])
        assert page["ci_exact"].all()
        cli = [c for c in printed["cells"] if c["variant"] == variant and c["mode"] == "fa_target"]
        assert len(cli) == len(page) > 0
        for c in cli:
            mine = page.loc[(c["cue_set"], c["detector"], c["kind"])]
            found += [
                f"{variant} {c['cue_set']}·{c['detector']} {c['kind']} {k}: {c[k]} vs {mine[k]}"
                for k in COMPARED
                if not (c[k] == mine[k] or (c[k] is None and pd.isna(mine[k])))
            ]
    return found


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``toolwatch simulate --sessions 150`` with a run saved at 10 %."""
    root = tmp_path_factory.mktemp("detection_view") / "store"
    return root, _save(root, simulate(seed=0, sessions=150))


@pytest.mark.parametrize("target", [0.05, 0.15, 0.25])
def test_cells_at_another_target_are_the_clis(
    simulated: tuple[Path, str], target: float, capsys: pytest.CaptureFixture[str]
) -> None:
    root, run_id = simulated
    printed = _cli(root, run_id, target, capsys)
    assert _mismatches(root, run_id, target, printed) == []


def test_a_main_agent_and_its_subagent_are_two_streams(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three long test streams renamed: B becomes session A's subagent ``sub``, and C a main
    agent of session ``A/sub`` — the very name B's stream had in ``session_id``, where the
    page took C and B for one stream (one normal stream short, every interval moved)."""
    calls = simulate(seed=3, sessions=150)
    probe = run_experiment(calls, dataclasses.replace(CONFIG, seeds=(0,), bootstrap=0))
    normal = next(r for r in probe.runs if r.kind == "normal")
    mains = [s for s, a in zip(normal.session_ids, normal.agent_ids, strict=True) if a is None]
    a, b, c = mains[:3]
    is_b = pc.equal(calls["session_id"], b)
    agents = pc.if_else(is_b, pa.scalar("sub"), calls["agent_id"])
    sessions = pc.if_else(is_b, pa.scalar(a), calls["session_id"])
    sessions = pc.if_else(pc.equal(sessions, c), pa.scalar(f"{a}/sub"), sessions)
    calls = calls.set_column(calls.schema.get_field_index("session_id"), "session_id", sessions)
    calls = calls.set_column(calls.schema.get_field_index("agent_id"), "agent_id", agents)
    root = tmp_path / "store"
    run_id = _save(root, calls)
    printed = _cli(root, run_id, 0.05, capsys)
    streams = printed["split"]["test"][0]
    assert streams == len(normal.session_ids)  # the renaming moved no stream out of the test
    stored = Store(root).query(
        "SELECT session_id, agent_id FROM experiment_runs WHERE kind = 'normal' AND run_id = ? "
        "AND variant = 'standard' AND cue_set = 'all' AND detector = 'cusum' "
        "AND threshold_mode = 'fa_target' AND session_id IN (?, ?)",
        [run_id, a, f"{a}/sub"],
    )
    assert sorted(stored.to_pylist(), key=str) == sorted(
        [
            {"session_id": a, "agent_id": None},
            {"session_id": f"{a}/sub", "agent_id": "sub"},
            {"session_id": f"{a}/sub", "agent_id": None},
        ],
        key=str,
    )
    page = _page_cells(root, run_id, "standard", 0.05)
    assert set(page["normal_sessions"]) == {streams}
    assert _mismatches(root, run_id, 0.05, printed) == []


def test_a_run_saved_before_the_stream_order_says_its_intervals_are_approximate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its ``experiment_runs`` file lacks ``agent_id`` and ``stream_index`` (as an older
    version wrote it): the view reads them as null, the rates are still exact, and the page
    warns above the table instead of showing other intervals silently."""
    root = tmp_path / "store"
    store = Store(root)
    store.append("calls", simulate(seed=0, sessions=150))
    result = run_experiment(load_calls(store), CONFIG)
    save_result(store, result, runs=False)
    old = run_rows(result).drop_columns(["agent_id", "stream_index"])
    folder = root / "experiment_runs" / f"date={result.created.date().isoformat()}"
    folder.mkdir(parents=True)
    pq.write_table(old, folder / "part-old.parquet")
    target = 0.05
    exact_rates = run_experiment(load_calls(store), dataclasses.replace(CONFIG, target_fa=target))
    page = _page_cells(root, result.run_id, "standard", target)
    assert not page["ci_exact"].any()
    cli = {
        (c.cue_set, c.detector, c.kind): c
        for c in exact_rates.cells
        if c.variant == "standard" and c.mode == "fa_target"
    }
    for row in page.itertuples():
        c = cli[(row.cue_set, row.detector, row.kind)]
        assert (row.rate, row.runs, row.threshold) == (c.rate, c.runs, c.threshold)

    monkeypatch.delenv("TOOLWATCH_MODEL", raising=False)
    monkeypatch.setenv("TOOLWATCH_STORE", str(root))
    at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=60)
    at.run()
    assert not at.exception
    assert not any("approximate" in w.value for w in at.warning)  # the stored target: stored
    at.slider(key="target").set_value(100 * target).run()
    assert not at.exception
    said = [w.value for w in at.warning if "approximate" in w.value]
    assert len(said) == 1 and f"--rerun {result.run_id} --target-fa {target:g}" in said[0]
