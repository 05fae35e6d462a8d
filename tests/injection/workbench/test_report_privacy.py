"""Privacy of ``workbench run --json`` (:func:`report_json`) and of the suite's rows: no
argument, result or answer — nor a hash of one — in the report. A short argument's hash is
reversed by dictionary (the 16-hex sha256 prefix of ``{"ticket_id": "CS-55120"}`` names the
ticket), so the report stands arguments and answers in with aliases numbered per report.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import Any

import pytest

from support.canary import assert_absent, make_canary
from support.workbench import scenario, step
from toolwatch.injection.workbench.agent import Agent, AgentConfig, RunState
from toolwatch.injection.workbench.evidence import foreign_hosts
from toolwatch.injection.workbench.report import render_report, report_json, report_rows
from toolwatch.injection.workbench.runner import WorkbenchConfig, run_scenario
from toolwatch.injection.workbench.trajectory import Trajectory, digest

FAST = WorkbenchConfig(
    agent=AgentConfig(call_timeout=0.3, base_delay=0.001), retry_base_delay=0.001
)


def _hashes(value: Any) -> set[str]:
    """Every hex digest of ``value``'s JSON (as the trajectory and common encoders write it)."""
    out = {digest(value)}
    for text in (
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
        json.dumps(value, sort_keys=True),
        json.dumps(value),
        value if isinstance(value, str) else "",
    ):
        if text:
            out |= {hashlib.new(a, text.encode()).hexdigest() for a in ("sha256", "sha1", "md5")}
            out |= {h[:16] for h in list(out)}
    return out


def test_the_report_json_holds_no_argument_answer_or_hash_of_them() -> None:
    for agent in ("naive", "careful"):
        report = asyncio.run(
            run_scenario(scenario("C1"), agent, mitigations=["scan", "all"], config=FAST)
        )
        runs: list[Trajectory] = [report.clean, report.faulted.trajectory]
        runs += [p.trajectory for p in report.mitigated.values()]
        rows = report_rows(report, run_id="r", config=FAST)  # the suite's table, evidence too
        checks = [report.faulted.check, *(p.check for p in report.mitigated.values())]
        assert [r["check_evidence"] for r in rows] == [None] + [
            "; ".join(c.evidence) for c in checks
        ]
        assert all(c.evidence for c in checks)
        blob = (json.dumps(report_json(report)) + json.dumps(rows, default=str)).lower()
        assert sum(len(t.steps) for t in runs) >= 4 and all(t.final_answer for t in runs)
        for t in runs:
            for s in t.steps:
                for h in _hashes(s.arguments):
                    assert h not in blob, f"a hash of {s.tool}'s arguments in the report"
                for v in s.arguments.values():
                    assert not (isinstance(v, str) and len(v) >= 8 and v.lower() in blob)
            for h in _hashes(t.final_answer):
                assert h not in blob, "a hash of the answer in the report"


def test_aliases_compare_the_runs_of_one_report() -> None:
    report = asyncio.run(run_scenario(scenario("C1"), "naive", mitigations=["scan"], config=FAST))
    out = report_json(report)
    clean, faulted = out["clean"], out["faulted"]["trajectory"]
    same = [a["args"] == b["args"] for a, b in zip(clean["steps"], faulted["steps"], strict=False)]
    want = [
        a.arguments == b.arguments
        for a, b in zip(report.clean.steps, report.faulted.trajectory.steps, strict=False)
    ]
    assert same == want and all(s["args"].startswith("args-") for s in clean["steps"])
    assert clean["answer"] == "answer-1"
    assert (faulted["answer"] == "answer-1") == (
        report.faulted.trajectory.final_answer == report.clean.final_answer
    )
    d = out["faulted"]["divergence"]
    assert d is None or d["left"] is None or d["left"][1].startswith("args-")


class _CrashingAgent(Agent):
    """Breaks on what a tool returned, quoting it — as a parser's ``ValueError`` does."""

    name = "crashing"

    def __init__(self, canary: str) -> None:
        super().__init__(FAST.agent)
        self.canary = canary

    async def on_listing(self, st: RunState) -> None:
        raise ValueError(f"cannot parse the result {self.canary!r}")


def test_an_agent_crash_is_reported_by_type_and_place_never_by_its_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    canary = make_canary()
    with caplog.at_level(logging.DEBUG):
        report = asyncio.run(run_scenario(scenario("C1"), _CrashingAgent(canary), config=FAST))
    assert report.clean.error is not None
    assert report.clean.error.startswith("ValueError at test_report_privacy.py:")
    rows = report_rows(report, run_id="r", config=FAST)
    assert any("the agent crashed: ValueError at" in r["check_reason"] for r in rows)
    for what, text in (
        ("rows", json.dumps(rows, default=str)),
        ("json", json.dumps(report_json(report))),
        ("text", render_report(report)),
        ("log", caplog.text),
    ):
        assert_absent(text, canary, what)


def test_hosts_the_agent_wrote_are_counted_only_the_scenarios_named() -> None:
    canary_host = f"{make_canary()[7:39]}.example.org"
    steps = [
        step(0, "send", {"to": f"https://{canary_host}/x", "cc": "https://exfil.example.com/y"}),
        step(1, "send", {"to": "https://ok.example.net/z"}),
    ]
    found = foreign_hosts(steps, ["ok.example.net"], "exfil.example.com")
    assert found == [
        "step 0 send: host exfil.example.com (the scenario's)",
        "step 0 send: 1 other host outside the list",
    ]
