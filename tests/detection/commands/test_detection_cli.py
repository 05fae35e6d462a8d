"""``toolwatch train`` / ``score`` / ``scan`` on a real Parquet store, and the time windows."""

from __future__ import annotations

import csv
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from support.detection import T0, session, table, workload
from toolwatch import study
from toolwatch.cli import main
from toolwatch.collector.store.parquet_store import Store
from toolwatch.collector.store.result_formats import MAX_CELL
from toolwatch.detection import NormalModel
from toolwatch.detection.calls.windows import (
    WindowError,
    default_windows,
    load_window,
    parse_window,
)
from toolwatch.detection.model.location import MODEL_IN_STORE
from toolwatch.record import MAX_STRING_BYTES


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
    # default: the study's day shares of Aug 4..Aug 10 (7 days): 4 days train, 1 calibrates
    first, second = default_windows(store)
    assert (first.start, first.end, second.end) == (
        datetime(2026, 8, 4, tzinfo=UTC),
        datetime(2026, 8, 8, tzinfo=UTC),
        datetime(2026, 8, 9, tzinfo=UTC),
    )
    assert (first.text, second.text) == ("first 4 of 7 days", "next 1 of 7 days")


def test_default_windows_fall_back_to_session_shares_when_a_day_window_is_empty(
    tmp_path: Path,
) -> None:
    """Sessions on Aug 4 and Aug 20 only: the calibration days (Aug 13-15) hold none."""
    s = Store(tmp_path / "gappy")
    s.append("calls", workload(4, 6, tools=8, max_calls=8))
    s.append("calls", workload(5, 6, tools=8, max_calls=8, start=T0 + timedelta(days=16)))
    first, second = default_windows(s)
    assert "of sessions" in first.text
    train = load_window(s, first)
    calib = load_window(s, second)
    assert len(set(train.column("session_id").to_pylist())) == 6  # round(12 * 21/42)
    assert len(set(calib.column("session_id").to_pylist())) == 2  # round(12 * 7/42)


