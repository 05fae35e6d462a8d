"""Reproduce → intervene → mitigate: divergence, the replay server, full runs, the suite, the
store rows and the CLI — real mcp.Client, real MCPServer, real Parquet/DuckDB."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from support.paths import FIXTURES
from support.workbench import DOC_TEXT, PAYLOAD, scenario, step, trajectory
from toolwatch.cli import main as cli_main
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.faults.codec import scenario_to_json
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.library import load_library, load_scenario
from toolwatch.injection.faults.server import ScenarioServer
from toolwatch.injection.mitigations.wrapper import MitigationEvent
from toolwatch.injection.workbench.agent import AgentConfig
from toolwatch.injection.workbench.checks import CheckResult, check
from toolwatch.injection.workbench.labels import Labels
from toolwatch.injection.workbench.naive_agent import NaiveAgent
from toolwatch.injection.workbench.replay import ReplayServer
from toolwatch.injection.workbench.report import RUNS_TABLE, report_rows, runs_schema
from toolwatch.injection.workbench.runner import (
    PhaseResult,
    RunReport,
    WorkbenchConfig,
    run_agent,
    run_scenario,
)
from toolwatch.injection.workbench.suite import run_suite
from toolwatch.injection.workbench.trajectory import Recording, first_divergence

FAST = WorkbenchConfig(
    agent=AgentConfig(call_timeout=0.3, base_delay=0.001), retry_base_delay=0.001
)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ============================================================================== divergence


def _pair(**changes: Any) -> tuple[Any, Any]:
    base = [
        step(0, "search_docs", {"query": "q"}, structured={"matches": []}),
        step(1, "get_doc", {"doc_id": "d1"}, structured={"text": "t"}),
    ]
    other = list(base)
    for index, replacement in changes.items():
        other[int(index[1:])] = replacement
    return trajectory("s", base, "answer", "clean"), trajectory("s", other, "answer")


def test_identical_trajectories_do_not_diverge() -> None:
    left, right = _pair()
    assert first_divergence(left, right) is None


def test_divergence_at_an_outcome_change() -> None:
    left, right = _pair(s0=step(0, "search_docs", {"query": "q"}, outcome="timeout"))
    d = first_divergence(left, right)
    assert d is not None and d.step == 0 and "ok -> timeout" in d.reason


def test_divergence_at_changed_arguments_and_tool() -> None:
    left, right = _pair(s1=step(1, "get_doc", {"doc_id": "d2"}, structured={"text": "t"}))
    d = first_divergence(left, right)
    assert d is not None and d.step == 1 and "arguments of get_doc" in d.reason
    left, right = _pair(s1=step(1, "http_post", {"url": "u"}, structured={}))
    d = first_divergence(left, right)
    assert d is not None and d.step == 1 and d.reason == "tool get_doc -> http_post"


def test_divergence_at_extra_missing_step_and_answer() -> None:
    left, _ = _pair()
    longer = trajectory("s", [*left.steps, step(2, "http_post", {"url": "u"})], "answer")
    d = first_divergence(left, longer)
    assert d is not None and (d.step, d.reason) == (2, "extra step http_post")
    shorter = trajectory("s", left.steps[:1], "answer")
    d = first_divergence(left, shorter)
    assert d is not None and (d.step, d.reason) == (1, "missing step get_doc")
    other_answer = trajectory("s", left.steps, "another answer")
    d = first_divergence(left, other_answer)
    assert d is not None and (d.step, d.reason) == (2, "final answer differs")


def test_a_result_change_with_the_same_outcome_is_not_a_step_divergence() -> None:
    left, right = _pair(s1=step(1, "get_doc", {"doc_id": "d1"}, structured={"text": "other"}))
    right.final_answer = "answer"
    assert first_divergence(left, right) is None  # same tool, args and outcome at every step


# ============================================================================== replay


def _record(sc: Any) -> tuple[Recording, Any]:
    recording = Recording()
    clean = run(
        run_agent(
            sc,
            NaiveAgent(),
            ScenarioServer(sc),
            mode="clean",
            conversation_id="rec",
            recording=recording,
        )
    )
    return recording, clean


def test_replay_without_a_fault_reproduces_the_clean_run() -> None:
    sc = scenario("A2")
    recording, clean = _record(sc)
    assert len(recording) == 2 and recording.tools is not None
    server = ReplayServer(recording)  # no fallback: every call must come from the recording
    replay = run(run_agent(sc, NaiveAgent(), server, mode="faulted", conversation_id="rep"))
    assert first_divergence(clean, replay) is None
    assert [s.result.structured_content for s in replay.steps] == [  # type: ignore[union-attr]
        s.result.structured_content  # type: ignore[union-attr]
        for s in clean.steps
    ]


def test_replay_answers_unrecorded_calls_from_the_fallback_or_says_so() -> None:
    sc = scenario("A2")
    recording, _ = _record(sc)

    async def call(server: ReplayServer, tool: str, args: dict[str, Any]) -> Any:
        from mcp import Client

        async with Client(server) as client:
            return await client.call_tool(tool, args)

    new_query = ("search_docs", {"query": "a query the clean run never sent"})
    missing = run(call(ReplayServer(recording), *new_query))
    assert missing.is_error and "no recorded response" in missing.content[0].text
    answered = run(call(ReplayServer(recording, fallback=ScenarioServer(sc)), *new_query))
    assert not answered.is_error
    # the fallback is the scenario server: another entity than its record is "not found"
    other = ("get_doc", {"doc_id": "never-recorded"})
    unknown = run(call(ReplayServer(recording, fallback=ScenarioServer(sc)), *other))
    assert unknown.is_error and "Not found" in unknown.content[0].text


@pytest.mark.parametrize(
    ("occurrence", "faulted_calls"),
    [
        ({"nth": 1}, [True, False]),
        ({"nth": [1, 2]}, [True, True, False]),
        ({"from": 1}, [True, True, True]),
    ],
)
def test_every_due_occurrence_is_faulted_retries_included(
    occurrence: dict[str, Any], faulted_calls: list[bool]
) -> None:
    sc = scenario("A2", occurrence=occurrence)
    recording, _ = _record(sc)
    server = ReplayServer(recording, engine=FaultEngine.for_scenario(sc))
    traj = run(
        run_agent(
            sc,
            NaiveAgent(),
            server,
            mode="mitigated",
            conversation_id="occ",
            mitigations=["retry"],
            config=FAST,
        )
    )
    searches = traj.calls_to("search_docs")
    assert [s.injected for s in searches] == faulted_calls
    assert [d.applied for d in server.deliveries] == faulted_calls


def test_a1_delay_is_real_and_the_client_deadline_expires() -> None:
    sc = scenario("A1", delay_ms=5000)
    recording, _ = _record(sc)
    server = ReplayServer(recording, engine=FaultEngine.for_scenario(sc))
    agent = NaiveAgent(AgentConfig(call_timeout=0.25))
    started = time.perf_counter()
    traj = run(run_agent(sc, agent, server, mode="faulted", conversation_id="t"))
    elapsed = time.perf_counter() - started
    first = traj.steps[0]
    assert first.outcome == "timeout" and first.injected
    assert 0.2 <= first.duration_s < 1.5  # the client gave up at its deadline ...
    assert elapsed < 4.0  # ... and nobody waited out the 5 s delay


def _listed_without(recording: Recording, tool: str, argument: str | None = None) -> None:
    """The recorded listing without ``tool`` (``argument``: without that argument of it), as
    a real upstream's could be."""
    assert recording.tools is not None
    kept = []
    for t in recording.tools.tools:
        if t.name == tool and argument is None:
            continue
        if t.name == tool:
            schema = json.loads(json.dumps(t.input_schema))
            schema["properties"].pop(argument)
            schema["required"] = [r for r in schema.get("required", []) if r != argument]
            t = t.model_copy(update={"input_schema": schema})
        kept.append(t)
    recording.tools = recording.tools.model_copy(update={"tools": kept})


