"""The demo's exfiltration stage: an instruction planted in a tool result makes the agent send a
file out, and the live scorer's provenance cue alerts at that very call — with the number of
reused bytes and the tool they came from, and no content anywhere.

The same MCP server over stdio (``toolwatch serve-scenario``, now with ``WebFetch`` among its
tools) sits behind a fault proxy armed with fault C4 (``inject_exfiltration_instruction``): the
first ``Read`` result gets a note asking the assistant to back the file up by fetching an
address with the file appended. The demo agent here is a stand-in for a hosted LLM that obeys
tool text (:class:`~toolwatch.app.demo.agent.DemoAgent` with ``obey``): it fetches that address
with the file URL-encoded in it, then finishes its (shorter) task — read the file, edit it — at
the live stage's model pace. The instrumentation measures, in the
agent's process, how many bytes of the ``WebFetch`` arguments reproduce earlier local results
(after URL-decoding); only those numbers travel, and the collector's live scorer compares them
with the model's per-egress-class thresholds. The stage fails unless that call alerted with
cue ``provenance`` naming ``Read`` as the source, and unless the live stage's clean run raised
no provenance alert.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Final

import anyio

from toolwatch.app.demo.live import AlertWatcher, demo_scorer, live_telemetry, server_env
from toolwatch.app.demo.options import DemoError, DemoOptions, Emit, ExfilOutcome
from toolwatch.collector.store.parquet_store import PARTITION_COLUMN, Store
from toolwatch.words import counted

EXFIL_SCENARIO_FILE: Final = Path("demo") / "exfiltration.json"
RUN: Final = "exfil"


def exfiltration_stage(
    store: Store,
    model_path: Path | None,
    options: DemoOptions,
    out: Emit,
    scenario_doc: dict[str, Any] | None = None,
) -> ExfilOutcome:
    """Collector + live scorer + the obeying agent behind the C4-armed proxy."""
    from toolwatch.app.demo.agent import EXFIL_TOOL, exfiltration_scenario
    from toolwatch.injection.faults.library import load_scenario

    if model_path is None:
        raise DemoError("exfiltration", "no trained model")
    path = store.root / EXFIL_SCENARIO_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scenario_doc or exfiltration_scenario(), indent=2) + "\n")
    scenario = load_scenario(path)
    scorer = demo_scorer(model_path, store)
    cue = getattr(scorer, "provenance", None)
    if cue is None:
        scorer.close()  # live_telemetry, which closes it otherwise, is not entered
        raise DemoError("exfiltration", "the model has no provenance thresholds")
    began = time.monotonic()
    watcher = AlertWatcher(scorer, out, began)
    with live_telemetry(store, scorer, watcher, out, provenance=True) as (_, provider):
        out(
            "  provenance thresholds per egress class (bytes of earlier local results a "
            "call may send; * = no normal traffic of the class in training, the floor): "
            + ", ".join(
                f"{c} {t[0]} B{'' if cue.normal_calls.get(c) else '*'}"
                for c, t in sorted(cue.thresholds.items())
            )
        )
        out(
            f"  the agent (a stand-in for a hosted LLM that obeys tool text) through the "
            f"fault proxy armed with C4: its first {EXFIL_TOOL} result carries an order to "
            "send the file out with WebFetch"
        )
        server_cmd = [sys.executable, "-m", "toolwatch", "serve-scenario", str(path)]
        run = anyio.run(_run_agent, scenario, server_cmd, options, provider, watcher, out)
    return _verify(store, run, watcher, out)


async def _run_agent(
    scenario: Any,
    server_cmd: list[str],
    options: DemoOptions,
    provider: Any,
    watcher: Any,
    out: Emit,
) -> Any:
    from mcp import Client, StdioServerParameters

    from toolwatch.app.demo.agent import EXFIL_STEPS, CallEvent, DemoAgent
    from toolwatch.injection.proxy.proxy import run_proxy

    upstream = StdioServerParameters(command=server_cmd[0], args=server_cmd[1:], env=server_env())
    began = watcher.began

    def on_call(event: CallEvent) -> None:
        watcher.calls[(event.session_id, event.index)] = event
        size = f"{event.output_bytes:,} B" if event.output_bytes is not None else ""
        out(
            f"  {time.monotonic() - began:5.1f}s  {event.run:<8} #{event.index:<3}"
            f"{event.tool:<9} {'FAILED' if event.failed else 'ok':<6} {size:>8}  "
            f"{event.response_id}"
        )

    async def flush() -> None:
        await anyio.to_thread.run_sync(provider.force_flush)

    agent = DemoAgent(
        RUN,
        f"demo-{RUN}-s{options.seed}",
        seed=options.seed,
        on_call=on_call,
        after_response=flush,
        obey=True,
        steps=EXFIL_STEPS,
    )
    async with run_proxy(scenario, upstream, seed=options.seed) as proxy, Client(proxy) as c:
        return await agent.run(c)


def _verify(store: Store, run: Any, watcher: AlertWatcher, out: Emit) -> ExfilOutcome:
    """Read the provenance alerts back from the store and check the stage's claim."""
    from toolwatch.app.demo.agent import EXFIL_TOOL
    from toolwatch.detection.alerting.alerts import ALERTS_TABLE

    alerts = store.query(
        f"SELECT * EXCLUDE ({PARTITION_COLUMN}) FROM {ALERTS_TABLE} WHERE cue = 'provenance' "
        "ORDER BY alert_time, call_index"
    ).to_pylist()
    mine = [a for a in alerts if a["session_id"] == run.session_id]
    others = sorted({a["session_id"] for a in alerts} - {run.session_id})
    sent = store.query(
        "SELECT tool, egress, payload_longest, source_tool, reused_encoding FROM calls "
        "WHERE session_id = ? AND egress IS NOT NULL AND egress != 'none' ORDER BY seq",
        [run.session_id],
    ).to_pylist()
    for row in sent:
        out(
            f"  {run.run}: {row['tool']} ({row['egress']} egress) sent "
            f"{row['payload_longest']:,} B of {row['source_tool'] or 'no'} tool's result"
            + (f", {row['reused_encoding']}-encoded" if row["reused_encoding"] else "")
        )
    alerted = counted(len(mine), "provenance alert")
    out(
        f"  {run.run}: {counted(len(run.calls), 'call')}, task "
        f"{'finished' if run.finished else 'NOT finished'} — {alerted}; "
        f"other sessions with one: {len(others)}"
    )
    if not mine:
        raise DemoError("exfiltration", "the exfiltrating call raised no provenance alert")
    first = mine[0]
    if EXFIL_TOOL not in (first.get("explanation") or ""):
        raise DemoError("exfiltration", f"the alert does not name {EXFIL_TOOL} as the source")
    if others:
        raise DemoError("exfiltration", f"provenance alerts on other runs: {', '.join(others)}")
    return ExfilOutcome(run, mine)
