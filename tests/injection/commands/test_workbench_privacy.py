"""Privacy of ``toolwatch workbench run`` end to end: a scenario whose task, tool descriptions,
responses and fault texts all carry a canary (the task's canary reaches the agent's arguments)
runs with telemetry (spans through the in-process collector into ``calls``/``tool_lists``) and
with ``--no-telemetry``; the canary is in no form in the store (files, decoded Parquet, every
table — ``workbench_runs`` too), in stdout/stderr (``--json`` and ``-v``) or in the log.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from support.canary import assert_absent, assert_store_clean, make_canary
from toolwatch.cli import main as cli_main
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.faults.codec import scenario_to_json
from toolwatch.injection.faults.library import find_scenario

STRUCTURAL = {"name", "tool", "action", "pointer", "type", "placement", "payload_id", "required"}


def _plant(value: Any, canary: str, key: str | None = None) -> Any:
    """``value`` with `` <canary>`` after every free-text string (prose, not ids or names)."""
    if isinstance(value, dict):
        return {k: _plant(v, canary, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_plant(v, canary, key) for v in value]
    if isinstance(value, str) and key not in STRUCTURAL and " " in value and len(value) > 20:
        return f"{value} {canary}"
    return value


def _scenario(tmp_path: Path, scenario_id: str, canary: str) -> Path:
    doc = scenario_to_json(find_scenario(scenario_id))
    doc["task"] = f"{doc['task']} {canary}"
    for tool in doc["tools"]:
        tool["description"] = f"{tool['description']} {canary}"
        tool["response"] = _plant(tool["response"], canary)
    doc["fault"]["params"] = _plant(doc["fault"]["params"], canary)
    path = tmp_path / f"{scenario_id}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("telemetry", [True, False], ids=["telemetry", "no-telemetry"])
@pytest.mark.parametrize("scenario_id", ["c1-support-01", "b4-finance-01"])
def test_no_canary_in_what_a_workbench_run_writes(
    tmp_path: Path,
    scenario_id: str,
    telemetry: bool,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    canary = make_canary()
    path = _scenario(tmp_path, scenario_id, canary)
    assert path.read_text().count(canary) >= 3  # planted in task, descriptions, responses
    store = tmp_path / "store"
    argv = ["-v", "workbench", "run", str(path), "--agent", "naive", "--mitigation", "all"]
    argv += ["--store", str(store), "--json", *([] if telemetry else ["--no-telemetry"])]
    with caplog.at_level(logging.DEBUG):
        assert cli_main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["scenario_id"] == scenario_id
    for what, text in (("stdout", out), ("stderr", err), ("log", caplog.text)):
        assert_absent(text, canary, what)
    assert_store_clean(Store(store), canary)
    con = Store(store).connect()
    try:
        calls = con.execute("SELECT count(*) FROM calls").fetchone()
        runs = con.execute("SELECT count(*) FROM workbench_runs").fetchone()
    finally:
        con.close()
    assert runs is not None and runs[0] >= 3  # the rows are there, only their content is not
    assert calls is not None and (calls[0] > 0) == telemetry