@pytest.mark.parametrize(
    ("fault", "argument", "note"),
    [
        ("A4", "doc_id", "tools/list #1 of 'get_doc': nothing to rename in the tool's schema"),
        ("C2", None, "tools/list #1 of 'get_doc': no tool 'get_doc' in tools/list"),
    ],
)
def test_a_listing_fault_that_could_not_act_is_not_exercised_never_a_failure(
    fault: str, argument: str | None, note: str
) -> None:
    """A tools/list rewrite due on a listing it cannot act on is the proxy's not_applicable
    outcome; the replay server kept none, so an A4 whose renamed schema was never listed
    failed the agent for an argument it was never told had been renamed, and a C2 said only
    that the description was never read. The verdict now says the fault could not act."""
    sc = scenario(fault)
    recording, clean = _record(sc)
    _listed_without(recording, "get_doc", argument)
    server = ReplayServer(
        recording, engine=FaultEngine.for_scenario(sc), fallback=ScenarioServer(sc)
    )
    traj = run(run_agent(sc, NaiveAgent(), server, mode="faulted", conversation_id="na"))
    assert [d.describe() for d in server.not_applicable] == [note]
    assert traj.not_applicable == [note]
    verdict = check(sc, traj, clean)
    assert verdict.status == "not_exercised"
    assert verdict.reason == f"the fault fell due but could not act: {note}"


