"""The dashboard: every page under ``streamlit.testing`` on a real small store.

The store is built the way a user builds one: a simulated corpus (``simulate``), a model fitted
and calibrated on it and saved where the app looks (``<store>/models/model.json``), the
injection experiment saved by ``save_result``, live alerts from the ``LiveScorer``, and a
workbench suite run by the real CLI (its calls arrive through the instrumented client and an
in-process collector). Each test then compares what a page shows with the store, read by
independent SQL.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import os
import re
import shlex
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from support.app import (
    KINDS,
    chart_data,
    frame_with,
    interval,
    metric,
    pct0,
    printed_stats,
    rows,
    shown_tables,
)
from support.paths import REPO
from toolwatch import study
from toolwatch.app.commands.app import streamlit_command
from toolwatch.app.dashboard import detection_view as dv
from toolwatch.app.dashboard.settings import MAIN_SCRIPT, MODEL_IN_STORE, load_settings
from toolwatch.cli import main as cli_main
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.stats.corpus import corpus_stats
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel, score_calls
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.injection.experiment.formats import pct
from toolwatch.injection.experiment.report import label
from toolwatch.injection.spans.kinds import KINDS as KINDS_ALL

SCENARIOS = REPO / "scenarios"
TIMEOUT = 60


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.delenv("TOOLWATCH_MODEL", raising=False)
    monkeypatch.delenv("TOOLWATCH_STORE", raising=False)
    yield monkeypatch


def app(
    env: pytest.MonkeyPatch,
    root: Path,
    page: str | None = None,
    params: dict[str, str] | None = None,
    **extra: str,
) -> AppTest:
    """The app on ``root``, on ``page``, opened with the URL parameters ``params``."""
    env.setenv("TOOLWATCH_STORE", str(root))
    for key, value in extra.items():
        env.setenv(key, value)
    at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=TIMEOUT)
    at.query_params.update(params or {})
    at.run()
    if page is not None:
        at.switch_page(page)
        at.query_params.update(params or {})
        at.run()
    return at


def detection_table(at: AppTest) -> pd.DataFrame:
    return frame_with(at, "detected (95% CI)", "kind")


def ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# ------------------------------------------------------------------------------ detection


def stored_cells(root: Path, variant: str, mode: str) -> dict[str, dict[str, Any]]:
    found = rows(
        root,
        "SELECT * FROM experiments WHERE variant = ? AND cue_set = 'all' AND detector = 'cusum' "
        "AND threshold_mode = ?",
        [variant, mode],
    )
    return {r["kind"]: r for r in found}


def test_detection_table_matches_the_stored_experiment(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    root = built["root"]
    at = app(env, root)
    ok(at)
    assert at.title[0].value == "Detection"
    table = detection_table(at)
    cells = stored_cells(root, "standard", "fa_target")
    assert set(table.index) == {label(k) for k in KINDS}
    for kind, c in cells.items():
        row = table.loc[label(kind)]
        assert row["detected (95% CI)"] == interval(c["rate"], c["ci_low"], c["ci_high"])
        assert row["runs"] == f"{c['detected']}/{c['runs']}"
        assert row["AUC"] == f"{c['auc']:.2f}"
    # one threshold for every row: the false-alarm rate is said once, not in every row
    assert "false alarms reached" not in table.columns
    rate, lo, hi = study.DETECTION_ALL_CUSUM["burst"]
    assert table.loc[label("burst"), "study: detected"] == interval(rate, lo, hi)
    assert table.loc[label("burst"), "study: AUC"] == f"{study.AUC['burst']:.2f}"
    any_cell = next(iter(cells.values()))
    n = any_cell["normal_sessions"]
    assert metric(at, "False alarms reached") == f"{100 * any_cell['fa_reached']:.1f}%"
    assert metric(at, "Normal streams alarming") == f"{round(any_cell['fa_reached'] * n)} / {n}"
    assert metric(at, "Threshold") == f"{any_cell['threshold']:.2f}"
    bars = chart_data(at, "study_rate")
    assert dict(zip(bars["kind"], bars["rate"], strict=True)) == pytest.approx(
        {k: c["rate"] for k, c in cells.items()}
    )


def _maxima(root: Path, variant: str = "standard") -> dict[str, list[float]]:
    found = rows(
        root,
        "SELECT kind, window_max FROM experiment_runs WHERE variant = ? AND cue_set = 'all' "
        "AND detector = 'cusum' AND threshold_mode = 'fa_target'",
        [variant],
    )
    out: dict[str, list[float]] = {}
    for r in found:
        out.setdefault(r["kind"], []).append(r["window_max"])
    return out


def test_detection_at_another_target_follows_the_threshold_rule(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    root = built["root"]
    at = app(env, root)
    at.slider(key="target").set_value(20.0).run()
    ok(at)
    maxima = _maxima(root)
    normal = np.array(maxima.pop("normal"))
    # smallest threshold among the normal maxima (and ±inf) keeping <= 20 % of them above it
    candidates = sorted({-math.inf, math.inf, *normal.tolist()})
    threshold = next(h for h in candidates if np.mean(normal > h) <= 0.2 + 1e-12)
    table = detection_table(at)
    for kind, values in maxima.items():
        hits = int(np.sum(np.array(values) > threshold))
        row = table.loc[label(kind)]
        assert row["runs"] == f"{hits}/{len(values)}"
        assert row["detected (95% CI)"].startswith(pct0(hits / len(values)) + " (")
    reached = f"false alarms reached: {100 * np.mean(normal > threshold):.1f}%"
    assert any(reached in c.value for c in at.caption)
    assert metric(at, "Threshold") == f"{threshold:.2f}"
    assert metric(at, "Target") == "20.0%"
    assert any("Evaluated at 20.0%" in c.value for c in at.caption)


def test_detection_operating_point_and_ablation(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    root = built["root"]
    at = app(env, root)
    at.radio(key="w_mode").set_value("operating").run()
    ok(at)
    assert at.query_params["mode"] == "operating"  # the choice is in the URL
    table = detection_table(at)
    for kind, c in stored_cells(root, "standard", "operating_point").items():
        assert table.loc[label(kind), "detected (95% CI)"] == interval(
            c["rate"], c["ci_low"], c["ci_high"]
        )
        assert metric(at, "False alarms reached") == f"{100 * c['fa_reached']:.1f}%"
    at.radio(key="w_mode").set_value("target").run()
    at.radio(key="w_variant").set_value("no_response_ids").run()
    ok(at)
    table = detection_table(at)
    for kind, c in stored_cells(root, "no_response_ids", "fa_target").items():
        assert table.loc[label(kind), "runs"] == f"{c['detected']}/{c['runs']}"


def test_detection_warns_where_a_control_is_detected_above_the_false_alarms(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """dev-real's later users (one pace trains, another tests): the time cue detects the
    other-normal control far above its false alarms; the page says so for time, not for all."""
    from support.dev_real import later_users_experiment
    from toolwatch.injection.experiment.storage import save_result
    from toolwatch.injection.experiment.validity import control_breaches

    result = later_users_experiment()
    breach = control_breaches(result)[("time", "point")]
    root = tmp_path / "store"
    save_result(Store(root), result)
    at = app(env, root, params={"cue_set": "time", "detector": "point"})
    ok(at)
    warnings = [w.value for w in at.warning]
    assert any(
        "time·point detects control: other normal 8 in "
        f"{interval(breach.rate, breach.ci_low, breach.ci_high)}"
        in w
        and "reacts to the insertion itself" in w
        for w in warnings
    ), warnings
    assert any("time·point" in c.value and "react to the insertion" in c.value for c in at.caption)
    at = app(env, root, params={"cue_set": "all", "detector": "cusum"})
    ok(at)
    assert not any("insertion itself" in w.value for w in at.warning)


def test_detection_roc_areas_and_latency(built: dict[str, Any], env: pytest.MonkeyPatch) -> None:
    root = built["root"]
    at = app(env, root)
    ok(at)
    maxima = _maxima(root)
    normal = np.array(maxima.pop("normal"))
    roc = frame_with(at, "AUC, sessions (all·cusum)", "kind")
    for kind, values in maxima.items():
        runs = np.array(values)
        # P(run max > normal max), ties half: pairwise, independent of the app's ranking
        greater = (runs[:, None] > normal[None, :]).mean()
        ties = (runs[:, None] == normal[None, :]).mean()
        assert roc.loc[label(kind), "AUC, sessions (all·cusum)"] == f"{greater + ties / 2:.2f}"
    per_call = stored_cells(root, "standard", "fa_target")
    for kind, c in per_call.items():
        assert roc.loc[label(kind), "AUC per call (all)"] == f"{c['auc']:.2f}"
    curves = chart_data(at, "false_alarm")
    assert set(curves["kind"]) == set(KINDS)
    for _, part in curves.groupby("kind"):
        assert part["false_alarm"].max() == pytest.approx(1.0)
        assert part["false_alarm"].min() == pytest.approx(0.0)
    latency = frame_with(at, "detected_runs", "kind")
    expected = rows(
        root,
        "SELECT kind, count(*) AS n, median(latency) AS med FROM experiment_runs "
        "WHERE variant = 'standard' AND cue_set = 'all' AND detector = 'cusum' "
        "AND threshold_mode = 'fa_target' AND kind <> 'normal' AND detected GROUP BY kind",
    )
    assert expected
    for r in expected:
        assert latency.loc[label(r["kind"]), "detected_runs"] == f"{r['n']:,}"
        assert latency.loc[label(r["kind"]), "median"] == f"{r['med']:g}"
    assert latency.loc[label("burst"), "study: median"] == "1 (time·point)"


def test_detection_split_counts_streams_and_the_rerun_names_the_store(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    """The split saved with the run counts streams (as the CLI's "ours (streams / calls)"),
    written as every count is; the re-run command reads the same store, not the default."""
    root = built["root"]
    at = app(env, root)
    ok(at)
    split = json.loads(
        rows(
            root, "SELECT split_json FROM experiments WHERE run_id = ? LIMIT 1", [built["run_id"]]
        )[0]["split_json"]
    )
    table = shown_tables(at)["split"].frame.set_index("split")
    assert "sessions" not in table.columns
    for name, shown in (("train", "train"), ("calibration", "calibration"), ("test", TEST)):
        streams, calls = split[name]
        assert table.loc[shown, "streams"] == f"{streams:,}"
        assert table.loc[shown, "calls"] == f"{calls:,}"
        assert table.loc[shown, "study: calls"] == f"{study.SPLITS[name][1]:,}"
    assert any(split[n][1] >= 1_000 for n in ("train", "test"))  # a separator is exercised
    rerun = next(c.value for c in at.caption if c.value.startswith("Re-run exactly"))
    command = shlex.split(rerun.split("`")[1])
    assert command == ["toolwatch", "experiment", "--store", str(root), "--rerun", built["run_id"]]


TEST = f"test (≥ {study.TEST_MIN_CALLS} calls)"


def test_detection_split_lists_the_rows_the_experiment_printed(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page listed train, calibration and "test" while `toolwatch experiment` prints the
    long test streams, the short ones not injected, the client artefacts kept apart and the
    total (which the rows add up to); the page now lists the same rows with the same numbers
    (one function, ``split.split_rows``), on a run with every kind of row."""
    root = tmp_path / "store"
    calls = simulate(seed=2, scale=0.25)
    subagent = [a is not None for a in calls["agent_id"].to_pylist()]
    quirk = pa.array(["warmup_agent" if s else None for s in subagent], pa.string())
    at_quirk = calls.schema.get_field_index("client_quirk")
    Store(root).append("calls", calls.set_column(at_quirk, "client_quirk", quirk))
    assert cli_main(
        ["experiment", "--store", str(root), "--split-shares", "0.44,0.07", "--seeds", "1",
         "--bootstrap", "0", "--kinds", "burst", "--no-ablation"]
    ) == 0  # fmt: skip
    lines = capsys.readouterr().out.split("\n\n")[0].splitlines()
    header = lines.index(next(line for line in lines if line.startswith("split ")))
    printed = {}
    for line in lines[header + 2 :]:
        name, ours, theirs = re.split(r" {2,}", line.strip())
        printed[name] = (*ours.split(" / "), *(theirs.split(" / ") if theirs != "–" else "––"))
    assert list(printed) == [
        "train", "calibration", TEST, "test (< 30 calls, not injected)",
        "client artefacts (kept apart)", "total",
    ]  # fmt: skip
    at = app(env, root)
    ok(at)
    table = shown_tables(at)["split"].frame.set_index("split")
    assert list(table.index) == list(printed)
    columns = ["streams", "calls", "study: sessions", "study: calls"]
    shown = {name: tuple(table.loc[name, columns]) for name in table.index}
    # the CLI writes the study's sessions without a separator (422), the page as every count
    assert shown == {
        name: (*cells[:2], *(c if c == "–" else f"{int(c.replace(',', '')):,}" for c in cells[2:]))
        for name, cells in printed.items()
    }


def test_cells_at_the_stored_target_equal_the_stored_cells(built: dict[str, Any]) -> None:
    root = built["root"]
    maxima = pd.DataFrame(
        rows(
            root,
            "SELECT cue_set, detector, kind, session_id, window_max FROM experiment_runs "
            "WHERE variant = 'standard' AND threshold_mode = 'fa_target'",
        )
    )
    cells = dv.cells_at_target(maxima, 0.05, 200, 0)
    stored = pd.DataFrame(
        rows(
            root,
            "SELECT * FROM experiments WHERE variant = 'standard' AND threshold_mode = 'fa_target'",
        )
    )
    merged = cells.merge(stored, on=["cue_set", "detector", "kind"], suffixes=("", "_stored"))
    assert len(merged) == len(stored) == 18 * len(KINDS)  # 15 of the study's + 3 novelty
    for col in ("rate", "threshold", "fa_reached", "runs", "detected"):
        assert np.allclose(merged[col], merged[f"{col}_stored"]), col
    assert ((merged["ci_low"] <= merged["rate"]) & (merged["rate"] <= merged["ci_high"])).all()


# ------------------------------------------------------------------------------ sessions


def stream_key(session_id: str, agent_id: Any) -> tuple[str, str]:
    """How the stream list names a stream: (session id, stream column); a main agent's
    ``agent_id`` is None (NaN in a pandas frame)."""
    return session_id, f"subagent {agent_id}" if isinstance(agent_id, str) else "main agent"


def listed(at: AppTest) -> pd.DataFrame:
    """The stream list as drawn (text cells under the frame's column names)."""
    return shown_tables(at)["streams"].frame


def listed_streams(at: AppTest) -> set[tuple[str, str]]:
    frame = listed(at)
    return set(zip(frame["session_id"], frame["stream"], strict=True))


def test_sessions_list_streams_filters_and_flags(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    root = built["root"]
    at = app(env, root, "sessions_page.py")
    ok(at)
    streams = rows(
        root,
        "SELECT session_id, agent_id, any_value(source) AS source, "
        "count(*) FILTER (WHERE label IS NOT NULL) AS labelled "
        "FROM calls GROUP BY session_id, agent_id",
    )
    every = {stream_key(r["session_id"], r["agent_id"]) for r in streams}
    subagents = {stream_key(r["session_id"], r["agent_id"]) for r in streams if r["agent_id"]}
    assert subagents, "the fixture's corpus has subagents"
    # a subagent shares its parent's session id: one row per stream, not per session
    assert len({sid for sid, _ in every}) < len(every)
    drawn = listed(at)
    assert len(drawn) == len(every) and listed_streams(at) == every
    injected = len({sid for sid, _ in every} & {r["session_id"] for r in streams if r["labelled"]})
    assert injected  # the Corpus facts leave these sessions out, and the line says so
    sessions = len({sid for sid, _ in every})
    assert any(
        f"in {sessions:,} sessions ({injected:,} holding injected calls, which the Corpus facts "
        "and `toolwatch stats` leave out)" in c.value
        for c in at.caption
    )
    alerts = rows(root, "SELECT session_id, agent_id, count(*) AS n FROM alerts GROUP BY ALL")
    by_stream = drawn.set_index(["session_id", "stream"])
    for r in alerts:
        assert by_stream.loc[stream_key(r["session_id"], r["agent_id"]), "alerts"] == f"{r['n']:,}"
    # the scan's flags (read from the stored stream scores) are the streams whose statistic
    # goes above the threshold, scored here independently
    model: NormalModel = built["model"]
    scored = score_calls(model, Store(root).query("SELECT * EXCLUDE (date) FROM calls"))
    over = scored.to_pandas()
    over = over[over["all_cusum"] > model.threshold("all", "cusum")]
    scanned = {stream_key(s, a) for s, a in zip(over["session_id"], over["agent_id"], strict=True)}
    alerted = {stream_key(r["session_id"], r["agent_id"]) for r in alerts}
    # the list ranks streams, `toolwatch scan` sessions: the page says so, with the counts
    sessions = {sid for sid, _ in scanned}
    assert len(sessions) < len(scanned), "the fixture has a session flagged in two streams"
    note = next(c.value for c in at.caption if c.value.startswith("One row per stream"))
    assert "`toolwatch scan` lists each flagged session once, by its strongest stream" in note
    assert note.endswith(
        f"here {len(scanned)} streams flagged by the scan in {len(sessions)} sessions."
    ), note
    at.selectbox(key="w_flag").set_value("flagged").run()
    ok(at)
    assert at.query_params["flag"] == "flagged"
    assert listed_streams(at) == alerted | scanned
    first = listed(at).iloc[0]
    assert first["flagged_by"] in ("scan", "alert + scan", "alert")
    at.selectbox(key="w_flag").set_value("all").run()
    at.selectbox(key="w_agents").set_value("subagents").run()
    ok(at)
    assert listed_streams(at) == subagents
    at.selectbox(key="w_agents").set_value("all").run()
    at.multiselect(key="w_source").set_value(["otlp"]).run()
    ok(at)
    otlp = {stream_key(r["session_id"], r["agent_id"]) for r in streams if r["source"] == "otlp"}
    assert listed_streams(at) == otlp
    at.checkbox(key="w_injected").check().run()
    ok(at)
    labelled = {
        stream_key(r["session_id"], r["agent_id"])
        for r in streams
        if r["source"] == "otlp" and r["labelled"]
    }
    assert labelled and listed_streams(at) == labelled


def test_sessions_in_a_time_range_from_the_url(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    root = built["root"]
    days = rows(root, "SELECT DISTINCT start_time::DATE AS d FROM calls ORDER BY d")
    first, last = days[0]["d"], days[len(days) // 2]["d"]
    params = {"range": "custom", "from": first.isoformat(), "to": last.isoformat()}
    at = app(env, root, "sessions_page.py", params)
    ok(at)
    in_range = {
        stream_key(r["session_id"], r["agent_id"])
        for r in rows(
            root,
            "SELECT DISTINCT session_id, agent_id FROM calls "
            "WHERE start_time >= ?::DATE AND start_time < ?::DATE + INTERVAL 1 DAY",
            [first, last],
        )
    }
    every = rows(root, "SELECT count(*) AS n FROM streams")[0]["n"]
    assert listed_streams(at) == in_range and 0 < len(in_range) < every
    assert any(f"{first:%Y-%m-%d} – {last:%Y-%m-%d} (UTC)" in c.value for c in at.caption)


def test_sessions_scan_note_counts_each_stream_once(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`toolwatch scan` run twice stores every stream twice; the note counts streams."""
    root = tmp_path / "store"
    store = ["--store", str(root)]
    assert cli_main(["simulate", *store, "--sessions", "30"]) == 0
    assert cli_main(["train", *store]) == 0
    for _ in range(2):
        assert cli_main(["scan", *store]) == 0, capsys.readouterr().err
    streams = rows(root, "SELECT count(*) AS n FROM streams")[0]["n"]
    stored = rows(root, "SELECT count(*) AS n FROM stream_scores")[0]["n"]
    assert stored == 2 * streams  # each scan stores every stream once
    at = app(env, root, "sessions_page.py")
    ok(at)
    note = next(c.value for c in at.caption if c.value.startswith("Scan flags:"))
    assert note.endswith(f"({streams:,} streams)."), note


def test_a_session_id_links_to_its_stream(built: dict[str, Any], env: pytest.MonkeyPatch) -> None:
    """The list is one table, its rows sent once (it was sent twice, a desktop grid and a
    phone's compact table, CSS hiding one); each row's session id links to its stream, the
    page's other parameters kept, and the link opens that stream's timeline."""
    root = built["root"]
    at = app(env, root, "sessions_page.py", {"flag": "flagged"})
    ok(at)
    assert len(at.dataframe) == 0 and list(shown_tables(at)) == ["streams"]
    shown = shown_tables(at)["streams"]
    (flagged,) = rows(
        root,
        "SELECT count(*) AS n FROM (SELECT DISTINCT session_id, agent_id FROM alerts UNION "
        "SELECT session_id, agent_id FROM stream_scores WHERE flagged)",
    )
    assert len(shown.frame) == len(shown.links) == flagged["n"]
    for i in (0, 2):  # a subagent's stream (the fixture ranks one first) and a main agent's
        row, link = shown.frame.iloc[i], shown.links[i]
        agent = row["stream"].removeprefix("subagent ") if row["stream"] != "main agent" else None
        params = dict(urllib.parse.parse_qsl(str(link).removeprefix("?")))
        assert params == {
            "flag": "flagged", "session": row["session_id"], **({"agent": agent} if agent else {})
        }  # fmt: skip
        opened = app(env, root, "sessions_page.py", params)
        ok(opened)
        assert next(c.value for c in opened.code) == row["session_id"]
        assert any(s.value.startswith("Timeline — ") for s in opened.subheader)
        assert len(shown_tables(opened)["timeline"].frame) > 0


def test_a_session_link_keeps_the_injected_filter_and_more_columns(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    """A session id is a link that reloads the page, and the "injected only" checkbox and the
    "more columns" toggle came back off (the list all streams again, its extra columns gone).
    Both live in the URL now (``injected=1``, ``more=1``), so a row's link keeps them."""
    root = built["root"]
    at = app(env, root, "sessions_page.py")
    ok(at)
    assert "source" not in listed(at).columns
    at.checkbox(key="w_injected").check().run()
    at.toggle(key="w_more").set_value(True).run()
    ok(at)
    assert (at.query_params["injected"], at.query_params["more"]) == ("1", "1")
    labelled = {
        stream_key(r["session_id"], r["agent_id"])
        for r in rows(root, "SELECT DISTINCT session_id, agent_id FROM calls WHERE label NOTNULL")
    }
    assert listed_streams(at) == labelled and "labelled_calls" in listed(at).columns
    link = shown_tables(at)["streams"].links[0]
    params = dict(urllib.parse.parse_qsl(str(link).removeprefix("?")))
    assert (params["injected"], params["more"]) == ("1", "1")
    opened = app(env, root, "sessions_page.py", params)  # the link: a fresh page
    ok(opened)
    assert opened.checkbox(key="w_injected").value and opened.toggle(key="w_more").value
    assert listed_streams(opened) == labelled and "labelled_calls" in listed(opened).columns
    assert any(s.value.startswith("Timeline — ") for s in opened.subheader)
    # switched off, they leave the URL (a default leaves it clean)
    opened.checkbox(key="w_injected").uncheck().run()
    opened.toggle(key="w_more").set_value(False).run()
    ok(opened)
    assert "injected" not in opened.query_params and "more" not in opened.query_params
    assert len(listed(opened)) > len(labelled) and "source" not in listed(opened).columns


def two_decimals(values: Any) -> list[str]:
    """Scores as the timeline writes them: two decimals, blank for none."""
    return ["" if pd.isna(x) else f"{x:.2f}" for x in values]


def _timeline_calls(root: Path, session_id: str, agent_id: str | None) -> Any:
    return Store(root).query(
        "SELECT * EXCLUDE (date) FROM calls WHERE session_id = ? "
        "AND agent_id IS NOT DISTINCT FROM ? ORDER BY start_time, seq",
        [session_id, agent_id],
    )


def test_session_timeline_scores_injected_calls_and_alerts(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    root = built["root"]
    model: NormalModel = built["model"]
    faulted = rows(
        root,
        "SELECT session_id FROM workbench_runs WHERE mode = 'faulted' AND agent = 'naive' "
        "AND scenario_id = 'c1-support-01'",
    )[0]["session_id"]
    at = app(env, root, "sessions_page.py", {"session": faulted})
    ok(at)
    calls = _timeline_calls(root, faulted, None)
    timeline = shown_tables(at)["timeline"].frame
    assert list(timeline["tool"]) == calls.column("tool").to_pylist()
    assert list(timeline["label"]) == [x or "" for x in calls.column("label").to_pylist()]
    assert (
        metric(at, "Injected calls")
        == f"{sum(x is not None for x in calls.column('label').to_pylist()):,}"
    )
    expected = score_calls(model, calls).to_pandas().set_index("span_id")
    shown = timeline.assign(span=calls.column("span_id").to_pylist()).set_index("span")
    for cue in ("order", "size", "time", "failure", "all_cusum"):
        assert list(shown[cue]) == two_decimals(expected.loc[shown.index, cue]), cue
    assert len(at.get("vega_lite_chart")) >= 1
    # a stream with a live alert: the alerted call is marked, the count is the stream's
    alert = rows(root, "SELECT session_id, agent_id, seq FROM alerts ORDER BY call_time LIMIT 1")[0]
    link = {"session": alert["session_id"], "agent": alert["agent_id"]}
    at = app(env, root, "sessions_page.py", {k: v for k, v in link.items() if v})
    ok(at)
    timeline = shown_tables(at)["timeline"].frame.set_index("seq")
    assert "live alert" in timeline.loc[f"{alert['seq']:,}", "alert_by"]
    assert metric(at, "Live alerts (stream)") == str(
        len(
            rows(
                root,
                "SELECT 1 FROM alerts WHERE session_id = ? AND agent_id IS NOT DISTINCT FROM ?",
                [alert["session_id"], alert["agent_id"]],
            )
        )
    )


def test_subagent_stream_is_its_own_timeline(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    root = built["root"]
    model: NormalModel = built["model"]
    sub = rows(
        root,
        "SELECT session_id, agent_id, count(*) AS n FROM calls WHERE agent_id IS NOT NULL "
        "AND session_id IN (SELECT session_id FROM calls WHERE agent_id IS NULL) "
        "GROUP BY ALL ORDER BY n DESC, session_id LIMIT 1",
    )[0]
    sid, agent = sub["session_id"], sub["agent_id"]
    at = app(env, root, "sessions_page.py", {"session": sid, "agent": agent})
    ok(at)
    calls = _timeline_calls(root, sid, agent)
    timeline = shown_tables(at)["timeline"].frame
    # only the subagent's calls, in its own order, scored as a stream of its own
    assert list(timeline["seq"]) == [f"{x:,}" for x in calls.column("seq").to_pylist()]
    assert len(timeline) == sub["n"]
    assert metric(at, "Calls in stream") == f"{sub['n']:,}"
    expected = score_calls(model, calls).to_pandas()
    assert list(timeline["all_cusum"]) == two_decimals(expected["all_cusum"])
    main_calls = rows(
        root,
        "SELECT count(*) AS n FROM calls WHERE session_id = ? AND agent_id IS NULL",
        [sid],
    )[0]["n"]
    assert any(
        "main agent" in c.value and f"{main_calls:,} calls" in c.value for c in at.caption
    ), [c.value for c in at.caption]


def test_a_client_artefact_stream_says_so(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    """dev-real's warm-up loop (a ``warmup_agent`` stream, every call failed) tops the scan's
    list; its timeline said nothing of it being the client's own start-up agent, which the
    experiment keeps apart. A quirk stream's timeline says so; another stream's does not."""
    calls = simulate(seed=1, sessions=4)
    sid = calls["session_id"][0].as_py()
    first = [s == sid and a is None for s, a in zip(
        calls["session_id"].to_pylist(), calls["agent_id"].to_pylist(), strict=True)]  # fmt: skip
    quirk = pa.array(["warmup_agent" if f else None for f in first], pa.string())
    at_quirk = calls.schema.get_field_index("client_quirk")
    Store(tmp_path).append("calls", calls.set_column(at_quirk, "client_quirk", quirk))
    at = app(env, tmp_path, "sessions_page.py", {"session": sid})
    ok(at)
    notes = [i.value for i in at.info if "Client artefact" in i.value]
    assert len(notes) == 1 and "`warmup_agent`" in notes[0], notes
    assert "kept out of training, calibration and the normal test streams" in notes[0]
    other = next(s for s in calls["session_id"].to_pylist() if s != sid)
    at = app(env, tmp_path, "sessions_page.py", {"session": other})
    ok(at)
    assert not [i.value for i in at.info if "Client artefact" in i.value]


# ------------------------------------------------------------------------------ live


def test_live_alert_counts_match_the_store(built: dict[str, Any], env: pytest.MonkeyPatch) -> None:
    root = built["root"]
    at = app(env, root, "live_page.py")
    ok(at)
    totals = rows(root, "SELECT count(*) AS n, count(DISTINCT session_id) AS s FROM alerts")[0]
    assert metric(at, "Alerts") == f"{totals['n']:,}"
    assert metric(at, "Sessions alerted") == f"{totals['s']:,}"
    assert metric(at, "Last 24 h") == f"{totals['n']:,}"  # raised by the fixture just now
    recent = shown_tables(at)["alerts"].frame
    assert len(recent) == min(50, totals["n"])
    assert set(recent["session_id"]) <= {
        r["session_id"] for r in rows(root, "SELECT * FROM alerts")
    }
    assert chart_data(at, "alerts")["alerts"].sum() == totals["n"]
    # a new alert stored by the live scorer shows up on the next refresh
    model_path = built["model_path"]
    sid = rows(root, "SELECT session_id FROM alerts LIMIT 1")[0]["session_id"]
    extra = Store(root).query(
        "SELECT * EXCLUDE (date) FROM calls WHERE session_id = ? ORDER BY start_time, seq",
        [sid],
    )
    with LiveScorer(model_path, Store(root)) as live:
        raised = len(live.process(extra))
    assert raised > 0
    at.run()
    ok(at)
    assert metric(at, "Alerts") == f"{totals['n'] + raised:,}"
    at.radio(key="w_by").set_value("call_time").run()
    ok(at)
    per_hour = rows(
        root,
        "SELECT date_trunc('hour', call_time) AS h, count(*) AS n FROM alerts GROUP BY h",
    )
    data = chart_data(at, "alerts")
    got = data.groupby("hour")["alerts"].sum()
    assert len(got) == len(per_hour)
    assert sorted(got.tolist()) == sorted(r["n"] for r in per_hour)


# ------------------------------------------------------------------------------ workbench


def test_workbench_matrix_impact_and_trajectories(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    root = built["root"]
    at = app(env, root, "workbench_page.py")
    ok(at)
    matrix = shown_tables(at)["pass_matrix"].frame.set_index("agent")
    faulted = rows(
        root,
        "SELECT agent, fault_type, count(*) FILTER (WHERE exercised AND passed) AS p, "
        "count(*) FILTER (WHERE exercised) AS e FROM workbench_runs WHERE mode = 'faulted' "
        "GROUP BY ALL",
    )
    assert len(faulted) == 4
    for r in faulted:
        rate = pct(r["p"] / r["e"]) if r["e"] else "–"
        assert matrix.loc[r["agent"], r["fault_type"]].startswith(f"{rate} {r['p']}/{r['e']}")
    # the impact "As a table", one a tab (agent), a row per fault
    impact = {
        key: t.frame.set_index("fault")
        for key, t in shown_tables(at).items()
        if key.startswith("impact_")
    }
    mitigated = rows(
        root,
        "SELECT agent, fault_type, mitigation, avg(CAST(passed AS DOUBLE)) AS rate, "
        "count(*) FILTER (WHERE fix_confirmed) AS fixed FROM workbench_runs "
        "WHERE mode = 'mitigated' AND exercised GROUP BY ALL",
    )
    tables = list(impact.values())
    assert sorted(impact) == ["impact_careful", "impact_naive"]
    # the full stack (--mitigations all) named as the suite's table prints it, not
    # "retry+schema+scan+verify" on the page and "all (+verify)" in the terminal
    for t in tables:
        assert list(t.columns) == ["none", "scan", "all (+verify)"]
    names = {"scan": "scan", "retry+schema+scan+verify": "all (+verify)"}
    for r in mitigated:
        fixed = f" +{r['fixed']}" if r["fixed"] else ""
        texts = {t.loc[r["fault_type"], names[r["mitigation"]]] for t in tables}
        assert f"{pct(r['rate'])}{fixed}" in texts
    at.selectbox(key="w_scenario").set_value("c1-support-01").run()
    at.selectbox(key="agent").set_value("naive").run()
    ok(at)
    run = rows(
        root,
        "SELECT * FROM workbench_runs WHERE scenario_id = 'c1-support-01' AND agent = 'naive' "
        "AND mode = 'faulted'",
    )[0]
    texts = [m.value for m in at.markdown]
    assert "**faulted**" in texts
    status = ":red[**FAIL**]" if run["status"] == "fail" else ":green[**PASS**]"
    assert any(t.startswith(status) and run["check_reason"] in t for t in texts)
    assert (
        run["check_evidence"]
        and [c.value for c in at.caption].count(f"evidence: {run['check_evidence']}") == 1
    )
    assert any(f"diverges at step {run['divergence_step']}" in t for t in texts)
    labels = [
        r["label"]
        for r in rows(
            root,
            "SELECT label FROM calls WHERE session_id = ? ORDER BY start_time, seq",
            [run["session_id"]],
        )
    ]
    assert any(labels)
    side = shown_tables(at)["steps"].frame
    assert "clean" in side.columns
    assert "mitigated: all (+verify)" in side.columns  # the run named as the table names it
    faulted_cells = list(side["faulted"])[: len(labels)]
    for step, (cell, lab) in enumerate(zip(faulted_cells, labels, strict=True)):
        assert (f"⚑ {lab}" in cell) if lab else ("⚑" not in cell)
        assert cell.endswith("◀") == (step == run["divergence_step"])
    steps = chart_data(at, "outcome")
    assert "faulted" in set(steps["run"])


# ------------------------------------------------------------------------------ corpus


def test_corpus_facts_beside_the_study(built: dict[str, Any], env: pytest.MonkeyPatch) -> None:
    root = built["root"]
    at = app(env, root, "corpus_page.py")
    ok(at)
    table = frame_with(at, "fact", "fact")
    corpus = "FROM calls WHERE session_id NOT IN (SELECT session_id FROM calls WHERE label NOTNULL)"
    counts = rows(
        root,
        "SELECT count(*) AS calls, count(DISTINCT (session_id, agent_id)) AS streams, "
        f"count(DISTINCT session_id) AS sessions, count(DISTINCT tool) AS tools {corpus}",
    )[0]
    per_source = {
        r["source"]: r["n"]
        for r in rows(root, f"SELECT source, count(*) AS n {corpus} GROUP BY source")
    }
    (injected,) = rows(
        root, "SELECT count(DISTINCT session_id) AS n FROM calls WHERE label NOTNULL"
    )
    assert injected["n"] > 0  # the workbench's labelled runs: left out, and said so
    assert any(f"{injected['n']:,} sessions holding injected" in c.value for c in at.caption)
    assert list(table.columns) == [*sorted(per_source), "all selected", "study"]
    streams_row = "streams (session × agent: the study's 'sessions')"
    assert table.loc[streams_row, "all selected"] == f"{counts['streams']:,}"
    # what it counts, in its label: the Sessions page counts the injected sessions too
    ids_row = "sessions (distinct session ids, injected ones left out)"
    assert table.loc[ids_row, "all selected"] == f"{counts['sessions']:,}"
    assert table.loc["calls", "all selected"] == f"{counts['calls']:,}"
    assert table.loc["tools", "all selected"] == f"{counts['tools']:,}"
    for source, n in per_source.items():
        assert table.loc["calls", source] == f"{n:,}"
    assert table.loc["calls", "study"] == f"{study.CORPUS['calls']:,.0f}"
    # "· median" is under two facts: each detail is named with its fact (a phone's block
    # stands alone), as the terminal's table indents it under that fact
    details = [f for f in table.index if " · " in f]
    assert details == [
        "inter-response gaps · minimum", "inter-response gaps · median",
        "inter-response gaps · share <= 1 s", "within-response gaps (parallel calls) · median",
        "within-response gaps (parallel calls) · share <= 1 s",
        "first use of a tool in its session (mean) · pooled over all calls",
    ]  # fmt: skip
    with Store(root).connect() as con:
        stats = corpus_stats(con, ["simulated"])
    tools = frame_with(at, "failure_rate")
    assert "None" not in set(tools["server"]) and "(built-in)" in set(tools["server"])
    at.multiselect(key="w_csource").set_value(["simulated"]).run()
    ok(at)
    assert at.query_params["source"] == "simulated"
    table = frame_with(at, "fact", "fact")
    assert list(table.columns) == ["simulated", "study"]
    assert table.loc["calls", "simulated"] == f"{per_source['simulated']:,}"
    median = stats["inter_response_gap_median_s"]
    assert f"{median:,.2f} s" in set(table["simulated"])
    assert any("SIMULATED" in w.value for w in at.warning)


def test_corpus_chart_and_tools_count_the_calls_of_the_facts(
    built: dict[str, Any], env: pytest.MonkeyPatch
) -> None:
    """Calls per day and the most-called tools counted the sessions holding injected calls
    (the workbench's faulted runs) that the facts and ``toolwatch stats`` leave out: the otlp
    bars summed to every call the collector stored while its column, and the command, said
    fewer. Each source's bars now sum to the calls the command prints for it."""
    root = built["root"]
    at = app(env, root, "corpus_page.py")
    ok(at)
    facts = frame_with(at, "fact", "fact")
    (chart,) = at.get("vega_lite_chart")
    found = [pa.ipc.open_stream(d.data.data).read_all() for d in chart.proto.datasets]  # type: ignore[attr-defined]
    drawn = pd.concat([t.to_pandas() for t in found if "calls" in t.column_names])
    sources = printed_stats(root)["calls_by_source"]
    assert "otlp" in sources and set(drawn["source"]) == set(sources)
    for source in sources:
        printed = printed_stats(root, source)["stats"]["calls"]
        assert facts.loc["calls", source] == f"{printed:,}"
        assert drawn.loc[drawn["source"] == source, "calls"].sum() == printed, source
    printed_all = printed_stats(root)["stats"]["calls"]
    assert facts.loc["calls", "all selected"] == f"{printed_all:,}"
    # the collector's calls alone: the faulted runs' tools counted only by their clean runs
    at.multiselect(key="w_csource").set_value(["otlp"]).run()
    ok(at)
    corpus = "FROM calls WHERE session_id NOT IN (SELECT session_id FROM calls WHERE label NOTNULL)"
    expected = rows(root, f"SELECT tool, count(*) AS n {corpus} AND source = 'otlp' GROUP BY tool")
    tools = frame_with(at, "failure_rate")
    assert dict(zip(tools["tool"], tools["calls"], strict=True)) == {
        r["tool"]: f"{r['n']:,}" for r in expected
    }


# ------------------------------------------------------------------------------ empty, missing


@pytest.fixture(scope="module")
def calls_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("calls_only") / "store"
    Store(root).append("calls", simulate(seed=1, sessions=12))
    return root


@pytest.mark.parametrize(
    ("page", "hint"),
    [
        (None, "toolwatch experiment"),
        ("live_page.py", "toolwatch collector"),
        ("workbench_page.py", "toolwatch workbench suite"),
    ],
)
def test_pages_explain_how_to_fill_an_empty_part(
    calls_only: Path, env: pytest.MonkeyPatch, page: str | None, hint: str
) -> None:
    at = app(env, calls_only, page)
    ok(at)
    assert any(hint in i.value and str(calls_only) in i.value for i in at.info)


def test_the_detection_guide_gives_a_command_that_works_on_the_store(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store whose dates are not the study's (a user's own import): the guide names a command
    that runs on it — the default split follows the store's own days — and it does."""
    root = tmp_path / "own"
    simulated = ["simulate", "--store", str(root), "--sessions", "60", "--start", "2025-03-01"]
    assert cli_main(simulated) == 0
    at = app(env, root)
    ok(at)
    guide = next(i.value for i in at.info if "toolwatch experiment" in i.value)
    command = shlex.split(guide.split("`")[1])
    assert command[:2] == ["toolwatch", "experiment"]
    assert cli_main(["experiment", *command[2:]]) == 0, capsys.readouterr().err
    at = app(env, root)
    ok(at)
    assert at.title[0].value == "Detection" and len(detection_table(at)) == len(KINDS_ALL)


def _short_streams(calls: pa.Table, n: int, after: Any) -> pa.Table:
    """``n`` two-call streams (copies of the first stream's first two calls) after ``after``,
    a minute apart: what a workbench suite leaves in a store (many short sessions)."""
    two = calls.slice(0, 2)
    parts = []
    for i in range(n):
        shift = after - two.column("start_time")[0].as_py() + dt.timedelta(minutes=i + 1)
        part = two
        for name, values in (
            ("session_id", [f"short-{i}"] * 2),
            ("span_id", [f"short-{i}-{j}" for j in range(2)]),
            ("start_time", [t.as_py() + shift for t in two.column("start_time")]),
        ):
            index = part.column_names.index(name)
            part = part.set_column(index, name, pa.array(values, part.schema.field(name).type))
        parts.append(part)
    return pa.concat_tables(parts)


def test_the_detection_guide_says_when_no_experiment_can_run_yet(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """4 simulated sessions, then many short streams (the tester's `simulate --sessions 4`
    and a workbench suite): neither the default split nor the study's shares leave a test
    stream of 30 calls, so the guide says so (it offered `--split-shares 0.44,0.07`, which
    exits 1) and names commands that do work, in order."""
    root = tmp_path / "few"
    store = Store(root)
    calls = simulate(seed=1, sessions=4, days=3)
    store.append("calls", calls)
    last = max(calls.column("start_time").to_pylist())
    store.append("calls", _short_streams(calls, 60, last))
    at = app(env, root)
    ok(at)
    guide = next(i.value for i in at.info if "toolwatch experiment" in i.value)
    assert "--split-shares" not in guide
    assert "even split by the study's shares of its streams: no test stream has >= 30 calls" in (
        guide
    )
    commands = [shlex.split(part) for part in guide.split("`")[1::2]]
    assert [c[:2] for c in commands] == [["toolwatch", "simulate"], ["toolwatch", "experiment"]]
    for command in commands:
        assert cli_main(command[1:]) == 0, capsys.readouterr().err
    at = app(env, root)
    ok(at)
    assert at.title[0].value == "Detection" and len(detection_table(at)) == len(KINDS_ALL)


def test_sessions_without_a_model_show_the_calls_only(
    calls_only: Path, env: pytest.MonkeyPatch
) -> None:
    at = app(env, calls_only, "sessions_page.py")
    ok(at)
    assert any("no model" in c.value for c in at.caption)
    first = listed(at).iloc[0]
    sid = first["session_id"]
    agent = None if first["stream"] == "main agent" else first["stream"].removeprefix("subagent ")
    at = app(
        env, calls_only, "sessions_page.py", {"session": sid, **({"agent": agent} if agent else {})}
    )
    ok(at)
    timeline = shown_tables(at)["timeline"].frame
    assert "order" not in timeline.columns and "tool" in timeline.columns
    seqs = _timeline_calls(calls_only, sid, agent).column("seq").to_pylist()
    assert list(timeline["seq"]) == [f"{x:,}" for x in seqs]


def test_sessions_counts_one_stream_in_the_singular(
    calls_only: Path, env: pytest.MonkeyPatch
) -> None:
    """A session prefix matching one main-agent-only session said "1 streams (1 main agents,
    0 subagents) in 1 sessions"; each noun now agrees with its count."""
    alone = rows(
        calls_only,
        "SELECT session_id FROM calls GROUP BY session_id "
        "HAVING count(DISTINCT coalesce(agent_id, '')) = 1 AND bool_and(agent_id IS NULL) "
        "ORDER BY session_id LIMIT 1",
    )[0]["session_id"]
    at = app(env, calls_only, "sessions_page.py", {"find": alone})
    ok(at)
    line = next(c.value for c in at.caption if " in 1 session" in c.value)
    assert line.startswith("1 stream (1 main agent, 0 subagents) in 1 session, all time · "), line


def test_unusable_model_is_explained(
    calls_only: Path, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = tmp_path / "model.json"
    bad.write_text("{not json")
    at = app(env, calls_only, "sessions_page.py", TOOLWATCH_MODEL=str(bad))
    ok(at)
    assert any(str(bad) in c.value and "cannot be used" in c.value for c in at.caption)


def test_empty_store_explains_every_command(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    at = app(env, root)
    ok(at)
    text = at.info[0].value
    for command in (
        "toolwatch simulate",
        "toolwatch experiment",
        "toolwatch collector",
        "toolwatch workbench",
        "toolwatch demo",
    ):
        assert command in text


def test_missing_store_is_a_clear_error(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = app(env, tmp_path / "nowhere")
    assert not at.exception
    assert "No store at" in at.error[0].value and str(tmp_path / "nowhere") in at.error[0].value


def test_unreadable_store_is_a_clear_error(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("not a store")
    at = app(env, file)
    assert not at.exception
    assert "not a directory" in at.error[0].value
    root = tmp_path / "corrupt"
    Store(root).append("calls", simulate(seed=2, sessions=4))
    bad = next(Store(root).files("calls")[0].parent.glob("*.parquet"))
    bad.write_bytes(b"PAR1 this is not parquet")
    at = app(env, root)
    assert not at.exception
    assert "cannot be read" in at.error[0].value and bad.name in at.error[0].value


# ------------------------------------------------------------------------------ command


def test_app_command_refuses_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    assert cli_main(["app", "--store", str(file)]) == 1  # could not do the job, as in `stats`
    assert f"store path {file} is not a directory" in capsys.readouterr().err
    pattern = tmp_path / "a*b"
    assert cli_main(["app", "--store", str(pattern)]) == 1  # the store's own path rule
    assert "which DuckDB would expand as a file pattern" in capsys.readouterr().err
    bad = tmp_path / "m.json"
    bad.write_text("{}")
    assert cli_main(["app", "--store", str(tmp_path), "--model", str(bad)]) == 1
    assert f"--model {bad}" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:  # argparse's own exit, after its one line
        cli_main(["app", "--store", str(tmp_path), "--port", "70000"])
    assert done.value.code == 2
    assert "70000" in capsys.readouterr().err
    corrupt = tmp_path / "corrupt"
    Store(corrupt).append("calls", simulate(seed=2, sessions=4))
    bad_file = Store(corrupt).files("calls")[0]
    bad_file.write_bytes(b"PAR1 this is not parquet")
    assert cli_main(["app", "--store", str(corrupt), "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert "cannot read the store" in err and bad_file.name in err


def test_streamlit_command_is_loopback_without_telemetry(tmp_path: Path) -> None:
    cmd = streamlit_command(tmp_path, 8765, model=tmp_path / "m.json", refresh=3, headless=True)
    assert cmd[1:5] == ["-m", "streamlit", "run", str(MAIN_SCRIPT)]
    pairs = dict(itertools.pairwise(cmd))
    assert pairs["--server.address"] == "127.0.0.1"
    assert pairs["--server.port"] == "8765"
    assert pairs["--browser.gatherUsageStats"] == "false"
    assert pairs["--server.headless"] == "true"
    script_args = cmd[cmd.index("--") + 1 :]
    assert script_args == [
        "--store",
        str(tmp_path),
        "--refresh",
        "3",
        "--model",
        str(tmp_path / "m.json"),
    ]
    settings = load_settings([str(MAIN_SCRIPT), *script_args])
    assert settings.store == tmp_path
    assert settings.model == tmp_path / "m.json" and settings.model_origin == "--model"
    assert settings.refresh_s == 3


def test_settings_fall_back_to_the_environment_and_the_store_model(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env.setenv("TOOLWATCH_STORE", str(tmp_path))
    settings = load_settings(["pytest", "--store", "ignored"])  # not the app's own argv
    assert settings.store == tmp_path and settings.model is None
    (tmp_path / MODEL_IN_STORE).parent.mkdir(parents=True)
    (tmp_path / MODEL_IN_STORE).write_text("{}")
    settings = load_settings(["pytest"])
    assert settings.model == tmp_path / MODEL_IN_STORE and settings.model_origin == "store"
    assert os.environ.get("TOOLWATCH_MODEL") is None
