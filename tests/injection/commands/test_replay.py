"""``toolwatch replay`` saves its result (the dashboard's Replay page reads it), re-runs a saved
run exactly, and says before the replay when it cannot write the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.disk import read_only
from toolwatch.cli import main as cli_main
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment.replay_report import render
from toolwatch.injection.experiment.replay_storage import load_replay


def _replay(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(["replay", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _table(out: str) -> str:
    """The printed report without its timing line and the saved-as line."""
    return "\n".join(
        line
        for line in out.splitlines()
        if not line.startswith(("replay time:", "saved as run", "data:"))
    )


def test_replay_saves_its_result_and_reruns_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "store")
    store.append("calls", simulate(seed=2, scale=0.25))
    root = str(store.root)
    base = ["--store", root, "--split-shares", "0.44,0.07", "--seeds", "1", "--kinds", "burst"]
    code, out, err = _replay(base, capsys)
    assert code == 0, err
    saved = out.strip().splitlines()[-1]
    assert saved.startswith("saved as run ") and f"--store {root} --rerun " in saved
    run_id = saved.split()[3]
    data = load_replay(store, run_id)
    assert _table(render(data)) in _table(out)  # what the store holds is what was printed
    # a re-run: a new run beside the first, the same configuration and figures
    code, again, err = _replay(["--store", root, "--rerun", run_id], capsys)
    assert code == 0, err
    assert "changed" not in err
    assert _table(again) == _table(out)
    other = again.strip().splitlines()[-1].split()[3]
    assert other != run_id and load_replay(store, other)["config"] == data["config"]
    # --no-save adds nothing
    count = "SELECT count(DISTINCT run_id) AS n FROM replays"
    code, _, err = _replay([*base, "--no-save"], capsys)
    assert code == 0, err
    assert store.query(count).to_pylist() == [{"n": 2}]
    # a store it cannot write: said before the replay, in one line
    read_only(monkeypatch, store.root)
    code, out, err = _replay(base, capsys)
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [
        f"toolwatch replay: cannot write the store {root}: Read-only file system "
        "(--no-save runs the replay without saving it)"
    ]
    code, _, err = _replay(["--store", root, "--rerun", "nope"], capsys)
    assert code == 1 and err.strip().splitlines() == [
        f"toolwatch replay: no saved replay with run id 'nope' in {root}"
    ]


def test_a_replay_that_fails_says_one_line_without_a_progress_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stderr that is no terminal got the bar ('\\rreplay:   0%|…') before the error line."""
    store = Store(tmp_path / "store")
    store.append("calls", simulate(seed=2, scale=0.25))
    args = ["--store", str(store.root), "--split-shares", "0.9,0.0999", "--no-save"]
    code, out, err = _replay(args, capsys)
    assert code == 1 and out == ""
    assert err.splitlines() == [
        "toolwatch replay: empty test split: 95 train, 11 calibration, 0 test streams; the "
        "streams start 2026-08-04..2026-09-14"
    ]


def test_an_option_a_rerun_would_ignore_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A re-run repeats the saved configuration; ``--half-life-days 7`` beside it was dropped
    without a word. Where to read and how to print are still the user's."""
    rerun = ["--store", str(tmp_path / "s"), "--rerun", "r1"]
    code, out, err = _replay([*rerun, "--half-life-days", "7", "--statistic", "all_ewma"], capsys)
    assert (code, out) == (2, "") and err.strip().splitlines() == [
        "toolwatch replay: --statistic, --half-life-days cannot be given with --rerun: a re-run "
        "repeats the saved run's configuration (drop --rerun to run with new options)"
    ]
    code, _, err = _replay([*rerun, "--json", "--no-save"], capsys)
    assert code == 1 and "cannot be given" not in err  # read as asked: the run is not there