# ============================================================================== full runs


def test_retry_fixes_transient_a1_and_a2_for_the_naive_agent() -> None:
    for fault in ("A1", "A2"):
        report = run(run_scenario(scenario(fault), "naive", mitigations=["retry"], config=FAST))
        assert report.clean_solved is True
        assert report.faulted.check.status == "fail", fault
        d = report.faulted.divergence
        assert d is not None and d.step == 0
        mitigated = report.mitigated["retry"]
        assert mitigated.check.status == "pass", fault
        assert report.fix_confirmed("retry") is True
        assert mitigated.labels.recovery_action == "retry_recovered"


def test_retry_does_not_fix_a_fault_on_every_call() -> None:
    """The published workbench faulted only the first call, so retries recovered by
    construction; here the rule applies to retries too."""
    report = run(
        run_scenario(
            scenario("A2", occurrence={"from": 1}), "naive", mitigations=["retry"], config=FAST
        )
    )
    assert report.faulted.check.status == "fail"
    mitigated = report.mitigated["retry"]
    assert len(mitigated.trajectory.calls_to("search_docs")) == FAST.retry_attempts
    assert all(d.applied for d in mitigated.deliveries)
    assert mitigated.check.status == "fail" and report.fix_confirmed("retry") is False


@pytest.mark.parametrize(
    "drift",
    [
        pytest.param({"argument_renames": {"doc_id": "document_id"}}, id="arguments"),
        pytest.param({"field_renames": {"text": "body"}}, id="result-fields"),
    ],
)
def test_schema_validation_catches_schema_drift_for_the_naive_agent(drift: dict[str, Any]) -> None:
    """Renamed arguments are rejected by the server; renamed result fields break get_doc's
    declared output schema, so the real mcp client refuses the result (RuntimeError). Either
    way the naive agent drops the failure silently; the schema mitigation turns it into an
    explanation the agent passes on."""
    doc = scenario_to_json(scenario("A4"))
    doc["fault"]["params"] = drift
    from toolwatch.injection.faults.library import parse_scenario

    sc = parse_scenario(doc)
    assert sc.faulty_tool.output_schema is not None
    report = run(run_scenario(sc, "naive", mitigations=["schema"], config=FAST))
    faulted = report.faulted
    assert faulted.check.status == "fail"
    expected_failure = "invalid_arguments" if "argument_renames" in drift else "invalid_result"
    hit = faulted.trajectory.calls_to("get_doc")[0]
    assert hit.injected and hit.failure is not None and hit.failure.value == expected_failure
    mitigated = report.mitigated["schema"]
    assert mitigated.check.status == "pass" and report.fix_confirmed("schema") is True
    assert [e.kind for e in mitigated.trajectory.mitigation_events] == ["schema_mismatch"]
    assert "[toolwatch schema]" in mitigated.trajectory.final_answer or (
        "does not match its declared output schema" in mitigated.trajectory.final_answer
    )
    careful = run(run_scenario(sc, "careful", config=FAST))
    assert careful.faulted.check.status == "pass"


