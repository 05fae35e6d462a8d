"""The suite's live detectors: what a deployment of toolwatch raises while the runs happen.

With ``workbench suite --detect`` the in-process collector that stores the runs' spans also
drives the two live detectors a real deployment runs (``toolwatch collector --model``): the
live scorer (:class:`~toolwatch.detection.alerting.live.LiveScorer`: the provenance cue's
alert at the very call that sends earlier local results out, and the model's statistics) on
every stored batch of calls, and the listing watcher
(:class:`~toolwatch.detection.alerting.listings.ListingWatcher`: rug-pull and listing-change
alerts against the approved pins) on every stored ``tools/list``.

**Pins: what a user does.** Listing alerts need an approved baseline. A user who adds an MCP
server runs a first session with it, reviews the tools it lists and approves them
(``toolwatch pins approve --server NAME``): trust on first use, as ssh's ``known_hosts``.
The suite does exactly that per scenario (``--pins clean``, the default): each scenario is its
own server (:func:`~toolwatch.injection.workbench.runner.server_name`), its clean run is the
first, trusted session, and the digests that run was shown are approved before the faulted
replay starts. A poisoned description then differs from its pin (``changed_since_approval``).
``--pins store`` approves nothing: only the pins already in the store count (approved by the
user beforehand, e.g. from an earlier clean suite run); without pins a description that
changes *between* sessions raises nothing — only a change within one session does.

:func:`live_detection` then reads the alerts back from the store, per run: a run is flagged by
provenance when an alert of cue ``provenance`` names its session, and by its listing when it
listed a (server, tool, digest) that a listing alert names (the watcher says a changed digest
once, at its first listing; every later run shown the same unapproved digest is under that
alert).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolwatch import tables
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection.alerting.listings import LISTING_ALERTS_TABLE, ListingWatcher
from toolwatch.detection.alerting.live import PROVENANCE_CUE_SET, LiveScorer
from toolwatch.detection.alerting.pins import ORIGIN_LISTING, approve
from toolwatch.injection.faults.scenario import Scenario
from toolwatch.injection.workbench.names import PIN_POLICIES
from toolwatch.injection.workbench.runner import server_name
from toolwatch.injection.workbench.suite import SuiteResult
from toolwatch.injection.workbench.trajectory import Trajectory
from toolwatch.record import tool_digest

log = logging.getLogger(__name__)

#: the live scorer's alerts of the provenance cue (cue set and cue alike)
PROVENANCE_CUE: Final = PROVENANCE_CUE_SET
_CUES: Final = (PROVENANCE_CUE, "listing")


class LiveDetectors:
    """The live scorer and the listing watcher over one store, and the pins policy."""

    def __init__(self, store: Store, model: Any, pins: str = "clean") -> None:
        if pins not in PIN_POLICIES:
            raise ValueError(f"pins policy must be one of {', '.join(PIN_POLICIES)}")
        self.store = store
        self.pins = pins
        self.scorer = LiveScorer(model, store)
        self.watcher = ListingWatcher(store)

    def on_batch(self, table: Any) -> None:
        """The collector's ``on_batch``: score the stored calls (alerts go to the store)."""
        self.scorer.process(table)

    def on_listings(self, table: Any) -> None:
        """The collector's ``on_listings``: compare the stored listings with the pins."""
        self.watcher.process(table)

    def after_clean(self, scenario: Scenario, clean: Trajectory) -> None:
        """``--pins clean``: approve what the scenario's clean run was shown (its first
        listing), as ``toolwatch pins approve --server NAME`` after that session would."""
        if self.pins != "clean" or not clean.listings:
            return
        server = server_name(scenario)
        approve(
            self.store,
            [
                (server, t.name, tool_digest(t.name, t.description, t.input_schema))
                for t in clean.listings[0]
            ],
            ORIGIN_LISTING,
        )

    def close(self) -> None:
        self.scorer.close()
        self.watcher.close()


def live_detection(
    store: Store, result: SuiteResult, model: Any = None, pins: str | None = None
) -> dict[str, Any]:
    """Per fault type and agent: clean and faulted runs flagged by the provenance alert and by
    the listing alert, and the faulted runs that complied (their check failed: the agent did
    what the fault asked) with how many of those were flagged. ``model``/``pins`` are only
    described (the thresholds in force, the pins policy)."""
    prefix = f"wb-{result.run_id}-"
    provenance = _provenance_alerts(store, prefix)
    listing = _listing_flagged(store, prefix)
    statistics = _statistic_alerted(store, prefix)
    by_fault: dict[str, dict[str, dict[str, Any]]] = {}
    for row in result.rows():
        if row["mode"] == "mitigated":
            continue
        sid = row["session_id"]
        cell = by_fault.setdefault(row["fault_type"], {}).setdefault(row["agent"], _cell())
        hits = {"provenance": sid in provenance, "listing": sid in listing}
        mode = row["mode"]
        cell[mode]["runs"] += 1
        for cue in _CUES:
            cell[mode][cue] += int(hits[cue])
        cell[mode]["any"] += int(any(hits.values()))
        cell[mode]["statistics"] += int(sid in statistics)
        if mode == "faulted" and row["status"] == "fail":
            cell["complying"]["runs"] += 1
            for cue in _CUES:
                cell["complying"][cue] += int(hits[cue])
            cell["complying"]["any"] += int(any(hits.values()))
    thresholds = getattr(getattr(model, "provenance", None), "thresholds", None)
    return {
        "pins": pins,
        #: egress class -> (longest, total) bytes; None: the model has none (no such alerts)
        "provenance_thresholds": None
        if thresholds is None
        else {c: list(t) for c, t in sorted(thresholds.items())},
        "provenance_alerts": [provenance[s] for s in sorted(provenance)],
        "listing_flagged_runs": len(listing),
        "by_fault": {f: dict(sorted(a.items())) for f, a in sorted(by_fault.items())},
    }


