"""The injection experiment end to end: split, batch scoring, thresholds, ablation, storage."""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.paths import FIXTURES
from toolwatch import study
from toolwatch.cli import main as cli_main
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import CUE_SETS, DETECTORS
from toolwatch.injection.experiment import protocol as E
from toolwatch.injection.spans.anomalies import CONTROL_KINDS, KINDS, InjectionContext
from toolwatch.injection.spans.session_arrays import to_table


@pytest.fixture(scope="module")
def corpus() -> pa.Table:
    return simulate(seed=0)


@pytest.fixture(scope="module")
def result(corpus: pa.Table) -> E.ExperimentResult:
    """The study's protocol on the simulated corpus, reduced to one seed."""
    return E.run_experiment(corpus, E.ExperimentConfig(seeds=(0,), bootstrap=200))


def test_date_split_reproduces_the_studys_split_sizes(result: E.ExperimentResult) -> None:
    for name in ("train", "calibration", "test"):
        assert tuple(result.split[name]) == study.SPLITS[name]
    assert result.split["mode"] == "dates"
    assert (result.split["train_end"], result.split["calibration_end"]) == (
        "2026-08-24",
        "2026-08-31",
    )


def test_burst_and_runaway_are_detected_far_above_the_controls(
    result: E.ExperimentResult,
) -> None:
    target = result.config.target_fa
    rate = {k: result.cell(k, "all", "cusum").rate for k in KINDS}  # type: ignore[union-attr]
    assert rate["burst"] >= 0.8
    assert rate["runaway_retry"] >= 0.7
    for control in CONTROL_KINDS:
        # a control alarms only when its session would have alarmed anyway: near the target
        assert rate[control] <= target + 0.03
        assert rate["burst"] - rate[control] >= 0.6
        assert rate["runaway_retry"] - rate[control] >= 0.5
    # the study's negative finding: exfiltration and out-of-scope tools are not caught
    for kind in ("key_exfiltration", "exfiltration_2sigma", "out_of_scope_tool"):
        assert rate[kind] <= 0.2
    cell = result.cell("burst", "all", "cusum")
    assert cell is not None and cell.runs == 64 and cell.ci_low <= cell.rate <= cell.ci_high


def test_false_alarm_levels_are_reachable_levels_not_above_the_target(
    result: E.ExperimentResult,
) -> None:
    n = result.split["test"][0]
    for (variant, cue, det, mode), t in result.thresholds.items():
        assert variant in E.VARIANTS and cue in CUE_SETS and det in DETECTORS
        assert 0.0 <= t.fa_reached <= 1.0
        assert abs(t.fa_reached * n - round(t.fa_reached * n)) < 1e-9  # k of n sessions
        if mode == "fa_target":  # (the "largest reachable level" rule: test_metrics.py)
            assert t.fa_reached <= result.config.target_fa
    for c in result.cells:
        assert (
            c.fa_reached == result.thresholds[(c.variant, c.cue_set, c.detector, c.mode)].fa_reached
        )


def test_response_boundary_ablation_shows_what_breaks(result: E.ExperimentResult) -> None:
    def rate(kind: str, cue: str, det: str, variant: str) -> float:
        c = result.cell(kind, cue, det, variant=variant)
        assert c is not None
        return c.rate

    # with response ids: a different-response burst is caught on its first call, parallel
    # calls (same response) are not
    assert rate("burst", "time", "point", "standard") >= 0.95
    assert rate("control_same_response_burst", "time", "cusum", "standard") <= 0.1
    # without: the single fast gap no longer stands out, and the same-response control now
    # alarms like a burst — the two cannot be told apart
    assert rate("burst", "time", "point", "no_response_ids") <= 0.1
    abl_control = rate("control_same_response_burst", "time", "cusum", "no_response_ids")
    abl_burst = rate("burst", "time", "cusum", "no_response_ids")
    assert abl_control >= 0.5
    assert abs(abl_control - abl_burst) <= 0.25


def test_auc_and_latency_are_in_range(result: E.ExperimentResult) -> None:
    burst = result.cell("burst", "time", "point")
    assert burst is not None and burst.median_latency == 1.0  # alarm on the first fast gap
    same = result.cell("control_same_response_burst", "all", "cusum")
    assert same is not None and same.auc < 0.5  # parallel calls look *more* normal
    assert result.cell("burst", "all", "cusum").auc > 0.9  # type: ignore[union-attr]
    for c in result.cells:
        assert np.isnan(c.auc) or 0.0 <= c.auc <= 1.0
        assert c.detected == 0 or 1 <= c.median_latency <= 35


def test_exfiltration_without_a_read_is_reported(result: E.ExperimentResult) -> None:
    from toolwatch.injection.experiment.report import render

    notes = result.notes["key_exfiltration"]
    text = render(result)
    if notes.get("read_pair_inserted"):
        assert "Read + network call pair was inserted" in text
    assert "study (95% CI)" in text and "91% (85–95)" in text