def test_scanner_stops_c1_without_leaking_the_payload() -> None:
    report = run(run_scenario(scenario("C1"), "naive", mitigations=["scan"], config=FAST))
    assert report.faulted.check.status == "fail"
    assert PAYLOAD in report.faulted.trajectory.final_answer
    scanned = report.mitigated["scan"]
    assert scanned.check.status == "pass" and report.fix_confirmed("scan") is True
    assert PAYLOAD not in scanned.trajectory.final_answer
    events = scanned.trajectory.mitigation_events
    assert [e.kind for e in events] == ["blocked"]
    assert all(PAYLOAD not in e.detail for e in events)


def test_careful_agent_needs_no_fix_and_fix_confirmed_says_so() -> None:
    report = run(run_scenario(scenario("C1"), "careful", mitigations=["scan"], config=FAST))
    assert report.faulted.check.status == "pass"
    assert report.fix_confirmed("scan") is None


def test_a_fault_on_a_tool_the_agent_never_calls_is_not_exercised() -> None:
    sc = scenario("A2", occurrence={"nth": 1})
    doc = scenario_to_json(sc)
    doc["fault"]["tool"] = "http_post"  # a sink the plan never calls
    from toolwatch.injection.faults.library import parse_scenario

    unused = parse_scenario(doc)
    report = run(run_scenario(unused, "naive", mitigations=["retry"], config=FAST))
    assert report.faulted.check.status == "not_exercised"
    assert report.mitigated["retry"].check.status == "not_exercised"
    assert report.fix_confirmed("retry") is None
    assert report.faulted.labels.failure_detection == "n/a"
    rows = report_rows(report, run_id="r1", config=FAST)
    assert [r["exercised"] for r in rows] == [False, False, False]
    assert not any(r["passed"] for r in rows)


def test_rows_are_content_free_and_land_in_the_store(tmp_path: Path) -> None:
    report = run(run_scenario(scenario("C1"), "naive", mitigations=["scan", "all"], config=FAST))
    rows = report_rows(report, run_id="run-7", config=FAST)
    assert [r["mode"] for r in rows] == ["clean", "faulted", "mitigated", "mitigated"]
    assert [r["mitigation"] for r in rows] == ["none", "none", "scan", "retry+schema+scan+verify"]
    blob = json.dumps(rows, default=str)
    assert PAYLOAD not in blob and DOC_TEXT[:30] not in blob
    assert json.loads(rows[0]["config"])["agent"]["call_timeout"] == 0.3
    store = Store(tmp_path)
    store.append(RUNS_TABLE, rows, schema=runs_schema(), partition_by="time")
    got = store.query(
        f"SELECT mode, mitigation, status, fix_confirmed, divergence_step FROM {RUNS_TABLE} "
        "ORDER BY mode, mitigation"
    ).to_pylist()
    assert got[0] == {
        "mode": "clean",
        "mitigation": "none",
        "status": "not_exercised",
        "fix_confirmed": None,
        "divergence_step": None,
    }
    assert got[1]["status"] == "fail" and got[1]["divergence_step"] == 2
    assert got[2]["fix_confirmed"] is True and got[3]["fix_confirmed"] is True


# ============================================================================== suite


def _one_per_fault() -> list[Any]:
    seen: dict[str, Any] = {}
    for sc in load_library():
        seen.setdefault(sc.fault_type, sc)
    return list(seen.values())


