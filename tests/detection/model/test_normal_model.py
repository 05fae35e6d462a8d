"""The normal model: fitting, calibration, the JSON artifact and its failure modes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from support.detection import session, table, workload
from support.disk import record_fsync_and_replace
from toolwatch.detection import (
    CUE_SETS,
    DETECTORS,
    ModelConfig,
    ModelError,
    NormalModel,
    score_calls,
)
from toolwatch.detection.model.normal_model import FORMAT, VERSION, _checksum


@pytest.fixture(scope="module")
def model() -> NormalModel:
    return NormalModel.fit(workload(1, 40), window={"from": "a", "to": "b"}).calibrate(
        workload(2, 15)
    )


def test_standardisation_gives_mean_zero_unit_sd_on_training(model: NormalModel) -> None:
    train = workload(1, 40)
    scored = score_calls(model, train)
    for cue_set in CUE_SETS:
        x = scored.column(f"{cue_set}_point").to_numpy()
        assert abs(x.mean()) < 1e-9
        if cue_set != "all":
            assert x.std(ddof=1) == pytest.approx(1.0, rel=1e-9)
    z = [
        (scored.column(c).to_numpy() - model.standardisation[c][0]) / model.standardisation[c][1]
        for c in ("order", "size", "time", "failure")
    ]
    # all = the mean of the four z, not standardised again (BRIEF §3): its sd is below 1
    assert scored.column("all").to_numpy() == pytest.approx(sum(z) / 4.0)
    assert scored.column("all_point").to_numpy().tolist() == scored.column("all").to_pylist()
    all_sd = scored.column("all").to_numpy().std(ddof=1)
    assert all_sd == pytest.approx(model.standardisation["all"][1]) and all_sd < 1.0
    # the named variant re-standardises it (the pre-issue-12 behaviour)
    variant = NormalModel.fit(train, ModelConfig(all_restandardised=True))
    x = score_calls(variant, train).column("all_point").to_numpy()
    assert abs(x.mean()) < 1e-9 and x.std(ddof=1) == pytest.approx(1.0, rel=1e-9)


def test_calibration_sets_every_threshold_at_the_top_tenth_of_a_percent(
    model: NormalModel,
) -> None:
    calib = score_calls(model, workload(2, 15))
    n = calib.num_rows
    for s in CUE_SETS:
        for d in DETECTORS:
            above = int((calib.column(f"{s}_{d}").to_numpy() > model.threshold(s, d)).sum())
            assert above <= math.floor(0.001 * n)
    assert model.data["calibration"]["calls"] == n
    assert model.data["train"]["window"] == {"from": "a", "to": "b"}


def test_artifact_round_trip_gives_identical_scores(model: NormalModel, tmp_path: Path) -> None:
    path = model.save(tmp_path / "m" / "model.json")
    loaded = NormalModel.load(path)
    test = workload(3, 10, tools=14)
    assert score_calls(loaded, test).equals(score_calls(model, test))
    assert loaded.thresholds == model.thresholds
    assert loaded.config == model.config
    assert loaded.model_id == model.model_id
    doc = json.loads(path.read_text())
    assert doc["format"] == FORMAT and doc["version"] == VERSION
    assert set(doc) >= {"config", "data", "cues", "standardisation", "thresholds", "checksum"}
    assert doc["data"]["train"]["calls"] == workload(1, 40).num_rows
    assert doc["config"]["ewma_alpha"] == 0.3 and doc["config"]["cusum_k"] == 0.5
    assert not list(tmp_path.glob("m/*.tmp"))  # written atomically
    assert b"\x80" not in path.read_bytes()  # plain text, not a pickle


def test_the_model_file_is_fsynced_before_its_rename(
    model: NormalModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``save`` renamed its temp file without an fsync, so a power cut just after a ``train``
    could leave an empty model file under the real name; the data now reaches the disk first."""
    events = record_fsync_and_replace(monkeypatch)
    path = model.save(tmp_path / "model.json")
    monkeypatch.undo()
    tmp = f"{path}.tmp"
    assert events[:2] == [("fsync", tmp), ("replace", f"{tmp} -> {path}")]
    assert NormalModel.load(path).checksum == model.checksum


def test_config_reaches_the_detectors(tmp_path: Path) -> None:
    cfg = ModelConfig(ewma_alpha=0.5, cusum_k=1.0, order_session_mix=False)
    m = NormalModel.fit(workload(1, 10), cfg).calibrate(workload(2, 5))
    again = NormalModel.load(m.save(tmp_path / "m.json"))
    assert again.config == cfg
    assert again.detectors()["ewma"].params() == {"alpha": 0.5}
    assert again.detectors()["cusum"].params() == {"k": 1.0}
    assert NormalModel.fit(workload(1, 3), {"cusum_k": 0.25}).config.cusum_k == 0.25
    with pytest.raises(ModelError, match=r"config has no field \['cusum_kk'\]"):
        NormalModel.fit(workload(1, 3), {"cusum_kk": 0.25})
    with pytest.raises(ModelError, match="alert_on"):
        ModelConfig(alert_on=("all_median",))


def test_empty_or_invalid_training_data_gives_a_clear_error() -> None:
    with pytest.raises(ModelError, match="training window has no calls"):
        NormalModel.fit(table([]))
    with pytest.raises(ModelError, match=r"training calls.*'failed'"):
        NormalModel.fit(workload(1, 3).drop_columns(["failed"]))
    m = NormalModel.fit(workload(1, 3))
    with pytest.raises(ModelError, match="not calibrated"):
        m.threshold("all", "cusum")
    with pytest.raises(ModelError, match="calibration window has no calls"):
        m.calibrate(table([]))