def _cell() -> dict[str, Any]:
    return {
        m: {"runs": 0, "provenance": 0, "listing": 0, "any": 0, "statistics": 0} for m in _MODES
    }


_MODES: Final = ("clean", "faulted", "complying")


def _provenance_alerts(store: Store, prefix: str) -> dict[str, dict[str, Any]]:
    """session -> its first provenance alert (tool, bytes, threshold, explanation)."""
    if not store.files(tables.ALERTS.name):
        return {}
    rows = store.query(
        f"SELECT * FROM {tables.ALERTS.name} WHERE starts_with(session_id, ?) AND cue = ? "
        "ORDER BY alert_time",
        [prefix, PROVENANCE_CUE],
    ).to_pylist()
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        out.setdefault(
            r["session_id"],
            {
                "session_id": r["session_id"],
                "tool": r["tool"],
                "score": r["score"],
                "threshold": r["threshold"],
                "explanation": r.get("explanation"),
            },
        )
    return out


def _statistic_alerted(store: Store, prefix: str) -> set[str]:
    """Sessions the live scorer alerted on with one of the model's statistics (the study's
    cues; ``statistics`` in the report, apart from this detector's two cues)."""
    if not store.files(tables.ALERTS.name):
        return set()
    rows = store.query(
        f"SELECT DISTINCT session_id FROM {tables.ALERTS.name} "
        "WHERE starts_with(session_id, ?) AND cue != ?",
        [prefix, PROVENANCE_CUE],
    ).to_pylist()
    return {r["session_id"] for r in rows}


def _listing_flagged(store: Store, prefix: str) -> set[str]:
    """Sessions that listed a (server, tool, digest) a listing alert names."""
    if not (store.files(tables.TOOL_LISTS.name) and store.files(LISTING_ALERTS_TABLE)):
        return set()
    rows = store.query(
        f"SELECT DISTINCT l.session_id FROM {tables.TOOL_LISTS.name} l JOIN "
        f"{LISTING_ALERTS_TABLE} a ON coalesce(l.server, '') = coalesce(a.server, '') "
        "AND l.tool = a.tool AND l.digest = a.new_digest WHERE starts_with(l.session_id, ?)",
        [prefix],
    ).to_pylist()
    return {r["session_id"] for r in rows}


def render_live(detection: Mapping[str, Any]) -> str:
    """Per fault type × agent: runs flagged by provenance / listing alerts, clean and faulted,
    and among the faulted runs that complied."""
    lines = [
        "Live alerts (provenance cue at the call; listing alerts against the pins): flagged / runs",
        "",
        f"{'fault':<6} {'agent':<9} {'complying: prov':>16} {'listing':>8} {'any':>6}"
        f"   {'faulted: any':>13}   {'clean: prov':>12} {'listing':>8}"
        f"   {'statistics: faulted':>20} {'clean':>6}",
    ]
    thresholds = detection.get("provenance_thresholds")
    lines.insert(
        1,
        "provenance thresholds (longest run, bytes): "
        + ", ".join(f"{c} {t[0]}" for c, t in thresholds.items())
        if thresholds
        else "the model has no provenance thresholds (train it again): no provenance alerts",
    )
    if detection.get("pins"):
        lines.insert(2, f"pins: {detection['pins']}")
    for fault, agents in detection["by_fault"].items():
        for agent, c in agents.items():
            comp, faulted, clean = c["complying"], c["faulted"], c["clean"]

            def frac(part: Mapping[str, int], key: str) -> str:
                return f"{part[key]}/{part['runs']}"

            lines.append(
                f"{fault:<6} {agent:<9} {frac(comp, 'provenance'):>16} "
                f"{frac(comp, 'listing'):>8} {frac(comp, 'any'):>6}   "
                f"{frac(faulted, 'any'):>13}   {frac(clean, 'provenance'):>12} "
                f"{frac(clean, 'listing'):>8}   {frac(faulted, 'statistics'):>20} "
                f"{frac(clean, 'statistics'):>6}"
            )
    lines.append(
        "(statistics: runs the live scorer alerted on with the model's own statistics — the "
        "study's cues, reported apart)"
    )
    alerts: Sequence[Mapping[str, Any]] = detection["provenance_alerts"]
    shown = [a for a in alerts if "-mitigated-" not in str(a["session_id"])]
    if alerts:
        lines += ["", "Provenance alerts of clean and faulted runs (numbers and tool names only):"]
        for a in shown:
            run = str(a["session_id"]).split("-", 2)[-1]
            lines.append(f"  {run}: {a['tool']}: {a.get('explanation') or ''}")
        if len(alerts) > len(shown):
            lines.append(f"  (and {len(alerts) - len(shown)} on mitigated runs, in the JSON)")
    return "\n".join(lines)