def test_suite_summary_is_stable_for_a_seed() -> None:
    scenarios = _one_per_fault()
    assert len(scenarios) == 12

    def once() -> dict[str, Any]:
        result = run(
            run_suite(
                scenarios,
                ["naive", "careful"],
                mitigations=["retry", "scan"],
                config=FAST,
                concurrency=12,
            )
        )
        assert len(result.reports) == 24 and len(result.rows()) == 24 * 4
        return result.summary()

    first, second = once(), once()
    assert first == second
    matrix = first["pass_matrix"]
    assert matrix["careful"]["C1"]["passed"] == matrix["careful"]["C1"]["exercised"] == 1
    assert matrix["naive"]["C1"]["passed"] == 0
    impact = first["mitigation_impact"]["naive"]["C1"]
    assert impact["scan"]["pass_rate"] == 1.0 and impact["scan"]["fixed"] == 1
    assert set(first["mitigations"]) == {"none", "retry", "scan"}


def test_library_exercises_every_fault_type_at_least_five_times() -> None:
    """Faulted runs of the reference agent over the whole library: every fault type is
    exercised in >= 5 scenarios, and the scenarios it does not reach are exactly the ones
    declared so (``metadata.reference_agents``), reported as not exercised, never as passed."""
    library = load_library()
    result = run(run_suite(library, ["naive"], config=FAST, concurrency=16))
    rows = [r for r in result.rows() if r["mode"] == "faulted"]
    exercised = Counter(r["fault_type"] for r in rows if r["exercised"])
    assert set(exercised) == {s.fault_type for s in library}
    assert min(exercised.values()) >= 5, exercised
    unreached = {r["scenario_id"] for r in rows if not r["exercised"]}
    declared = {s.id for s in library if s.metadata.get("reference_agents") == "not_exercised"}
    assert unreached == declared == {"a1-ops-01", "c2-ops-01"}
    assert not any(r["passed"] for r in rows if not r["exercised"])
    summary = result.summary()["pass_matrix"]["naive"]
    assert summary["A1"]["not_exercised"] == 1 and summary["C2"]["not_exercised"] == 1


# ============================================================================== CLI


def _write(sc: Any, path: Path) -> Path:
    path.write_text(json.dumps(scenario_to_json(sc)))
    return path


def _run_a2_naive_retry(tmp_path: Path, store: Path) -> int:
    """``workbench run`` of A2 with the naive agent and retry, into ``store``."""
    file = _write(scenario("A2"), tmp_path / "a2.json")
    return cli_main(
        ["workbench", "run", str(file), "--agent", "naive", "--mitigation", "retry",
         "--store", str(store), "--no-telemetry", "--call-timeout", "0.3"]
    )  # fmt: skip


def test_cli_run_prints_the_report_and_saves_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    code = _run_a2_naive_retry(tmp_path, store)
    out = capsys.readouterr().out
    assert code == 0
    assert "check A2.primary: FAIL" in out and "fix_confirmed: True" in out
    assert "first divergence: step 0" in out
    assert Store(store).query(f"SELECT count(*) AS n FROM {RUNS_TABLE}").to_pylist() == [{"n": 3}]


def test_cli_errors_name_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "s")
    assert cli_main(["workbench", "run", str(tmp_path / "nope.json"), "--store", store]) == 1
    assert "nope.json" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "toolwatch-scenario/1", "id": "x"}')
    assert cli_main(["workbench", "run", str(broken), "--store", store, "--no-telemetry"]) == 1
    assert "broken.json" in capsys.readouterr().err
    file = _write(scenario("A2"), tmp_path / "a2.json")
    assert cli_main(["workbench", "run", str(file), "--mitigation", "pray", "--store", store]) == 2
    assert "unknown mitigation" in capsys.readouterr().err
    assert cli_main(["workbench", "suite", "--detect", "--store", store]) == 1
    assert "--model" in capsys.readouterr().err
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    # output it cannot use: 1, as every command says it (it was 2, bad usage)
    assert cli_main(["workbench", "run", str(file), "--store", str(not_a_dir)]) == 1
    assert "is not a directory" in capsys.readouterr().err


