"""``toolwatch train`` / ``score`` / ``scan`` on a real Parquet store, and the time windows."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from test_detection_support import T0, session, table, workload
from toolwatch.cli import main
from toolwatch.collector.store import Store
from toolwatch.detection import NormalModel
from toolwatch.detection.windows import WindowError, default_windows, load_window, parse_window


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    s = Store(tmp_path_factory.mktemp("cli") / "store")
    day = timedelta(days=1)
    s.append("calls", workload(1, 40, tools=8))  # Aug 4-5
    s.append("calls", workload(2, 20, tools=8, start=T0 + 3 * day, prefix="c"))  # Aug 7
    s.append("calls", workload(3, 20, tools=8, start=T0 + 5 * day, prefix="t"))  # Aug 9
    loop = session(
        ["tool03"] * 30,
        name="retry-loop",
        agent="sub",
        gap=2.0,
        failed=True,
        start=(6 * day + timedelta(hours=2)).total_seconds(),
    )
    injected = session(
        ["tool01"] * 12,
        name="injected",
        gap=0.1,
        label="burst",
        start=timedelta(hours=3).total_seconds(),
    )  # in the training window
    s.append("calls", table(loop + injected))
    return s


def test_windows_parse_dates_and_times() -> None:
    w = parse_window("2026-08-04..2026-08-05")
    assert w.start == datetime(2026, 8, 4, tzinfo=UTC)
    assert w.end == datetime(2026, 8, 6, tzinfo=UTC)  # a date-only TO includes that day
    w = parse_window("2026-08-04T12:00..")
    assert w.start == datetime(2026, 8, 4, 12, tzinfo=UTC) and w.end is None
    with pytest.raises(WindowError, match=r"FROM\.\.TO"):
        parse_window("2026-08-04")
    with pytest.raises(WindowError, match="not an ISO date"):
        parse_window("yesterday..today")
    with pytest.raises(WindowError, match="ends before"):
        parse_window("2026-08-05..2026-08-01")


def test_windows_select_whole_normal_sessions(store: Store) -> None:
    train = load_window(store, parse_window("2026-08-04..2026-08-05"))
    sessions = set(train.column("session_id").to_pylist())
    assert "injected" not in sessions  # labelled sessions never train
    assert len(sessions) == 39  # hourly sessions from Aug 4 09:00 to Aug 5 23:00
    everything = load_window(store, parse_window(".."), normal_only=False)
    assert "injected" in set(everything.column("session_id").to_pylist())
    first, second = default_windows(store)
    assert first.end == second.start and first.start is not None
    assert "of sessions" in first.text


def test_train_score_scan_end_to_end(store: Store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "model.json"
    code = main(
        [
            "train",
            "--store",
            str(store.root),
            "--train",
            "2026-08-04..2026-08-05",
            "--calibrate",
            "2026-08-07..2026-08-08",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "operating-point thresholds" in text and str(out) in text
    model = NormalModel.load(out)
    assert model.data["train"]["sessions"] == 39
    assert model.data["train"]["window"]["given"] == "2026-08-04..2026-08-05"
    assert model.data["calibration"]["sessions"] == 20

    scores = tmp_path / "scores.csv"
    code = main(
        [
            "score",
            "--model",
            str(out),
            "--store",
            str(store.root),
            "--from",
            "2026-08-09",
            "--out",
            str(scores),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "above the operating point" in text
    written = pacsv.read_csv(scores)
    assert set(written.column("session_id").to_pylist()) >= {"retry-loop"}
    assert "all_cusum" in written.column_names

    code = main(["scan", "--model", str(out), "--store", str(store.root), "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    top = doc["flagged"][0]
    assert (top["session_id"], top["agent_id"], top["tool"]) == ("retry-loop", "sub", "tool03")
    assert top["statistic"] == "all_cusum" and top["calls_over"] > 10
    assert doc["sessions"] == 82
    code = main(["scan", "--model", str(out), "--store", str(store.root)])
    assert code == 0
    text = capsys.readouterr().out
    assert "sessions flagged" in text and "retry-loop" in text and "the study flagged 3" in text


def test_train_with_default_windows(store: Store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "m.json"
    assert main(["train", "--store", str(store.root), "--out", str(out)]) == 0
    model = NormalModel.load(out)
    assert model.data["train"]["sessions"] == round(81 / 2)  # 81 normal sessions, half train
    capsys.readouterr()


def test_commands_report_bad_input_clearly(store: Store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "toolwatch.normal-model", "version": 1')
    assert main(["score", "--model", str(bad), "--store", str(store.root)]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["scan", "--model", str(tmp_path / "none.json"), "--store", str(store.root)]) == 1
    assert "not found" in capsys.readouterr().err
    assert main(["train", "--store", str(store.root), "--train", "2026-08-04..2026-08-05"]) == 1
    assert "both --train and --calibrate" in capsys.readouterr().err
    code = main(
        [
            "train",
            "--store",
            str(store.root),
            "--train",
            "2030-01-01..2030-01-02",
            "--calibrate",
            "2030-01-03..2030-01-04",
            "--out",
            str(tmp_path / "x.json"),
        ]
    )
    assert code == 1
    assert "has no normal calls" in capsys.readouterr().err
    empty = Store(tmp_path / "empty")
    assert main(["train", "--store", str(empty.root)]) == 1
    assert "0 normal session(s)" in capsys.readouterr().err
    assert main(["score", "--model", str(bad), "--out", str(tmp_path / "x.txt")]) == 1
    assert ".parquet or .csv" in capsys.readouterr().err


def test_scored_window_round_trips_to_parquet(store: Store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    model = NormalModel.fit(load_window(store, parse_window("2026-08-04..2026-08-05")))
    model.calibrate(load_window(store, parse_window("2026-08-07..2026-08-08")))
    path = model.save(tmp_path / "m.json")
    out = tmp_path / "s.parquet"
    assert (
        main(
            [
                "score",
                "--model",
                str(path),
                "--store",
                str(store.root),
                "--to",
                "2026-08-05",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    import pyarrow.parquet as pq

    scored = pq.read_table(out)
    assert isinstance(scored, pa.Table) and "injected" in scored.column("session_id").to_pylist()
    capsys.readouterr()


def test_scan_of_the_simulated_corpus_ranks_the_retry_loop_first(
    tmp_path: Path,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    """The study's scan, on the simulated corpus: the subagent that retries a refused
    ``Agent`` call 32 times is the top-ranked flagged session."""
    simulate = pytest.importorskip("toolwatch.collector.simulate")
    store = Store(tmp_path / "sim")
    store.append("calls", simulate.simulate(0))
    (train_from, train_to), (cal_from, cal_to) = (
        simulate.SPLIT_DATES["train"],
        simulate.SPLIT_DATES["calibration"],
    )
    out = tmp_path / "model.json"
    args = ["train", "--store", str(store.root), "--out", str(out)]
    assert (
        main(
            [*args, "--train", f"{train_from}..{train_to}", "--calibrate", f"{cal_from}..{cal_to}"]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["scan", "--model", str(out), "--store", str(store.root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sessions"] == 422
    top = doc["flagged"][0]
    assert top["tool"] == "Agent" and top["agent_id"] is not None
    assert top["calls_over"] >= 20
    assert len(doc["flagged"]) < 0.05 * doc["sessions"]
