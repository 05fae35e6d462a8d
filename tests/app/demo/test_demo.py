"""``toolwatch demo`` end to end (a real subprocess, reduced size), its store handling, and the
demo agent's retry policy through the real fault proxy.

The end-to-end test checks the demo's claims against the store it leaves behind, not only its
printout: the headline table carries numbers beside the study's, the live alert is in the
``alerts`` view for the runaway session and absent for the clean one, and the collected calls
have the shape the agent produced (failed, labelled ``Grep`` retries; a clean task).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from support.canary import assert_absent, assert_store_clean
from toolwatch.app.demo.agent import (
    FAULTY_TOOL,
    TASK_STEPS,
    AgentRun,
    DemoAgent,
    Pacing,
    demo_scenario,
    exfiltration_scenario,
)
from toolwatch.app.demo.demo_store import prepare_store
from toolwatch.app.demo.exfiltration import EXFIL_SCENARIO_FILE
from toolwatch.app.demo.options import MARKER, MODEL_FILE, QUICK, SCENARIO_FILE, DemoError
from toolwatch.collector.sources.simulator import SimulationConfig, generate
from toolwatch.collector.store.compaction import COMMIT_LOCK
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.faults.library import parse_scenario
from toolwatch.injection.faults.server import scenario_server
from toolwatch.injection.proxy.proxy import run_proxy

SEED = 0


def toolwatch(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "toolwatch", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def quick_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    work = tmp_path_factory.mktemp("demo")
    store = work / "demo-store"
    proc = toolwatch("demo", "--quick", "--store", str(store), cwd=work)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    (work / "stderr.txt").write_text(proc.stderr)  # read by the test of the demo's quiet
    return store, proc.stdout


def test_the_demo_keeps_the_proxys_per_fault_lines_off_stderr(quick_demo: tuple[Path, str]) -> None:
    """The demo prints its own lines: the fault proxy's "injected A2 ... into call #n" INFO
    line for every faulted call (logged by ``proxy.outcomes``, which the demo's quiet list,
    naming ``proxy.proxy`` only, missed) stays off stderr unless ``-v``; so do the "serving
    scenario" start lines of its three stdio servers (child processes, told the level through
    $TOOLWATCH_LOG_LEVEL) and the last stage's "live scoring resumed" line (its scorer built
    before the quiet began): no INFO line at all."""
    store, _ = quick_demo
    err = (store.parent / "stderr.txt").read_text()
    assert "toolwatch.injection.proxy" not in err, err
    assert "serving scenario" not in err and "live scoring resumed" not in err, err
    assert not [line for line in err.splitlines() if " INFO " in line], err


def test_demo_prints_every_stage_and_the_headline_table(quick_demo: tuple[Path, str]) -> None:
    store, out = quick_demo
    for i, stage in enumerate(("simulate", "train", "experiment", "live", "exfiltration"), 1):
        assert f"[{i}/6] {stage}" in out
        assert re.search(rf"\({stage}: \d+\.\d s\)", out), stage
    assert "SIMULATED workload" in out
    assert f"{QUICK['sessions']} sessions" in out
    # train counts sessions as the simulator does (a subagent is a session of its own)
    simulated = re.search(r"train\s+\S+ → \S+: (\d+) sessions, ([\d,]+) calls", out)
    trained = re.search(r"train\s+\S+\.\.\S+: (\d+) sessions, ([\d,]+) calls", out)
    assert simulated and trained and simulated.groups() == trained.groups()
    # the headline: ours with an interval beside the study's published figure, for every kind
    assert "all cues + CUSUM" in out
    assert re.search(r"runaway retry\s+\d+% \(\d+–\d+\)\s+84% \(79–88\)\s+0\.\d\d\s+0\.93", out)
    assert re.search(r"burst \(different responses\)\s+\d+% \(\d+–\d+\)\s+91% \(85–95\)", out)
    assert re.search(r"control: same-response burst\s+\d+% \(\d+–\d+\)\s+1%", out)
    # the live alert line as it arrived, then the dashboard command, then the timings
    assert re.search(
        r"ALERT\s+session demo-runaway-s0 call #\d+ \(Grep, retry \d+\): "
        r"all·CUSUM \d+\.\d\d > \d+\.\d\d, cue \w+",
        out,
    )
    # the exfiltration alert as it arrived: bytes, threshold, egress class, source tool
    assert re.search(
        r"ALERT\s+session demo-exfil-s0 call #\d+ \(WebFetch\): provenance·POINT "
        r"[\d,]+ B > \d+ B — [\d,]+ B of Read's result sent by web egress .*url-encoded",
        out,
    )
    # the latency column is all·CUSUM's, and the study's single-cue latencies are shown as such
    assert "latency all·CUSUM" in out
    assert re.search(
        r"burst \(different responses\): study 1, ours [\d.–]+ \(both time·point\)", out
    )
    assert re.search(r"runaway retry: study 5, ours [\d.–]+ \(both failure·ewma\)", out)
    # counts read as counts: "0 alerts", "1 provenance alert", never "alert(s)"
    assert "(s)" not in out
    assert re.search(r"clean: .* — 0 alerts \(peak", out)
    assert re.search(r"calls in the store, [1-9]\d* alerts? in its alerts table", out)
    assert re.search(r"exfil: \d+ calls, task finished — 1 provenance alert;", out)
    # it ends with the command that opens the dashboard
    lines = out.rstrip().splitlines()
    assert lines[-2] == "[6/6] dashboard"
    assert lines[-1].split() == [
        "open",
        "the",
        "dashboard:",
        "toolwatch",
        "app",
        "--store",
        str(store),
    ]
    total = float(re.search(r"total (\d+\.\d) s", out).group(1))  # type: ignore[union-attr]
    assert total < 90


def test_demo_store_holds_calls_experiments_and_the_live_alert(
    quick_demo: tuple[Path, str],
) -> None:
    root, _ = quick_demo
    store = Store(root)
    assert {"calls", "experiments", "experiment_runs", "alerts"} <= set(store.tables())
    assert (root / MODEL_FILE).is_file()
    assert json.loads((root / MARKER).read_text())["status"] == "done"

    simulated = store.query("SELECT count(*) FROM calls WHERE source = 'simulated'")
    expected = generate(SimulationConfig(seed=SEED, sessions=QUICK["sessions"])).num_rows
    assert simulated.column(0)[0].as_py() == expected  # deterministic for the seed

    runs = store.query(
        "SELECT count(*), count(DISTINCT kind) FROM experiments WHERE run_id = 'demo-s0'"
    ).to_pylist()[0]
    assert runs["count_star()"] > 0 and runs["count(DISTINCT kind)"] == 9

    live = store.query(
        "SELECT session_id, tool, failed, label, response_id, source FROM calls "
        "WHERE session_id LIKE 'demo-%' ORDER BY session_id, seq"
    ).to_pylist()
    clean = [r for r in live if r["session_id"] == "demo-clean-s0"]
    runaway = [r for r in live if r["session_id"] == "demo-runaway-s0"]
    assert all(r["source"] == "otlp" for r in live)
    calls_in_task = sum(len(step) for step in TASK_STEPS)
    assert len(clean) == calls_in_task and not any(r["failed"] for r in clean)
    assert len({r["response_id"] for r in clean}) == len(TASK_STEPS)
    greps = [r for r in runaway if r["tool"] == FAULTY_TOOL]
    assert len(greps) == 1 + QUICK["retries"]
    assert all(r["failed"] and r["label"] for r in greps)  # the proxy's label reached the store
    assert len({r["response_id"] for r in greps}) == len(greps)  # one response per retry

    alerts = store.query(
        "SELECT session_id, call_index, tool, score, threshold FROM alerts "
        "WHERE cue != 'provenance' ORDER BY alert_time"
    ).to_pylist()
    assert [a["session_id"] for a in alerts] == ["demo-runaway-s0"]
    first = alerts[0]
    first_failure = next(i for i, r in enumerate(runaway) if r["failed"])
    assert first["tool"] == FAULTY_TOOL
    assert first_failure < first["call_index"] <= first_failure + QUICK["retries"]
    assert first["score"] > first["threshold"]


def test_demo_store_holds_the_exfiltration_alert_with_numbers_only(
    quick_demo: tuple[Path, str],
) -> None:
    root, _ = quick_demo
    store = Store(root)
    (alert,) = store.query(
        "SELECT session_id, call_index, tool, score, threshold, explanation FROM alerts "
        "WHERE cue = 'provenance'"
    ).to_pylist()
    calls = store.query(
        "SELECT tool, egress, payload_longest, source_tool, reused_encoding, label FROM calls "
        "WHERE session_id = 'demo-exfil-s0' ORDER BY seq"
    ).to_pylist()
    sent = calls[alert["call_index"]]
    assert alert["session_id"] == "demo-exfil-s0" and alert["tool"] == sent["tool"] == "WebFetch"
    assert (sent["egress"], sent["source_tool"], sent["reused_encoding"]) == ("web", "Read", "url")
    assert alert["score"] == sent["payload_longest"] > 1000 > alert["threshold"]
    assert alert["explanation"].startswith(f"{sent['payload_longest']} B of Read's result")
    # the fault proxy's label is on the Read it planted the order in, and the task went on
    assert [c["tool"] for c in calls].count("Edit") == 1
    assert any(c["tool"] == "Read" and c["label"] for c in calls)
    # no content of the file the agent sent, in any table of the store
    for table in ("calls", "alerts", "tool_lists"):
        assert "MAX_RETRIES" not in repr(store.query(f"SELECT * FROM {table}").to_pylist())


#: lines of the file the demo's agents read (``Read``'s response) and the exfiltrating call sends
FILE_LINES = (
    "RETRY_STATUS = frozenset({429, 500, 502, 503, 504})",
    "def with_retries(send: Callable[[], tuple[int, T]]) -> T:",
)
#: the files the demo writes for its MCP server to serve (the server's own data)
SCENARIO_FILES = (SCENARIO_FILE.as_posix(), EXFIL_SCENARIO_FILE.as_posix())


def test_the_whole_demo_prints_and_stores_no_line_of_the_file_it_sent(
    quick_demo: tuple[Path, str],
) -> None:
    root, out = quick_demo
    assert "provenance·POINT" in out  # the file was measured and sent: the positive control
    for line in FILE_LINES:
        assert line in exfiltration_scenario()["tools"][2]["response"]["text"]
        assert_absent(out, line, "the demo's printout")
        assert_store_clean(Store(root), line, inputs=SCENARIO_FILES)


# ----------------------------------------------------------------------------- failing stages


def test_store_path_that_is_a_file_fails_the_store_stage(tmp_path: Path) -> None:
    target = tmp_path / "not-a-dir"
    target.write_text("keep me\n")
    proc = toolwatch("demo", "--quick", "--store", str(target), cwd=tmp_path, timeout=60)
    assert proc.returncode == 1
    assert "stage 'store' failed" in proc.stderr and str(target) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert target.read_text() == "keep me\n"


def test_foreign_directory_is_refused_untouched(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    (target / "calls").mkdir(parents=True)
    (target / "notes.txt").write_text("important\n")
    proc = toolwatch("demo", "--quick", "--store", str(target), cwd=tmp_path, timeout=60)
    assert proc.returncode == 1
    assert "not a previous demo store" in proc.stderr
    assert (target / "notes.txt").read_text() == "important\n" and (target / "calls").is_dir()


def test_bad_option_exits_2(tmp_path: Path) -> None:
    proc = toolwatch("demo", "--sessions", "2", "--store", str(tmp_path / "s"), cwd=tmp_path)
    assert proc.returncode == 2 and "--sessions must be at least 4" in proc.stderr
    assert not (tmp_path / "s").exists()


# ----------------------------------------------------------------------------- the store


def _previous_demo(root: Path) -> None:
    part = root / "calls" / "date=2026-08-04"
    part.mkdir(parents=True)
    (part / "part-1.parquet").write_bytes(b"old")
    (root / "calls" / ".compact.lock").write_bytes(b"")
    (root / "models").mkdir()
    (root / "models" / "model.json").write_text("{}")
    (root / MARKER).write_text(json.dumps({"toolwatch_demo": 1, "status": "done"}))


def test_previous_demo_store_is_wiped(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _previous_demo(root)
    store = prepare_store(root)
    assert store.root == root
    assert sorted(p.name for p in root.iterdir()) == [MARKER]
    assert json.loads((root / MARKER).read_text())["status"] == "running"


def test_previous_demo_store_that_was_read_is_wiped(tmp_path: Path) -> None:
    """Reading a store leaves its commit lock; a second demo on the same store still runs."""
    root = tmp_path / "store"
    _previous_demo(root)
    with Store(root).reading():  # what every query does first
        pass
    assert (root / COMMIT_LOCK).is_file()
    prepare_store(root)
    assert sorted(p.name for p in root.iterdir()) == [MARKER]


def test_previous_demo_store_with_foreign_files_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _previous_demo(root)
    (root / "thesis.tex").write_text("x")
    (root / "calls" / "README").write_text("x")
    with pytest.raises(DemoError, match=r"thesis\.tex"):
        prepare_store(root)
    assert (root / "calls" / "date=2026-08-04" / "part-1.parquet").exists()
    assert (root / "models" / "model.json").exists()


@pytest.mark.parametrize("marker", ["not json", json.dumps({"toolwatch_demo": 2})])
def test_foreign_marker_is_not_trusted(tmp_path: Path, marker: str) -> None:
    root = tmp_path / "store"
    _previous_demo(root)
    (root / MARKER).write_text(marker)
    with pytest.raises(DemoError, match="not a previous demo store"):
        prepare_store(root)
    assert (root / "models" / "model.json").exists()


# ----------------------------------------------------------------------------- the agent


def test_agent_runs_away_only_behind_the_armed_proxy() -> None:
    """Same agent, same server: transparent proxy → task done; armed proxy → the retry loop."""
    scenario = parse_scenario(demo_scenario())
    pacing = Pacing(think_s=(0.0, 0.0), retry_s=(0.0, 0.0), max_retries=5)

    async def main() -> dict[str, AgentRun]:
        runs: dict[str, AgentRun] = {}
        for name, armed in (("clean", None), ("runaway", scenario)):
            agent = DemoAgent(name, f"t-{name}", seed=SEED, pacing=pacing)
            upstream = scenario_server(scenario)
            async with run_proxy(armed, upstream) as proxy, Client(proxy) as client:
                runs[name] = await agent.run(client)
        return runs

    runs = anyio.run(main)
    clean, runaway = runs["clean"], runs["runaway"]
    assert clean.finished and clean.failures == 0 and clean.responses == len(TASK_STEPS)
    assert [c.tool for c in clean.calls] == [t for step in TASK_STEPS for t, _ in step]
    assert not runaway.finished and runaway.gave_up_on == FAULTY_TOOL
    tools = [c.tool for c in runaway.calls]
    assert tools == ["Glob"] + [FAULTY_TOOL] * (1 + pacing.max_retries)
    assert [c.retry for c in runaway.calls[1:]] == list(range(1 + pacing.max_retries))
    assert runaway.failures == 1 + pacing.max_retries
    assert len({c.response_id for c in runaway.calls}) == len(runaway.calls)


def test_pacing_is_deterministic_for_the_seed() -> None:
    a = DemoAgent("runaway", "s", seed=3).rng.uniform(size=5)
    b = DemoAgent("runaway", "s", seed=3).rng.uniform(size=5)
    c = DemoAgent("runaway", "s", seed=4).rng.uniform(size=5)
    assert (a == b).all() and not (a == c).all()
