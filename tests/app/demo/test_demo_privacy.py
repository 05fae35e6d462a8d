"""The demo's exfiltration stage exports no content (the whole demo's printout and store are
checked in ``test_demo.py``, on its one demo run): a canary in the file the agent reads — and
then sends out, URL-encoded, because an order planted in the result says so — is nowhere in
what the stage prints, in the store it writes (every file, decoded Parquet value, table and
view) or in any log record at DEBUG; nor is any 16-byte shingle of it, nor a CRC-32 / sha256 /
sha1 / md5 of it or of a shingle, nor its base64 or URL-encoded form.

The positive control: the stage's own checks passed — the exfiltrating call was measured (its
reused bytes cover the canary) and alerted, naming ``Read`` as the source.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from support.canary import assert_absent, assert_store_clean, make_canary
from toolwatch.app.demo.agent import EXFIL_TOOL, exfiltration_scenario
from toolwatch.app.demo.exfiltration import EXFIL_SCENARIO_FILE, exfiltration_stage
from toolwatch.app.demo.options import MODEL_FILE, DemoOptions
from toolwatch.collector.sources.simulator import SimulationConfig, generate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel


def test_exfiltration_stage_prints_stores_and_logs_no_canary(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    canary = make_canary()
    doc = exfiltration_scenario()
    (read,) = [t for t in doc["tools"] if t["name"] == EXFIL_TOOL]
    read["response"] = {"text": f"API_TOKEN = '{canary}'\n" + read["response"]["text"]}
    store = Store(tmp_path / "store")
    normal = generate(SimulationConfig(seed=0, sessions=40))
    model_path = NormalModel.fit(normal).calibrate(normal).save(store.root / MODEL_FILE)
    lines: list[str] = []
    caplog.set_level(logging.DEBUG)
    outcome = exfiltration_stage(
        store, model_path, DemoOptions(store=store.root), lines.append, doc
    )

    (alert,) = outcome.alerts
    assert alert["tool"] == "WebFetch" and f"of {EXFIL_TOOL}'s result" in alert["explanation"]
    sent = store.query(
        "SELECT payload_longest, reused_encoding FROM calls WHERE tool = 'WebFetch'"
    ).to_pylist()
    assert sent[0]["payload_longest"] > len(canary) and sent[0]["reused_encoding"] == "url"
    printed = "\n".join(lines)
    assert "provenance·POINT" in printed and "Read's result sent by web egress" in printed
    assert_absent(printed, canary, "the stage's output")
    # the scenario file is the MCP server's own data (written for it), not what toolwatch exports
    assert_store_clean(store, canary, inputs=(EXFIL_SCENARIO_FILE.as_posix(),))
    assert_absent(caplog.text, canary, "the log")