def test_empty_session_table_scores_to_an_empty_table(model: NormalModel) -> None:
    out = score_calls(model, table([]))
    assert out.num_rows == 0
    assert {"all", "all_cusum", "time_point", "session_id", "call_index"} <= set(out.column_names)


def test_unseen_tools_score_finite(model: NormalModel) -> None:
    out = score_calls(model, table(session(["brand-new", "tool00", "brand-new"])))
    for name in out.column_names[out.column_names.index("order") :]:
        assert np.isfinite(out.column(name).to_numpy()).all(), name


# ------------------------------------------------------------------ broken artifacts


def _rewrite(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not found"):
        NormalModel.load(tmp_path / "nope.json")


def test_a_model_file_that_cannot_be_written_is_named(model: NormalModel, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ModelError, match=r"cannot write the model file .*a-file/m\.json: "):
        model.save(blocker / "m.json")  # its directory would be a file


def test_a_model_file_nested_too_deeply_is_invalid_json(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ModelError, match=r"is not valid JSON .*nested too deeply to read"):
        NormalModel.load(deep)


def test_truncated_file(model: NormalModel, tmp_path: Path) -> None:
    path = model.save(tmp_path / "m.json")
    path.write_text(path.read_text()[:500])
    with pytest.raises(ModelError, match=r"m\.json is not valid JSON \(line \d+.*truncated"):
        NormalModel.load(path)


def test_foreign_json(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(ModelError, match="not a toolwatch model"):
        NormalModel.load(path)
    path.write_text("[1, 2, 3]")
    with pytest.raises(ModelError, match="not a toolwatch model"):
        NormalModel.load(path)


def test_other_version(model: NormalModel, tmp_path: Path) -> None:
    path = model.save(tmp_path / "m.json")
    _rewrite(path, lambda d: d.update(version=VERSION + 1))
    with pytest.raises(ModelError, match=f"version {VERSION + 1} model.*retrain"):
        NormalModel.load(path)


def test_edited_parameters_fail_the_checksum(model: NormalModel, tmp_path: Path) -> None:
    path = model.save(tmp_path / "m.json")
    _rewrite(path, lambda d: d["thresholds"]["all"].update(cusum=1e9))
    with pytest.raises(ModelError, match="does not match its checksum"):
        NormalModel.load(path)


def test_mismatched_content_with_a_valid_checksum(model: NormalModel, tmp_path: Path) -> None:
    path = model.save(tmp_path / "m.json")

    def break_order(doc: dict) -> None:  # type: ignore[type-arg]
        doc["cues"]["order"]["unigram"] = doc["cues"]["order"]["unigram"][:-1]
        doc["checksum"] = _checksum({k: v for k, v in doc.items() if k != "checksum"})

    _rewrite(path, break_order)
    with pytest.raises(ModelError, match=r"invalid cues\.order.*differ in length"):
        NormalModel.load(path)

    def drop_cue(doc: dict) -> None:  # type: ignore[type-arg]
        del doc["cues"]["time"]
        doc["checksum"] = _checksum({k: v for k, v in doc.items() if k != "checksum"})

    path = model.save(tmp_path / "m2.json")
    _rewrite(path, drop_cue)
    with pytest.raises(ModelError, match=r"invalid cues\.time: missing field 'time'"):
        NormalModel.load(path)


def test_alert_table_schema_is_stable() -> None:
    from toolwatch.detection.alerting.alerts import ALERTS_SCHEMA

    assert ALERTS_SCHEMA.names[:3] == ["alert_time", "session_id", "agent_id"]
    assert ALERTS_SCHEMA.field("score").type == pa.float64()


def test_the_same_training_at_another_time_has_the_same_id(
    model: NormalModel, tmp_path: Path
) -> None:
    """The id named a model by its checksum, which covers the creation time: training twice on
    the same data printed two ids, and alerts and scans named different models."""
    import copy

    model = copy.deepcopy(model)  # the fixture is shared by the module
    first = NormalModel.load(model.save(tmp_path / "a.json"))
    model.created = "2030-01-01T00:00:00+00:00"
    second = NormalModel.load(model.save(tmp_path / "b.json"))
    assert first.checksum != second.checksum  # the artifacts differ (their times)
    assert first.model_id == second.model_id == model.model_id
    model.thresholds["all"]["cusum"] += 1.0  # a different model has a different id
    model.checksum = model.identity = ""
    assert model.model_id != first.model_id


def test_a_cue_that_barely_varies_in_training_is_read_in_raw_units() -> None:
    """No call failed in training: the failure cue's successes differ only by the smoothing
    prior (an sd of about 1e-6). Dividing by it made every success of a rarely used tool a
    large z, so normal streams alarmed; below ``min_sd`` the cue keeps its raw units."""
    train = workload(1, 40)
    train = train.set_column(
        train.schema.get_field_index("failed"), "failed", pa.array([False] * train.num_rows)
    )
    model = NormalModel.fit(train)
    assert model.standardisation["failure"][1] == 1.0
    z = score_calls(model, train).column("failure_point").to_numpy()
    assert np.abs(z).max() < 0.01  # a success is no news
    failed = session(["tool00"], failed=True)
    assert score_calls(model, table(failed)).column("failure_point")[0].as_py() > 3.0
    # where failures were seen, the training sd stands
    assert 0.05 < NormalModel.fit(workload(1, 40)).standardisation["failure"][1] < 1.0