def test_batch_scoring_equals_scoring_each_session_alone(corpus: pa.Table) -> None:
    config = E.ExperimentConfig(seeds=(3,), kinds=("runaway_retry", "burst"))
    split = E.split_by_time(E.normal_sessions(corpus), config)
    context = InjectionContext.from_sessions(split.train, corpus)
    runs = E.build_runs(split.test[:6], context, config)
    model = E.fit_model(split.train, split.calibration, config)
    sessions = runs["runaway_retry"].sessions + runs["burst"].sessions
    batch = E.score_groups(model, [sessions])[0]
    offset = 0
    for s in sessions:
        alone = E.score_groups(model, [[s]])[0]
        for col, values in alone.items():
            np.testing.assert_array_equal(batch[col][offset : offset + len(s)], values)
        offset += len(s)


def test_runs_are_deterministic_and_share_insertion_points(corpus: pa.Table) -> None:
    config = E.ExperimentConfig(seeds=(0, 1))
    split = E.split_by_time(E.normal_sessions(corpus), config)
    context = InjectionContext.from_sessions(split.train, corpus)
    test = split.test[:8]
    a = E.build_runs(test, context, config)
    b = E.build_runs(test, context, config, kinds=("sequence_hijack", "burst"))
    for kind in ("sequence_hijack", "burst"):
        assert to_table(a[kind].sessions).equals(to_table(b[kind].sessions))
    # one insertion point per (seed, session), shared by the kinds that do not move it
    for kind in ("runaway_retry", "control_other_normal", "control_same_response_burst"):
        np.testing.assert_array_equal(a[kind].positions, a["burst"].positions)
    assert len(set(a["burst"].positions[:8]) ^ set(a["burst"].positions[8:])) > 0
    for kind, runs in a.items():
        assert len(runs.sessions) == 16
        labelled = np.concatenate([s["label"] == kind for s in runs.sessions])
        np.testing.assert_array_equal(runs.layout.injected_mask(), labelled)
        for s, p, m in zip(runs.sessions, runs.positions, runs.inserted, strict=True):
            labels = s["label"]
            assert (labels[p : p + m] == kind).all() and (labels != kind).sum() == len(s) - m
            assert 10 <= p <= len(s) - 10


def test_split_by_shares_orders_sessions_by_start(corpus: pa.Table) -> None:
    sessions = E.normal_sessions(corpus)
    config = E.ExperimentConfig(split_shares=(0.44, 0.07))
    split = E.split_by_time(sessions, config)
    n = len(sessions)
    assert len(split.train) == round(0.44 * n)
    assert len(split.calibration) == round(0.07 * n)
    assert split.test_all == n - len(split.train) - len(split.calibration)
    assert all(len(s) >= 30 for s in split.test)

    def first(group: list) -> list[int]:
        return [int(s["start_time"][0]) for s in group]

    assert max(first(split.train)) <= min(first(split.calibration))
    assert max(first(split.calibration)) <= min(first(split.test))


def test_default_dates_on_another_corpus_ask_for_shares(corpus: pa.Table) -> None:
    shifted = corpus.set_column(
        corpus.schema.get_field_index("start_time"),
        "start_time",
        pc.subtract(corpus.column("start_time"), pa.scalar(timedelta(days=400))),
    )
    with pytest.raises(E.ExperimentError, match="--split-shares"):
        E.split_by_time(E.normal_sessions(shifted), E.ExperimentConfig())


def test_config_validation_and_json_round_trip() -> None:
    with pytest.raises(E.ExperimentError, match="not both"):
        E.ExperimentConfig(split_dates=("2026-08-24", "2026-08-31"), split_shares=(0.4, 0.1))
    with pytest.raises(E.ExperimentError, match="ISO date"):
        E.ExperimentConfig(split_dates=("yesterday", "2026-08-31"))
    with pytest.raises(E.ExperimentError, match="no insertion point"):
        E.ExperimentConfig(min_calls=15)
    with pytest.raises(E.ExperimentError, match="unknown kinds"):
        E.ExperimentConfig(kinds=("teleport",))
    with pytest.raises(E.ExperimentError, match="model configuration"):
        E.ExperimentConfig(model={"no_such_knob": 1})
    config = E.ExperimentConfig(seeds=(4, 2), target_fa=0.1)
    again = E.ExperimentConfig.from_dict(json.loads(config.to_json()))
    # defaults are resolved into the saved config, so a re-run does not depend on them
    assert again.split_dates == ("2026-08-24", "2026-08-31")
    assert again.to_json() == config.to_json()
    assert again.seeds == (4, 2) and again.params == config.params