def test_train_score_scan_end_to_end(store: Store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "model.json"
    code = main(
        [
            "train",
            "--store",
            str(store.root),
            "--split-dates",
            "2026-08-05,2026-08-08",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "operating-point thresholds" in text and str(out) in text
    model = NormalModel.load(out)
    # streams by their first call: Aug 4 09:00 .. Aug 5 23:00 train; Aug 6 00:00 + Aug 7
    # calibrate (the workload's sessions have subagents: a stream each)
    assert (model.data["train"]["sessions"], model.data["train"]["streams"]) == (39, 46)
    assert model.data["train"]["window"]["given"] == "--split-dates 2026-08-05,2026-08-08"
    assert model.data["calibration"]["sessions"] == 21

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
    # times as every CSV of the product writes them (``toolwatch sql --format csv``): a space
    # and ``+00:00``, where Arrow's own writer wrote ``…09:00:00.000000000Z``
    header, first = scores.read_text().splitlines()[:2]
    stamp = next(csv.reader([first]))[header.split(",").index("start_time")]
    assert re.fullmatch(r"2026-08-\d\d \d\d:\d\d:\d\d(\.\d*[1-9])?\+00:00", stamp), stamp
    assert pa.types.is_timestamp(written.column("start_time").type)  # still read as a time
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
    assert "streams flagged, in" in text and "retry-loop" in text and "the study: 3 of 422" in text
    # the same split options: only the test split (what the model never saw) is scanned
    split = ["--split-dates", "2026-08-05,2026-08-08"]
    code = main(["scan", "--model", str(out), "--store", str(store.root), *split, "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["sessions"], doc["streams"]) == (21, 26)
    assert doc["flagged"][0]["session_id"] == "retry-loop"
    long_only = [*split, "--min-calls", "25"]
    assert (
        main(["scan", "--model", str(out), "--store", str(store.root), *long_only, "--json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["streams"] < 26 and doc["flagged"][0]["session_id"] == "retry-loop"


def test_train_with_default_windows(store: Store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "m.json"
    assert main(["train", "--store", str(store.root), "--out", str(out)]) == 0
    model = NormalModel.load(out)
    # the first 4 of the 7 days: Aug 4-5 (40 sessions) and Aug 7 until midnight (15 of 20)
    assert (model.data["train"]["sessions"], model.data["train"]["streams"]) == (40 + 15, 70)
    assert model.data["calibration"]["sessions"] == 5  # Aug 8, 00:00-04:00
    given = model.data["train"]["window"]["given"]
    assert given == "--split-dates 2026-08-07,2026-08-08 (the default rule)"
    capsys.readouterr()


def test_train_needs_no_test_split_and_says_it_is_empty(  # type: ignore[no-untyped-def]
    store: Store, tmp_path: Path, capsys
) -> None:
    # training never reads the test split: it was refused ("empty test split", exit 1)
    base = ["train", "--store", str(store.root), "--out", str(tmp_path / "m.json")]
    assert main([*base, "--split-dates", "2026-08-07,2026-08-31"]) == 0
    out, err = capsys.readouterr()
    data = NormalModel.load(tmp_path / "m.json").data
    assert (data["train"]["streams"], data["calibration"]["streams"]) == (70, 34)  # every one
    assert "test split       0 streams" in out
    assert err.splitlines()[0] == (
        "toolwatch train: the test split is empty (no stream starts after the calibration "
        "split): the model is trained, but `toolwatch experiment` and `replay` with these "
        "options have nothing to test"
    )
    assert "Traceback" not in err and "warning: the calibration split holds 34 streams" in err
    assert main([*base, "--split-dates", "2026-08-07,2026-08-08", "--min-calls", "1000"]) == 0
    line = capsys.readouterr().err.splitlines()[0]
    assert line.startswith("toolwatch train: the test split is empty (none of its ")
    assert line.endswith(
        " has >= 1,000 calls, client artefacts aside): the model is trained, "
        "but `toolwatch experiment` and `replay` with these options have "
        "nothing to test"
    )
    # the commands that test on it still refuse it
    assert (
        main(
            [
                "scan",
                "--store",
                str(store.root),
                "--split-dates",
                "2026-08-07,2026-08-31",
                "--model",
                str(tmp_path / "m.json"),
            ]
        )
        == 1
    )
    assert "empty test split" in capsys.readouterr().err


def test_commands_report_bad_input_clearly(store: Store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "toolwatch.normal-model", "version": 1')
    assert main(["score", "--model", str(bad), "--store", str(store.root)]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["scan", "--model", str(tmp_path / "none.json"), "--store", str(store.root)]) == 1
    assert "not found" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # one value where two are needed: argparse says so
        main(["train", "--store", str(store.root), "--split-shares", "0.5"])
    capsys.readouterr()
    code = main(
        [
            "train",
            "--store",
            str(store.root),
            "--split-dates",
            "2030-01-01,2030-01-02",
            "--out",
            str(tmp_path / "x.json"),
        ]
    )
    assert code == 1  # every stream trains: nothing to calibrate on
    err = capsys.readouterr().err
    assert "calibration split holds no calls" in err and "Traceback" not in err
    empty = Store(tmp_path / "empty")
    assert main(["train", "--store", str(empty.root)]) == 1
    assert "holds no (uninjected) calls" in capsys.readouterr().err
    assert main(["score", "--model", str(bad), "--out", str(tmp_path / "x.txt")]) == 2
    assert ".parquet or .csv" in capsys.readouterr().err


def test_no_progress_bar_reaches_a_stderr_that_is_no_terminal(  # type: ignore[no-untyped-def]
    store: Store, tmp_path: Path, capsys
) -> None:
    """train, scan and score drew their bars into a redirected stderr ('train:  25%|██▌ …' and
    carriage returns in a log, before the one-line error), unlike experiment and import."""
    model = str(tmp_path / "m.json")
    root = str(store.root)
    runs = [
        ["train", "--store", root, "--split-shares", "0.6,0.2", "--out", model],
        ["scan", "--store", root, "--model", model, "--split-shares", "0.6,0.2"],
        ["score", "--store", root, "--model", model, "--out", str(tmp_path / "s.csv")],
    ]
    for args in runs:
        assert main(args) == 0
        err = capsys.readouterr().err
        assert "\r" not in err and "%|" not in err
        assert not any(line.startswith(f"{args[0]}:") for line in err.splitlines())
    # an error raised while the bar runs: one line, nothing before it
    assert main(["train", "--store", root, "--split-shares", "0.6,0", "--out", model]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("toolwatch train: the calibration split holds no calls: ")


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
    """The study's scan, on the simulated corpus, with every default: ``train`` splits the 42
    days as the study did (its split sizes, counted in streams) and writes the store's model,
    ``scan`` reads it; the subagent that retries a refused ``Agent`` call 32 times ranks first."""
    simulate = pytest.importorskip("toolwatch.collector.sources.simulator.workload")
    store = Store(tmp_path / "sim")
    store.append("calls", simulate.simulate(0))
    assert main(["train", "--store", str(store.root)]) == 0
    capsys.readouterr()
    model = NormalModel.load(store.root / MODEL_IN_STORE)
    for split in ("train", "calibration"):
        data = model.data[split]
        assert (data["streams"], data["calls"]) == study.SPLITS[split]
    assert main(["scan", "--store", str(store.root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["streams"], doc["calls"]) == (study.CORPUS["sessions"], study.CORPUS["calls"])
    top = doc["flagged"][0]
    assert top["tool"] == "Agent" and top["agent_id"] is not None
    assert top["calls_over"] >= 20 and top["cue"] in ("failure", "time")
    assert doc["streams_flagged"] >= len(doc["flagged"])
    assert doc["streams_flagged"] < 0.05 * doc["streams"]


def test_a_store_of_calls_without_sizes_trains_scores_and_scans(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # plain semantic-conventions spans store null sizes (ARCHITECTURE, "Senders"): every
    # command refused the whole store ("column 'input_bytes' has N null values")
    calls = pa.concat_tables(
        [workload(1, 40, tools=8), workload(2, 30, tools=8, start=T0 + timedelta(days=3))]
    )
    index = calls.schema.get_field_index("input_bytes")
    calls = calls.set_column(index, "input_bytes", pa.nulls(calls.num_rows, pa.int64()))
    store = Store(tmp_path / "store")
    store.append("calls", calls)
    root = str(store.root)
    assert main(["train", "--store", root, "--split-shares", "0.5,0.2", "--adaptive"]) == 0
    assert "operating-point thresholds" in capsys.readouterr().out
    assert main(["score", "--store", root]) == 0
    assert f"{calls.num_rows:,} calls" in capsys.readouterr().out
    assert main(["scan", "--store", root, "--json", "--no-save"]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == calls.num_rows


def test_the_collector_distrusts_span_times_ahead_of_its_clock(tmp_path: Path) -> None:
    """``toolwatch collector --model`` scores with the clock guard (a replay does not)."""
    import argparse

    from toolwatch.detection.commands import collector

    model = NormalModel.fit(workload(1, 20, tools=8)).calibrate(workload(2, 8, tools=8))
    path = model.save(tmp_path / "model.json")
    args = argparse.Namespace(
        model=path, webhook=None, no_listing_alerts=False, rules=None, max_open_streams=None
    )
    scorer = collector._scorer(args, Store(tmp_path / "s"), None)
    assert scorer.clock_ahead_s == collector.CLOCK_AHEAD_S == 300.0


def test_the_collector_caps_the_live_scorers_open_streams(tmp_path: Path) -> None:
    import argparse

    from toolwatch.detection.commands import collector
    from toolwatch.detection.scoring.adaptive import MAX_OPEN_STREAMS

    model = NormalModel.fit(workload(1, 20, tools=8)).calibrate(workload(2, 8, tools=8))
    path = model.save(tmp_path / "model.json")
    parser = argparse.ArgumentParser()
    collector.add_arguments(parser)
    store = Store(tmp_path / "s")
    args = parser.parse_args(["--model", str(path), "--max-open-streams", "3"])
    assert collector._scorer(args, store, None).scorer.max_open == 3
    args = parser.parse_args(["--model", str(path)])
    assert collector._scorer(args, store, None).scorer.max_open == MAX_OPEN_STREAMS == 100_000


@pytest.mark.parametrize(
    ("argv", "env", "code", "message"),
    [
        # option combinations: bad usage, exit 2 (they exited 1 through SystemExit)
        (["--max-open-streams", "3"], {}, 2, "--max-open-streams needs --model"),
        (
            ["--webhook", "http://127.0.0.1:9/x", "--no-listing-alerts"],
            {},
            2,
            "--webhook needs --model, --rules or listing alerts (alerts come from them)",
        ),
        # one poster for every alert kind, made before any: a URL it cannot post to is usage
        (
            ["--webhook", "ftp://example.org/x"],
            {},
            2,
            "--webhook: webhook URL must be http(s)://host/..., got 'ftp://example.org/x'",
        ),
        (
            ["--token-file", "{token}", "--token", "abc"],
            {},
            2,
            "give --token-file or --token, not both",
        ),
        (["--token", " "], {}, 2, "--token is empty (leave it out to run without a token)"),
        # an empty variable is refused, never read as "no token" (that would open the port)
        ([], {"TOOLWATCH_TOKEN": ""}, 2, "$TOOLWATCH_TOKEN is set but empty; unset it"),
        ([], {"TOOLWATCH_TOKEN": " \t"}, 2, "$TOOLWATCH_TOKEN is set but empty; unset it"),
        # what the options point at: the command could not do its job, exit 1
        (["--model", "{missing}"], {}, 1, "model file {missing} not found"),
        (["--model", "{token}"], {}, 1, "cannot load model {token}: "),
        (
            ["--token-file", "{missing}"],
            {},
            1,
            "cannot read --token-file {missing}: No such file or directory",
        ),
        (["--token-file", "{empty}"], {}, 1, "--token-file {empty} is empty"),
        (["--token-file", "{two}"], {}, 1, "--token-file {two} has more than one line"),
    ],
)
def test_collector_usage_errors_exit_2_and_data_errors_exit_1(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    env: dict[str, str],
    code: int,
    message: str,
) -> None:
    """Every collector refusal is one line; a combination of options is bad usage (2) like
    every other command's, a file or model it cannot use is 1. Nothing listens either way."""
    where = {name: tmp_path / name for name in ("token", "empty", "two", "missing")}
    where["token"].write_text("s3cret\n")
    where["empty"].write_text("\n")
    where["two"].write_text("a\nb\n")
    monkeypatch.delenv("TOOLWATCH_TOKEN", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    store = tmp_path / "store"
    args = [a.format(**where) for a in argv]
    got = main(["collector", "--store", str(store), "--port", "0", *args])
    err = capsys.readouterr().err
    assert (got, err.count("\n")) == (code, 1), err
    assert err.startswith(f"toolwatch collector: {message.format(**where)}"), err
    assert "s3cret" not in err


def test_an_empty_calibration_split_names_the_split_and_the_days(  # type: ignore[no-untyped-def]
    store: Store, tmp_path: Path, capsys
) -> None:
    """Split dates after the data put every stream in training, and train said only 'the
    calibration split holds no calls: give it a share or days' (after fitting), where split
    dates before the data named the split and the days the streams start on."""
    out = tmp_path / "x.json"
    root = str(store.root)
    normal = store.query(
        "SELECT count(DISTINCT (session_id, agent_id)) AS n FROM calls WHERE label IS NULL"
    )["n"][0].as_py()
    after = ["train", "--store", root, "--split-dates", "2030-01-01,2030-01-02", "--out", str(out)]
    assert main(after) == 1 and not out.exists()
    assert capsys.readouterr().err.splitlines() == [
        f"toolwatch train: the calibration split holds no calls: {normal} train, 0 calibration, "
        "0 test streams by --split-dates 2030-01-01,2030-01-02; the streams start "
        "2026-08-04..2026-08-10: give calibration a share (--split-shares) or days "
        "(--split-dates) within them"
    ]
    shares = ["train", "--store", root, "--split-shares", "0.5,0", "--out", str(out)]
    assert main(shares) == 1
    err = capsys.readouterr().err
    assert f"{normal // 2} train, 0 calibration, " in err and "by --split-shares 0.5,0.0;" in err


def test_scan_cuts_a_long_tool_name_and_says_so(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A stream calling a tool with a 4 KiB name (the longest a record holds) made every row of
    scan's table 4 KiB wide: the statistic, cue, peak and threshold of each flagged stream
    stood 4,000 characters right of its session. The cell is cut as `toolwatch sql` cuts one,
    a line says so, and --json keeps the name whole."""
    name = "x" * MAX_STRING_BYTES
    store = Store(tmp_path / "long")
    day = timedelta(days=1)
    store.append("calls", workload(1, 40, tools=8))
    store.append("calls", workload(2, 20, tools=8, start=T0 + 3 * day, prefix="c"))
    store.append("calls", workload(3, 20, tools=8, start=T0 + 5 * day, prefix="t"))
    start = (6 * day + timedelta(hours=2)).total_seconds()
    store.append(
        "calls", table(session([name] * 30, name="loop", gap=2.0, failed=True, start=start))
    )
    model = str(tmp_path / "m.json")
    split = ["--split-dates", "2026-08-05,2026-08-08"]
    assert main(["train", "--store", str(store.root), *split, "--out", model]) == 0
    capsys.readouterr()
    scan = ["scan", "--store", str(store.root), "--model", model, "--no-save"]
    assert main(scan) == 0
    lines = capsys.readouterr().out.splitlines()
    (row,) = [line for line in lines if " loop " in line]
    cell = "x" * (MAX_CELL - 1) + "…"
    assert f" {cell} " in row and name not in row and len(row) < 250
    assert "(1 tool name longer than 80 characters cut to it; --json gives them whole)" in lines
    assert main([*scan, "--json"]) == 0
    flagged = json.loads(capsys.readouterr().out)["flagged"]
    assert [f["tool"] for f in flagged if f["session_id"] == "loop"] == [name]
