"""Detection over the suite's recorded calls: the content-free detector scored on real faulted and
clean runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolwatch.detection.scoring.scan import scan
from toolwatch.injection.workbench.suite import SuiteResult
from toolwatch.words import counted


def detect_suite(
    store: Any, model: Any, result: SuiteResult, statistics: Sequence[str] | None = None
) -> dict[str, Any]:
    """Whether the content-free detector alarmed on each run's calls, per fault type.

    Reads the calls the suite's runs left in the store (instrumented client → collector),
    runs the operating-point scan (:func:`toolwatch.detection.scoring.scan.scan`, default statistic:
    the model's ``alert_on``) and compares, per fault type and agent, faulted runs with the
    clean runs of the same scenarios: ``separated`` counts scenario × agent pairs where the
    faulted run alarmed and the clean one did not.
    """
    prefix = f"wb-{result.run_id}-"
    calls = store.query("SELECT * FROM calls WHERE starts_with(session_id, ?)", [prefix])
    flagged: dict[str, Any] = {}
    if calls.num_rows:
        for flag in scan(model, calls, statistics).flags:
            flagged[flag.session_id] = flag
    recorded = set(calls.column("session_id").to_pylist()) if calls.num_rows else set()
    pairs: dict[tuple[str, str, str], dict[str, bool | None]] = {}
    for row in result.rows():
        if row["mode"] == "mitigated":
            continue
        sid = row["session_id"]
        key = (row["fault_type"], row["agent"], row["scenario_id"])
        alarmed = (sid in flagged) if sid in recorded else None
        pairs.setdefault(key, {})[row["mode"]] = alarmed
    by_fault: dict[str, dict[str, dict[str, Any]]] = {}
    for (fault, agent, _), modes in sorted(pairs.items()):
        cell = by_fault.setdefault(fault, {}).setdefault(
            agent,
            {"pairs": 0, "faulted_alarmed": 0, "clean_alarmed": 0, "separated": 0, "missing": 0},
        )
        clean, faulted = modes.get("clean"), modes.get("faulted")
        if clean is None or faulted is None:
            cell["missing"] += 1
            continue
        cell["pairs"] += 1
        cell["faulted_alarmed"] += int(faulted)
        cell["clean_alarmed"] += int(clean)
        cell["separated"] += int(faulted and not clean)
    cues: dict[str, int] = {}
    for flag in flagged.values():
        cues[flag.cue] = cues.get(flag.cue, 0) + 1
    return {
        "statistics": list(statistics or model.config.alert_on),
        "calls": calls.num_rows,
        "sessions": len(recorded),
        "flagged_sessions": len(flagged),
        "flagged_by_cue": dict(sorted(cues.items())),
        "by_fault": by_fault,
    }


def render_detection(detection: Mapping[str, Any]) -> str:
    """Per fault type: faulted runs alarmed, clean runs alarmed, pairs separated."""
    lines = [
        f"Detection ({', '.join(detection['statistics'])} at the operating point): "
        f"{detection['flagged_sessions']} of {counted(detection['sessions'], 'run')} flagged, "
        f"{counted(detection['calls'], 'call')} scored",
        "",
        f"{'fault':<6} {'agent':<9} {'faulted':>9} {'clean':>9} {'separated':>10}  verdict",
    ]
    for fault, agents in detection["by_fault"].items():
        for agent, c in agents.items():
            n = c["pairs"]
            if n == 0:
                lines.append(f"{fault:<6} {agent:<9} {'no calls recorded':>30}")
                continue
            if c["separated"] == n:
                verdict = "detected, clean runs quiet"
            elif c["faulted_alarmed"] and c["clean_alarmed"]:
                verdict = "alarms on clean runs too"
            elif c["faulted_alarmed"]:
                verdict = "partly detected"
            elif c["clean_alarmed"]:
                verdict = "false alarms only"
            else:
                verdict = "silent"
            faulted = f"{c['faulted_alarmed']}/{n}"
            clean = f"{c['clean_alarmed']}/{n}"
            separated = f"{c['separated']}/{n}"
            lines.append(
                f"{fault:<6} {agent:<9} {faulted:>9} {clean:>9} {separated:>10}  {verdict}"
            )
    return "\n".join(lines)