def test_labelled_sessions_in_the_store_are_not_used_as_normal(corpus: pa.Table) -> None:
    config = E.ExperimentConfig(seeds=(0,), kinds=("burst",))
    sessions = E.normal_sessions(corpus)
    split = E.split_by_time(sessions, config)
    context = InjectionContext.from_sessions(split.train, corpus)
    injected = E.build_runs(split.test[:1], context, config)["burst"].sessions[0]
    injected = injected.replace(session_id=np.full(len(injected), "injected-copy", dtype=object))
    mixed = pa.concat_tables([corpus, to_table([injected])])
    assert len(E.normal_sessions(mixed)) == len(sessions)


@pytest.fixture()
def small_store(tmp_path):  # type: ignore[no-untyped-def]
    store = Store(tmp_path / "store")
    store.append("calls", simulate(seed=1, scale=0.3))
    return store


def _no_constants(token: str) -> None:
    raise AssertionError(f"{token} in JSON output")


def _run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(["experiment", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_saves_results_and_reruns_exactly(
    small_store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--store", str(small_store.root), "--split-shares", "0.44,0.07"]
    kinds = ("burst", "key_exfiltration", "control_same_response_burst")
    code, out, err = _run_cli(
        [*base, "--seeds", "1", "--bootstrap", "50", "--kinds", ",".join(kinds), "--json"],
        capsys,
    )
    assert code == 0, err
    first = json.loads(out, parse_constant=_no_constants)  # strict JSON: no NaN / Infinity
    run_id = first["run_id"]
    assert [h["kind"] for h in first["headline"]] == list(kinds)
    rows = small_store.query(
        "SELECT count(*) AS n, count(DISTINCT config_json) AS configs FROM experiments "
        "WHERE run_id = ?",
        [run_id],
    ).to_pylist()[0]
    assert rows == {"n": 2 * len(kinds) * len(CUE_SETS) * len(DETECTORS) * 2, "configs": 1}
    runs = small_store.query(
        "SELECT kind, count(*) AS n FROM experiment_runs WHERE run_id = ? AND variant = "
        "'standard' AND cue_set = 'all' AND detector = 'cusum' AND threshold_mode = "
        "'fa_target' GROUP BY kind",
        [run_id],
    ).to_pylist()
    per_kind = {r["kind"]: r["n"] for r in runs}
    assert per_kind["normal"] == first["split"]["test"][0]
    assert per_kind["burst"] == first["split"]["test"][0]  # 1 seed × test sessions

    code, out, err = _run_cli(
        ["--store", str(small_store.root), "--rerun", run_id, "--json"], capsys
    )
    assert code == 0, err
    second = json.loads(out)
    assert second["run_id"] != run_id
    assert second["cells"] == first["cells"]
    assert second["config"] == first["config"]

    code, out, err = _run_cli(
        [*base, "--seeds", "1", "--bootstrap", "20", "--no-save", "--no-ablation"], capsys
    )
    assert code == 0, err
    assert "Detection at 5% session false alarms" in out and "study (95% CI)" in out
    assert "Ablation" not in out


def test_cli_reports_bad_input_clearly(
    tmp_path, small_store: Store, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    code, _, err = _run_cli(["--store", str(tmp_path / "empty")], capsys)
    assert code == 2 and "holds no calls" in err and "Traceback" not in err
    code, _, err = _run_cli(
        ["--store", str(small_store.root), "--split-dates", "2020-01-01,2020-01-02"], capsys
    )
    assert code == 2 and "empty" in err and "--split-shares" in err
    code, _, err = _run_cli(["--store", str(small_store.root), "--rerun", "nope"], capsys)
    assert code == 2 and "no saved experiments" in err
    with pytest.raises(SystemExit):
        cli_main(["experiment", "--split-shares", "0.5"])


def test_injected_calls_carry_their_label_into_the_store(tmp_path, corpus: pa.Table) -> None:  # type: ignore[no-untyped-def]
    config = E.ExperimentConfig(seeds=(2,), kinds=("burst", "runaway_retry"))
    labelled = E.injected_calls(corpus, config)
    store = Store(tmp_path / "store")
    store.append("calls", corpus)
    store.append("calls", labelled)
    rows = store.query(
        "SELECT label, count(*) AS calls, count(DISTINCT (session_id, agent_id)) AS sessions "
        "FROM calls WHERE label IS NOT NULL GROUP BY label ORDER BY label"
    ).to_pylist()
    n_test = study.SPLITS["test"][0]
    assert rows == [
        {"label": "burst", "calls": 10 * n_test, "sessions": n_test},
        {"label": "runaway_retry", "calls": 15 * n_test, "sessions": n_test},
    ]
    ids = store.query("SELECT count(*) AS n, count(DISTINCT span_id) AS d FROM calls").to_pylist()
    assert ids[0]["n"] == ids[0]["d"] == corpus.num_rows + labelled.num_rows
    # the very runs the experiment scores for that seed
    split = E.split_by_time(E.normal_sessions(corpus), config)
    context = InjectionContext.from_sessions(split.train, corpus)
    runs = E.build_runs(split.test, context, config)["runaway_retry"]
    stored = labelled.filter(pc.match_substring(labelled.column("session_id"), "~runaway_retry~"))
    mine = to_table(runs.sessions, ["tool", "start_time", "input_bytes", "failed", "label"])
    for name in mine.column_names:
        assert stored.column(name).equals(mine.column(name))
    # and a later experiment on the store keeps them out of the normal data
    assert len(E.normal_sessions(E.load_calls(store))) == len(E.normal_sessions(corpus))


def test_experiment_runs_on_an_imported_style_corpus() -> None:
    """Null result sizes, sessions without response ids, re-stamped calls, no seq: the shape
    of imported transcripts. The protocol must still run end to end."""
    calls = simulate(seed=3, scale=0.3)
    n = calls.num_rows
    rng = np.random.default_rng(0)
    sid = calls.column("session_id").to_numpy(zero_copy_only=False)
    no_ids = np.isin(sid, np.unique(sid)[::3])
    out = calls.column("output_bytes").to_numpy(zero_copy_only=False).astype(float)
    out[rng.random(n) < 0.2] = np.nan
    resp = np.where(no_ids, None, calls.column("response_id").to_numpy(zero_copy_only=False))
    restamped = rng.random(n) < 0.02
    calls = (
        calls.set_column(
            calls.schema.get_field_index("output_bytes"),
            "output_bytes",
            pa.array(out, pa.int64(), from_pandas=True),
        )
        .set_column(
            calls.schema.get_field_index("response_id"), "response_id", pa.array(resp, pa.string())
        )
        .set_column(calls.schema.get_field_index("restamped"), "restamped", pa.array(restamped))
        .drop_columns(["seq", "duration_us", "server"])
    )
    config = E.ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,), bootstrap=20, ablation=False)
    result = E.run_experiment(calls, config)
    assert result.split["mode"] == "shares"
    for c in result.cells:
        assert 0.0 <= c.rate <= 1.0 and c.runs == result.split["test"][0]
    assert len(result.cells) == len(KINDS) * len(CUE_SETS) * len(DETECTORS) * 2
    # the fast gaps still rank above normal calls, though sessions without response ids now
    # hold fast "different-response" gaps too (the ablation's point)
    burst = result.cell("burst", "time", "point")
    assert burst is not None and burst.auc > 0.7


def test_cli_on_a_real_imported_store(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """The user's own sessions (a Claude Code import): tiny, so the defaults cannot hold;
    every attempt ends in a clear result or a clear error, never a traceback."""

    fixtures = FIXTURES / "claude_code"
    store = str(tmp_path / "imported")
    assert cli_main(["import", "claude-code", str(fixtures), "--store", store]) == 0
    capsys.readouterr()
    shares = ["--store", store, "--split-shares", "0.5,0.2", "--bootstrap", "50", "--no-save"]
    code, _, err = _run_cli(["--store", store], capsys)
    assert code == 2 and "empty test split" in err and "--split-shares" in err
    code, _, err = _run_cli(shares, capsys)
    assert code == 2 and "longest has" in err and "--min-calls" in err
    code, _, err = _run_cli([*shares, "--min-calls", "3"], capsys)
    assert code == 2 and "--head / --tail" in err
    code, out, err = _run_cli([*shares, "--min-calls", "3", "--head", "1", "--tail", "1"], capsys)
    assert code == 0, err
    assert "Traceback" not in err and "Detection at 5% session false alarms" in out
    # what could not be placed is said, once per reason (no position in the reason)
    assert "runs skipped — fewer than 10 calls from the insertion point on" in out
    assert out.count("burst (different responses): ") == 1


def test_rerun_says_when_the_store_changed(
    small_store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--store", str(small_store.root), "--split-shares", "0.44,0.07", "--seeds", "1"]
    code, out, err = _run_cli([*base, "--bootstrap", "20", "--kinds", "burst"], capsys)
    assert code == 0, err
    run_id = out.rsplit("--rerun ", 1)[1].split(")")[0]
    assert f"--store {small_store.root} --rerun {run_id}" in out  # a hint that works as is
    code, _, err = _run_cli(["--store", str(small_store.root), "--rerun", run_id], capsys)
    assert code == 0 and "changed" not in err
    small_store.append("calls", simulate(seed=9, scale=0.02))
    code, _, err = _run_cli(["--store", str(small_store.root), "--rerun", run_id], capsys)
    assert code == 0 and f"the store's calls changed since run {run_id}" in err


def test_headline_labels_its_latency_and_the_studys(result: E.ExperimentResult) -> None:
    from toolwatch.injection.experiment.report import headline

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
