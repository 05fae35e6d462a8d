"""The provenance cue: per-egress-class thresholds (rule B default, rule A named), batch ==
online, unmeasured calls, the model artifact, and the live scorer's immediate alert."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.detection import session, table, workload
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.calls.frame import CallsError, prepare
from toolwatch.detection.cues.base import Call, StreamContext
from toolwatch.detection.cues.provenance import ProvenanceCue
from toolwatch.detection.model.normal_model import _checksum

#: normal egress calls: (egress, payload_longest, payload_total), like dev-real's maxima
NORMAL = [
    ("web", 23, 23),
    ("web", 0, 0),
    ("browser", 25, 70),
    ("shell", 68, 196),
    ("shell", 10, 30),
    ("script", 163, 1222),
    ("none", 0, 0),
]


def with_provenance(rows: list[dict[str, Any]], values: list[tuple[Any, Any, Any]]) -> pa.Table:
    for row, (egress, lon, tot) in zip(rows, values, strict=False):
        row.update(egress=egress, payload_longest=lon, payload_total=tot)
    return table(rows)


def normal_table() -> pa.Table:
    rows = session([f"tool0{i % 3}" for i in range(len(NORMAL) + 3)], name="train")
    return with_provenance(rows, [*NORMAL, (None, None, None), ("web", None, None)])


def test_capped_rule_b_is_the_default_and_learned_max_rule_a_is_named() -> None:
    frame = prepare(normal_table())
    b = ProvenanceCue().fit(frame)
    assert b.rule == "capped"
    assert b.thresholds == {
        "web": (23, 23),
        "browser": (25, 32),
        "http": (23, 23),  # no normal http traffic: borrows web's
        "shell": (32, 32),
        "script": (32, 32),
    }
    a = ProvenanceCue(rule="learned_max").fit(frame)
    assert a.thresholds["shell"] == (68, 196) and a.thresholds["script"] == (163, 1222)
    assert a.normal_calls == {"web": 2, "browser": 1, "shell": 2, "script": 1}
    # a 40-byte key to the shell: caught by rule B, missed by rule A (research §4)
    assert b.check("shell", 40, 40).exceeds and not a.check("shell", 40, 40).exceeds
    # floors: a class whose normal payloads are tiny still gets 16 B
    quiet = ProvenanceCue().fit(prepare(with_provenance(session(["x"] * 2), [("web", 2, 3)] * 2)))
    assert quiet.thresholds["web"] == (16, 16) and quiet.thresholds["shell"] == (16, 16)
    assert quiet.check("web", 16, 16).score == 1.0 and not quiet.check("web", 16, 16).exceeds
    assert quiet.check("web", 17, 17).exceeds
    with pytest.raises(ValueError, match="rule"):
        ProvenanceCue(rule="nope")


def test_scores_batch_equal_online_and_unmeasured_calls_never_alarm() -> None:
    cue = ProvenanceCue().fit(prepare(normal_table()))
    probe = [
        ("web", 40, 40),
        ("shell", 400, 400),
        ("script", 3072, 3072),
        ("http", 24, 24),
        ("none", 0, 0),
        (None, None, None),  # not measured
        ("shell", None, None),  # egress known, payload not measured
        ("browser", 20, 40),  # only the total exceeds
    ]
    calls = with_provenance(session(["t"] * len(probe), name="probe"), probe)
    frame = prepare(calls)
    batch = cue.score_many(frame).tolist()
    online = [cue.score_one(Call.from_mapping(r), StreamContext(), None) for r in calls.to_pylist()]
    assert batch == online
    assert batch == [40 / 23, 400 / 32, 3072 / 32, 24 / 23, 0.0, 0.0, 0.0, 40 / 32]
    assert ProvenanceCue.unmeasured(frame) == 2
    assert cue.check(None, 5, 5) is None and cue.check("shell", None, None) is None
    verdict = cue.check("browser", 20, 40)
    assert verdict.exceeds and verdict.measure == ("total", 40, 32)
    with pytest.raises(ValueError, match="unknown egress"):
        cue.check("telepathy", 1, 1)
    bad = with_provenance(session(["t"]), [("telepathy", 1, 1)])
    with pytest.raises(CallsError, match="telepathy"):
        prepare(bad)


def provenance_model(tmp_path: Path, rule: str = "capped") -> Path:
    train = pa.concat_tables([workload(1, 30, tools=6), normal_table()])
    model = NormalModel.fit(train, {"provenance_rule": rule}).calibrate(workload(2, 8, tools=6))
    return model.save(tmp_path / "model.json")


def test_thresholds_are_saved_in_the_model_artifact(tmp_path: Path) -> None:
    path = provenance_model(tmp_path)
    doc = json.loads(path.read_text())
    assert doc["provenance"]["rule"] == "capped" and doc["provenance"]["cap"] == 32
    assert doc["provenance"]["thresholds"]["shell"] == [32, 32]
    assert doc["data"]["train"]["provenance_unmeasured"] > 0  # the workload has none
    loaded = NormalModel.load(path)
    assert loaded.provenance is not None
    assert loaded.provenance.thresholds["browser"] == (25, 32)
    a = NormalModel.load(provenance_model(tmp_path / "a", "learned_max"))
    assert a.provenance is not None and a.provenance.thresholds["shell"] == (68, 196)
    # classes an older artifact lacks are resolved as fit resolves them: http borrows web's,
    # a class with nothing to borrow gets the floor
    lacking = {**doc["provenance"], "thresholds": dict(doc["provenance"]["thresholds"])}
    del lacking["thresholds"]["http"], lacking["thresholds"]["script"]
    cue = ProvenanceCue.from_dict(lacking)
    assert cue.thresholds["http"] == tuple(doc["provenance"]["thresholds"]["web"])
    assert cue.thresholds["script"] == (cue.floor, cue.floor)
    assert cue.thresholds["shell"] == (32, 32)
    # an artifact from before the cue still loads (no provenance alerts then)
    del doc["provenance"], doc["checksum"]
    old = NormalModel.from_dict({**doc, "checksum": _checksum(doc)})
    assert old.provenance is None


#: what an explanation may hold: numbers, units, the class, tool names, fixed words
_EXPLANATION = re.compile(
    r"^\d+ B of [A-Za-z0-9_]+'s result sent by (web|browser|http|shell|script) egress "
    r"\(longest run \d+ B vs \d+ B, total \d+ B vs \d+ B(, [a-z0-9+]+-encoded)?\)$"
)


def test_live_scorer_alerts_at_once_with_numbers_and_tool_names_only(tmp_path: Path) -> None:
    path = provenance_model(tmp_path)
    rows = session(["Read", "Bash", "Read", "WebFetch", "Bash", "Read"], name="exfil")
    values = [
        ("none", 0, 0),
        ("shell", 20, 20),  # normal
        ("none", 0, 0),
        ("web", 400, 400),  # a document to the web
        (None, None, None),  # not measured
        ("none", 0, 0),
    ]
    calls = with_provenance(rows, values)
    enc = calls.column("source_tool").to_pylist()
    enc[3] = "Read"
    calls = calls.set_column(
        calls.schema.get_field_index("source_tool"), "source_tool", pa.array(enc, pa.string())
    )
    encoding = ["none"] * len(rows)
    encoding[3] = "base64"
    calls = calls.set_column(
        calls.schema.get_field_index("reused_encoding"),
        "reused_encoding",
        pa.array(encoding, pa.string()),
    )
    store = Store(tmp_path / "store")
    with LiveScorer(path, store) as live:
        alerts = [a for a in live.process(calls) if a["cue"] == "provenance"]
        assert live.provenance_unmeasured == 1
    assert len(alerts) == 1
    alert = alerts[0]
    assert (alert["cue_set"], alert["detector"], alert["call_index"]) == ("provenance", "point", 3)
    assert (alert["score"], alert["threshold"], alert["tool"]) == (400.0, 23.0, "WebFetch")
    assert alert["explanation"] == (
        "400 B of Read's result sent by web egress (longest run 400 B vs 23 B, "
        "total 400 B vs 23 B, base64-encoded)"
    )
    assert _EXPLANATION.match(alert["explanation"])
    stored = store.query(
        "SELECT cue, detector, explanation FROM alerts WHERE cue = 'provenance'"
    ).to_pylist()
    assert stored == [
        {"cue": "provenance", "detector": "point", "explanation": alert["explanation"]}
    ]
