"""``workbench suite --detect``'s live detectors on real runs of AgentCheck templates: the live
scorer and the listing watcher on the in-process collector, pins approved from each clean run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from toolwatch.cli import main
from toolwatch.collector.sources.simulator import SimulationConfig, generate
from toolwatch.detection import NormalModel

TEMPLATES = Path(__file__).parents[2] / "fixtures" / "agentcheck" / "templates"
PICKED = (
    "C4_commander_bashrc_exfiltration",  # sends read_file's result out: provenance
    "C4_inject_exfiltration_yelp_dashboard",  # redirects a URL: nothing local is sent
    "C2_amap_location_poison",
    "C2_github_poisoned_query",
)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("live-detect")
    scenarios = root / "scenarios"
    scenarios.mkdir()
    for name in PICKED:
        shutil.copy(TEMPLATES / f"{name}.json", scenarios)
    normal = generate(SimulationConfig(seed=0, sessions=40))
    model = NormalModel.fit(normal).calibrate(normal).save(root / "model.json")
    return {"root": root, "scenarios": scenarios, "model": model}


def _suite(setup: dict[str, Path], name: str, *extra: str) -> dict:  # type: ignore[type-arg]
    out = setup["root"] / f"{name}.json"
    argv = ["workbench", "suite", "--scenarios", str(setup["scenarios"]), "--mitigations",
            "none", "--store", str(setup["root"] / name), "--detect", "--model",
            str(setup["model"]), "--json", str(out), *extra]  # fmt: skip
    assert main(argv) == 0
    return json.loads(out.read_text())["detection"]["live"]  # type: ignore[no-any-return]


def test_pins_from_clean_runs_flag_every_poisoned_listing_and_provenance_the_local_send(
    setup: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    live = _suite(setup, "clean-pins")
    printed = capsys.readouterr().out
    by = live["by_fault"]
    for fault in ("C2", "C4"):
        for agent in ("naive", "careful"):
            cell = by[fault][agent]
            assert cell["faulted"]["listing"] == cell["faulted"]["runs"] == 2, (fault, agent)
            assert cell["clean"]["any"] == 0 and cell["clean"]["runs"] == 2
    complying = by["C4"]["naive"]["complying"]
    assert (complying["runs"], complying["provenance"], complying["listing"]) == (2, 1, 2)
    assert by["C4"]["careful"]["faulted"]["provenance"] == 0  # it does not comply
    assert by["C2"]["naive"]["faulted"]["provenance"] == 0
    # the simulated workload measures no provenance: every class at the 16 B floor, said so
    assert live["pins"] == "clean"
    assert live["provenance_thresholds"] == {
        c: [16, 16] for c in ("browser", "http", "script", "shell", "web")
    }
    assert "provenance thresholds (longest run, bytes): browser 16, http 16" in printed
    (alert,) = live["provenance_alerts"]
    assert "C4_commander_bashrc_exfiltration-naive-faulted" in alert["session_id"]
    assert "of read_file's result sent by http egress" in alert["explanation"]
    assert "Live alerts" in printed and "read_file's result" in printed
    assert "export PATH" not in printed  # numbers and names only


def test_without_pins_a_description_changed_between_sessions_raises_nothing(
    setup: dict[str, Path],
) -> None:
    live = _suite(setup, "no-pins", "--pins", "store")
    for fault in ("C2", "C4"):
        for agent in ("naive", "careful"):
            assert live["by_fault"][fault][agent]["faulted"]["listing"] == 0
    # the provenance cue needs no approval
    assert live["by_fault"]["C4"]["naive"]["complying"]["provenance"] == 1
