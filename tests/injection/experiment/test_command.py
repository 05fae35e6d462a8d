"""``toolwatch experiment``: saved results, exact re-runs, changed data and clear errors."""

from __future__ import annotations

import json
import re

import pytest

from support.disk import read_only
from support.paths import FIXTURES
from toolwatch.cli import main as cli_main
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import CUE_SETS, DETECTORS
from toolwatch.injection.experiment.scoring import NOVELTY


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
    # a thin test split (< 50 streams): the next reachable level is a third threshold mode
    modes = 3 if first["split"]["test"][0] < 50 else 2
    stats = len(CUE_SETS) * len(DETECTORS) + len(NOVELTY)  # the study's, then novelty's
    assert rows == {"n": 2 * len(kinds) * stats * modes, "configs": 1}
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

    # --target-fa beside --rerun: the same run at another target (it was silently ignored)
    code, out, err = _run_cli(
        ["--store", str(small_store.root), "--rerun", run_id, "--target-fa", "0.2", "--json"],
        capsys,
    )
    assert code == 0, err
    third = json.loads(out)
    assert third["config"] == {**first["config"], "target_fa": 0.2}
    reached = [
        t["fa_reached"]
        for t in third["thresholds"]
        if (t["variant"], t["cue_set"], t["detector"], t["mode"])
        == ("standard", "all", "cusum", "fa_target")
    ]
    assert 0.05 < reached[0] <= 0.2

    code, out, err = _run_cli(
        [*base, "--seeds", "1", "--bootstrap", "20", "--no-save", "--no-ablation"], capsys
    )
    assert code == 0, err
    n = first["split"]["test"][0]
    assert re.search(
        rf"Detection at [\d.]+% false alarms \(\d+/{n} normal test streams alarm; "
        r"target 5%\)",
        out,
    )
    assert "study (95% CI)" in out and "Ablation" not in out
    assert "warning: the test split is thin" in out


def test_cli_reports_bad_input_clearly(
    tmp_path, small_store: Store, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    # what the data cannot support is 1 (as `train` says it), bad usage 2 (usage.py)
    code, _, err = _run_cli(["--store", str(tmp_path / "empty")], capsys)
    assert code == 1 and "holds no calls" in err and "Traceback" not in err
    code, _, err = _run_cli(
        ["--store", str(small_store.root), "--split-dates", "2020-01-01,2020-01-02"], capsys
    )
    assert code == 1 and "empty" in err and "--split-shares" in err
    code, _, err = _run_cli(["--store", str(small_store.root), "--rerun", "nope"], capsys)
    assert code == 1 and "no saved experiments" in err
    # an option a re-run would ignore is said, before any store is read (usage: exit 2)
    rerun = ["--store", str(small_store.root), "--rerun", "nope"]
    code, out, err = _run_cli(
        [*rerun, "--seeds", "2", "--no-ablation", "--target-fa", "0.1"], capsys
    )
    assert (code, out) == (2, "") and err.strip().splitlines() == [
        "toolwatch experiment: --seeds, --no-ablation cannot be given with --rerun: a re-run "
        "repeats the saved run's configuration (drop --rerun to run with new options)"
    ]
    with pytest.raises(SystemExit):
        cli_main(["experiment", "--split-shares", "0.5"])


def test_cli_on_a_real_imported_store(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """The user's own sessions (a Claude Code import): tiny, so the defaults cannot hold;
    every attempt ends in a clear result or a clear error, never a traceback."""

    fixtures = FIXTURES / "claude_code"
    store = str(tmp_path / "imported")
    assert cli_main(["import", "claude-code", str(fixtures), "--store", store]) == 0
    capsys.readouterr()
    shares = ["--store", store, "--split-shares", "0.5,0.2", "--bootstrap", "50", "--no-save"]
    code, _, err = _run_cli(["--store", store], capsys)
    assert code == 1 and "no test stream has >= 30 calls" in err and "--min-calls" in err
    code, _, err = _run_cli(["--store", store, "--split-dates", "2020-01-01,2020-01-02"], capsys)
    assert code == 1 and "empty train split" in err and "--split-shares" in err
    code, _, err = _run_cli(shares, capsys)
    assert code == 1 and "longest has" in err and "--min-calls" in err
    code, _, err = _run_cli([*shares, "--min-calls", "3"], capsys)
    assert code == 2 and "--head / --tail" in err
    code, out, err = _run_cli([*shares, "--min-calls", "3", "--head", "1", "--tail", "1"], capsys)
    assert code == 0, err
    assert "Traceback" not in err and "Detection at " in out and "false alarms (" in out
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


def test_write_injected_twice_adds_nothing_and_stats_leave_copies_out(
    small_store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--write-injected`` appended the same copies again on every run (each injected row
    doubled until a compaction), and ``stats`` counted the copies as the corpus."""
    root = str(small_store.root)
    assert cli_main(["stats", "--store", root, "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    args = ["--store", root, "--seeds", "1", "--bootstrap", "0", "--kinds", "burst"]
    for _ in range(2):
        code, _, err = _run_cli([*args, "--write-injected", "--no-save"], capsys)
        assert code == 0, err
    copies = small_store.query(
        "SELECT count(*) AS n, count(DISTINCT (trace_id, span_id)) AS spans, "
        "count(DISTINCT session_id) AS sessions FROM calls WHERE session_id LIKE '%~burst~%'"
    ).to_pylist()[0]
    assert copies["n"] == copies["spans"] > 0
    assert cli_main(["stats", "--store", root, "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["stats"] == before["stats"]
    assert after["calls_by_source"] == before["calls_by_source"]
    assert after["injected_sessions_left_out"] == copies["sessions"]
    assert cli_main(["stats", "--store", root]) == 0
    assert f"note: {copies['sessions']:,} sessions holding injected" in capsys.readouterr().out


def test_a_store_it_cannot_write_is_said_before_the_run(
    small_store: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a read-only store the run went through to the end and only its save failed; now the
    store is probed first (simulated portably: writes under it fail with EROFS), and
    ``--no-save`` still runs."""
    from toolwatch.injection.experiment import protocol

    root = str(small_store.root)
    runs: list[object] = []
    real_run = protocol.run_experiment
    monkeypatch.setattr(
        protocol, "run_experiment", lambda *a, **k: runs.append(1) or real_run(*a, **k)
    )
    read_only(monkeypatch, small_store.root)
    base = ["--store", root, "--seeds", "1", "--bootstrap", "0", "--kinds", "burst"]
    code, out, err = _run_cli(base, capsys)
    assert code == 1 and out == "" and runs == []
    assert err.strip().splitlines() == [
        f"toolwatch experiment: cannot write the store {root}: Read-only file system "
        "(--no-save runs the experiment without saving it)"
    ]
    code, out, err = _run_cli([*base, "--no-save"], capsys)
    assert code == 0 and "burst" in out