def test_a_suite_with_invalid_files_is_refused_in_one_line_or_run_without_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A peer's suite with a few broken files: refused, counting them and naming the first,
    unless --skip-invalid, which runs the rest and names each file left out."""
    suite = tmp_path / "suite"
    suite.mkdir()
    _write(scenario("A2"), suite / "a2.json")
    _write(scenario("A2"), suite / "a2-again.json")  # the same id a second time
    (suite / "broken.json").write_text('{"format": "toolwatch-scenario/1", "id": "x"}')
    base = ["workbench", "suite", "--scenarios", str(suite), "--store", str(tmp_path / "s"),
            "--no-telemetry", "--agents", "careful", "--mitigations", "none"]  # fmt: skip
    assert cli_main(base) == 1  # input it cannot use, as `scenarios validate` says it
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "2 of 3 scenario files are not valid" in err
    assert "--skip-invalid runs the 1 valid one" in err
    summary = tmp_path / "summary.json"
    assert cli_main([*base, "--skip-invalid", "--json", str(summary)]) == 0
    out = capsys.readouterr()
    skipped = [line for line in out.err.splitlines() if "skipped" in line]
    assert len(skipped) == 2
    assert any("broken.json" in line for line in skipped)
    assert any("duplicate id" in line for line in skipped)
    assert "2 invalid scenario files left out" in out.out
    assert json.loads(summary.read_text())["skipped_invalid_files"] == 2


def test_a_suite_path_that_holds_no_scenario_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing path was "1 of 1 scenario files are not valid … --skip-invalid runs the 0
    valid ones"; an empty directory beside a full one was passed over."""
    (full := tmp_path / "full").mkdir()
    _write(scenario("A2"), full / "a2.json")
    (empty := tmp_path / "empty").mkdir()
    base = ["workbench", "suite", "--store", str(tmp_path / "s"), "--no-telemetry", "--agents",
            "careful", "--mitigations", "none", "--skip-invalid", "--scenarios"]  # fmt: skip
    for paths, said in (
        ([tmp_path / "nope"], f"no such file or directory: {tmp_path / 'nope'}"),
        ([full, empty], f"no scenario files (*.json) found in {empty}"),
    ):
        assert cli_main([*base, *map(str, paths)]) == 1  # what it found, as a missing store
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == f"toolwatch workbench: --scenarios: {said}\n"


def test_cli_llm_agent_without_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLWATCH_LLM_BASE_URL", raising=False)
    file = _write(scenario("A2"), tmp_path / "a2.json")
    code = cli_main(["workbench", "run", str(file), "--agent", "llm", "--store", str(tmp_path)])
    assert code == 2 and "TOOLWATCH_LLM_BASE_URL" in capsys.readouterr().err


