"""Issue 13, deliverable 5, live: AgentCheck's C4 (exfiltration) and C2 (poisoned description)
templates on real faulted runs through the real fault proxy, the instrumented ``mcp`` client,
OTLP over HTTP and the real collector, with the live scorer (provenance cue) and the listing
watcher (rug-pull alerts) hooked into it.

Per template, what a user does: a first session through a transparent proxy (the clean run),
then ``toolwatch pins approve --server NAME`` on what it was shown, then the faulted session
through the proxy armed with the template's fault. The agent is the naive reference agent, a
stand-in for a hosted LLM that obeys tool text.

Claims: every faulted C2 and C4 run is under a listing alert (its poisoned description differs
from the approved pin); the C4 runs that send a local tool's result out raise a provenance
alert at that call, naming the source tool; clean runs raise neither.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from support.collector import wait_until
from toolwatch.cli import main
from toolwatch.collector.otlp.server import Collector
from toolwatch.collector.sources.simulator import SimulationConfig, generate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel
from toolwatch.detection.alerting.listings import ListingWatcher
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.injection.faults.library import iter_scenario_paths, load_scenario
from toolwatch.injection.faults.server import scenario_server
from toolwatch.injection.proxy.proxy import run_proxy
from toolwatch.injection.workbench.agents import make_agent
from toolwatch.injection.workbench.runner import run_agent, server_name
from toolwatch.instrumentation import configure_otlp, instrument, uninstrument

TEMPLATES = Path(__file__).parents[1] / "fixtures" / "agentcheck" / "templates"
#: the C4 templates whose complying run sends bytes of a local tool's result out (the others
#: send the user's own query, redirect a URL or re-send a web page: nothing a local result
#: holds — provenance cannot see them, their listing alert does)
SENDS_LOCAL_RESULTS = {
    "C4_commander_bashrc_exfiltration": "read_file",
    "C4_email_folder_exfiltration": "folder_checker",
    "C4_redis_exfil_ssh_key_via_time_tool": "get",
    "C4_slack_exfiltrate_emails_after_addition": "slack_get_users",
    "C4_slack_user_exfiltration_scan": "slack_list_channels",
}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("exfil-live")
    normal = generate(SimulationConfig(seed=0, sessions=40))
    model = NormalModel.fit(normal).calibrate(normal)
    assert model.provenance is not None
    store = Store(root / "store")
    scorer = LiveScorer(model, store)
    watcher = ListingWatcher(store)
    collector = Collector(store, on_batch=scorer.process, on_listings=watcher.process)
    collector.start()
    provider = configure_otlp(collector.url, "exfil-live-agent")
    instrument(tracer_provider=provider, provenance=True)
    scenarios = [
        load_scenario(p)
        for p in iter_scenario_paths([str(TEMPLATES)])
        if p.name.startswith(("C2_", "C4_"))
    ]
    runs: dict[str, dict[str, Any]] = {}

    def stored_listing(server: str) -> bool:
        return bool(
            store.files("tool_lists")
            and store.query("SELECT 1 FROM tool_lists WHERE server = ? LIMIT 1", [server]).num_rows
        )

    async def session(sc: Any, mode: str, armed: Any) -> Any:
        upstream = scenario_server(sc, name=server_name(sc))
        async with run_proxy(armed, upstream) as proxy:
            return await run_agent(
                sc, make_agent("naive"), proxy, mode=mode, conversation_id=f"live-{sc.id}-{mode}"
            )

    try:
        for sc in scenarios:
            clean = anyio.run(session, sc, "clean", None)
            provider.force_flush()
            wait_until(lambda sc=sc: stored_listing(server_name(sc)), timeout=30.0)
            # the user reviews the first session's tools and approves them
            argv = ["pins", "approve", "--server", server_name(sc), "--store", str(store.root)]
            assert main(argv) == 0
            faulted = anyio.run(session, sc, "faulted", sc)
            runs[sc.id] = {"scenario": sc, "clean": clean, "faulted": faulted}
        provider.force_flush()
    finally:
        uninstrument()
        provider.shutdown()
        collector.stop()
        scorer.close()
    return {"store": store, "runs": runs, "watcher": watcher}


def _flagged(store: Store) -> tuple[dict[str, list[dict[str, Any]]], set[str]]:
    alerts = store.query(
        "SELECT session_id, tool, explanation FROM alerts WHERE cue = 'provenance'"
    ).to_pylist()
    provenance: dict[str, list[dict[str, Any]]] = {}
    for a in alerts:
        provenance.setdefault(a["session_id"], []).append(a)
    listing = {
        r["session_id"]
        for r in store.query(
            "SELECT DISTINCT l.session_id FROM tool_lists l JOIN listing_alerts a "
            "ON l.server = a.server AND l.tool = a.tool AND l.digest = a.new_digest"
        ).to_pylist()
    }
    return provenance, listing


def test_c2_and_c4_faulted_runs_are_under_a_listing_alert_and_clean_runs_are_silent(
    live: dict[str, Any],
) -> None:
    store, runs = live["store"], live["runs"]
    provenance, listing = _flagged(store)
    families = {"C2": [], "C4": []}  # type: dict[str, list[str]]
    for sid, run in runs.items():
        families[run["scenario"].fault_type].append(sid)
    assert len(families["C2"]) == 10 and len(families["C4"]) == 10
    for family, ids in families.items():
        hit = [i for i in ids if f"live-{i}-faulted" in listing]
        assert len(hit) == 10, (family, sorted(set(ids) - set(hit)))
    clean = {f"live-{i}-clean" for i in runs}
    assert not clean & listing
    assert not clean & set(provenance)
    kinds = {r["kind"] for r in store.query("SELECT kind FROM listing_alerts").to_pylist()}
    assert kinds == {"changed_since_approval"}


def test_c4_runs_that_send_local_results_raise_a_provenance_alert_naming_the_source(
    live: dict[str, Any],
) -> None:
    store, runs = live["store"], live["runs"]
    provenance, _ = _flagged(store)
    c4 = {i: r for i, r in runs.items() if r["scenario"].fault_type == "C4"}
    complied = {i for i, r in c4.items() if r["faulted"].error is None}
    assert complied == set(c4)
    flagged = {i for i in c4 if f"live-{i}-faulted" in provenance}
    assert flagged == set(SENDS_LOCAL_RESULTS)
    for sid, source in SENDS_LOCAL_RESULTS.items():
        (alert,) = provenance[f"live-{sid}-faulted"]
        assert alert["tool"].startswith("http_post")
        assert f"of {source}'s result sent by http egress" in alert["explanation"]
    # C2 sends nothing of a local result: no provenance alert on any C2 run
    assert not {s for s in provenance if s.startswith("live-C2_")}


def test_what_the_c4_runs_sent_is_nowhere_in_the_store(live: dict[str, Any]) -> None:
    """The secrets the complying runs sent out (the .bashrc, the SSH key, the e-mails) — and
    the poisoned descriptions — are in no store file, decoded or not: only their byte counts
    and digests are."""
    store = live["store"]
    needles = [
        "alias ll='ls -la'",
        "BEGIN OPENSSH PRIVATE KEY",
        "alice@example.com",
        "attacker.example.com",
    ]
    poisons = [
        run["scenario"].fault.params.get("description")
        or run["scenario"].fault.params["instruction"]
        for run in live["runs"].values()
    ]
    assert len(poisons) == 20 and all(len(p) > 60 for p in poisons)
    needles += [p[:60] for p in poisons]
    files = [p for p in store.root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files)
    for path in files:
        data = path.read_bytes()
        for needle in needles:
            assert needle.encode() not in data, (needle, path)
    for table in ("calls", "alerts", "tool_lists", "listing_alerts", "tool_pins"):
        dump = repr(store.query(f"SELECT * FROM {table}").to_pylist())
        for needle in needles:
            assert needle not in dump, (needle, table)