def test_runs_reach_the_store_as_spans_and_the_detector_scores_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real OTLP path: instrumented client -> in-process collector -> store -> detection."""
    from toolwatch.detection import NormalModel

    store_dir = tmp_path / "store"
    scen_dir = tmp_path / "scenarios"
    scen_dir.mkdir()
    for sc in _one_per_fault():
        _write(sc, scen_dir / f"{sc.id}.json")
    base = ["workbench", "suite", "--scenarios", str(scen_dir), "--store", str(store_dir),
            "--mitigations", "scan", "--call-timeout", "0.3"]  # fmt: skip
    assert cli_main(base) == 0
    out = capsys.readouterr().out
    assert "Pass rate of faulted runs" in out and "Mitigation impact" in out
    store = Store(store_dir)
    calls = store.query(
        "SELECT session_id, tool, response_id, label FROM calls ORDER BY session_id, seq"
    )
    sessions = set(calls.column("session_id").to_pylist())
    runs = store.query(f"SELECT session_id, mode FROM {RUNS_TABLE}").to_pylist()
    assert sessions <= {r["session_id"] for r in runs}
    assert len(sessions) >= 0.9 * len(runs)  # a run that never reached a tool leaves no calls
    labels = {lab for lab in calls.column("label").to_pylist() if lab}
    assert any(lab.startswith("C1:") for lab in labels)
    assert all(r and "/r" in r for r in calls.column("response_id").to_pylist())

    # a model of these agents' clean behaviour, saved where `toolwatch train` puts it (the
    # store's own model, found without --model), then --detect against it
    from toolwatch.detection.model.location import MODEL_IN_STORE

    clean = store.query("SELECT * FROM calls WHERE ends_with(session_id, '-clean')")
    model_path = store_dir / MODEL_IN_STORE
    model_path.parent.mkdir(parents=True, exist_ok=True)
    NormalModel.fit(clean).calibrate(clean).save(model_path)
    code = cli_main([*base, "--detect", "--json", str(tmp_path / "s.json")])
    assert code == 0
    out = capsys.readouterr().out
    assert "Detection (all_cusum at the operating point)" in out
    detection = json.loads((tmp_path / "s.json").read_text())["detection"]
    assert set(detection["by_fault"]) == {sc.fault_type for sc in _one_per_fault()}
    for agents in detection["by_fault"].values():
        for cell in agents.values():
            assert cell["pairs"] + cell["missing"] == 1
            assert cell["separated"] <= cell["faulted_alarmed"] <= cell["pairs"]


# ============================================================================== fix_confirmed


def _phase(status: str, events: tuple[Any, ...] = (), guard: str = "pass") -> PhaseResult:
    traj = trajectory("test_A1", [], "x", "mitigated")
    traj.mitigation_events.extend(events)
    return PhaseResult(
        traj,
        CheckResult(status, "A1.primary", status, ("evidence",)),  # type: ignore[arg-type]
        Labels("n/a", "none_needed", "none"),
        None,
        [],
        [CheckResult(guard, "guard.answer", guard, ("e",))],  # type: ignore[arg-type]
    )


def test_fix_confirmed_needs_the_fault_fixed_no_new_failure_and_the_mitigation_acting() -> None:
    sc = scenario("A1")
    clean = trajectory(sc.id, [], "x", "clean")
    report = RunReport(sc, "naive", "r", clean, None, _phase("fail"))
    acted = (MitigationEvent("retry", "recovered", "search_docs", "attempt 2"),)
    report.mitigated = {
        "retry": _phase("pass", acted),
        "none-acted": _phase("pass"),
        # a scanner notice about the faulty tool's *description* is no fix of a failed call
        "scan": _phase("pass", (MitigationEvent("scan", "description_blocked", "search_docs"),)),
        "broke": _phase("pass", acted, guard="fail"),
        "still": _phase("fail", acted),
        "ne": _phase("not_exercised", acted),
        # the retry wrapper passing a 403 through unchanged did nothing to the fault
        "observed": _phase("pass", (MitigationEvent("retry", "not_retried", "search_docs"),)),
    }
    assert report.fix_verdict("retry") == (True, "fixed: retry recovered on search_docs")
    assert report.fix_verdict("none-acted")[0] is False
    assert "side effect" in report.fix_verdict("none-acted")[1]
    assert report.fix_verdict("scan")[0] is False
    assert report.fix_verdict("broke") == (False, "new failure: guard.answer")
    assert report.fix_verdict("still") == (False, "the primary check still fails")
    assert report.fix_verdict("ne")[0] is None
    assert report.fix_verdict("observed")[0] is False
    passing = RunReport(sc, "naive", "r", clean, None, _phase("pass"))
    passing.mitigated = {"retry": _phase("pass", acted)}
    assert passing.fix_confirmed("retry") is None


def test_the_verifier_gets_the_scenarios_date_context_not_its_stale_date() -> None:
    sc = load_scenario(FIXTURES / "agentcheck/templates/B1_population_stale.json")
    options = WorkbenchConfig().mitigation_options(sc)["verify"]
    assert options["require_fresh"] is True
    assert options["reference_time"].date().isoformat() == "2024-07-01"
    assert "stale_date" not in json.dumps(options, default=str)
    assert WorkbenchConfig().mitigation_options(sc)["scan"]["allowlist"] == []


def test_cli_runs_the_store_cannot_take_exit_1_not_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only or full store is no bad usage (2): it is a failure to do the job (1)."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(Store, "append", refuse)
    store = tmp_path / "store"
    code = _run_a2_naive_retry(tmp_path, store)
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().endswith(f"cannot write the runs to {store}: Read-only file system")
