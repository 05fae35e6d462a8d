"""The corpus facts as a reader sees them: the label and number format of each fact, the
aligned text of ``toolwatch stats`` and its JSON document. ``toolwatch stats`` and the app's
corpus page print the same figures the same way (:func:`format_stat`)."""

from __future__ import annotations

import math
from typing import Any, Final

from toolwatch.collector.stats.corpus import STAT_KEYS
from toolwatch.collector.store.result_formats import render, text_table
from toolwatch.study import CORPUS
from toolwatch.words import counted

#: key -> (label, format): "n" integer, "s" seconds, "%" share.
LABELS: Final[dict[str, tuple[str, str]]] = {
    "sessions": ("streams (session × agent: the study's 'sessions')", "n"),
    "calls": ("calls", "n"),
    "tools": ("tools", "n"),
    "mcp_servers": ("MCP servers", "n"),
    "mcp_tools": ("MCP tools", "n"),
    "mcp_calls": ("MCP calls", "n"),
    "days": ("days (UTC span)", "n"),
    "inter_response_gaps": ("inter-response gaps", "n"),
    "inter_response_gap_min_s": ("  minimum", "s"),
    "inter_response_gap_median_s": ("  median", "s"),
    "inter_response_share_le_1s": ("  share <= 1 s", "%"),
    "parallel_calls": ("within-response gaps (parallel calls)", "n"),
    "within_response_gap_median_s": ("  median", "s"),
    "within_response_share_le_1s": ("  share <= 1 s", "%"),
    "first_use_share": ("first use of a tool in its session (mean)", "%"),
    "first_use_share_pooled": ("  pooled over all calls", "%"),
    "failure_rate": ("failure rate", "%"),
    "subagent_calls": ("subagent calls", "n"),
    "restamped_calls": ("re-stamped calls (no timing)", "n"),
    "skipped_restamped_gaps": ("gaps skipped (re-stamped)", "n"),
}


def stats_document(
    store: str, selected: list[str] | None, sources: dict[str, int], stats: dict[str, float]
) -> dict[str, Any]:
    """JSON-ready document: NaN becomes null."""
    return {
        "store": store,
        "selected_sources": selected,
        "calls_by_source": sources,
        "stats": {k: _json_number(v) for k, v in stats.items()},
        "study": {k: v for k, v in CORPUS.items() if k in stats},
    }


def format_report(
    store: str, selected: list[str] | None, sources: dict[str, int], stats: dict[str, float]
) -> str:
    shown = ", ".join(f"{s} {counted(n, 'call')}" for s, n in sources.items()) or "empty"
    lines = [f"store {store} ({shown})"]
    if selected:
        lines.append(f"selected sources: {', '.join(selected)}")
    if "simulated" in sources and (not selected or "simulated" in selected):
        lines.append("note: includes SIMULATED calls (toolwatch simulate), not real agent data")
    rows = []
    for key in STAT_KEYS:
        label, kind = LABELS[key]
        study = CORPUS.get(key)
        study_text = format_stat(float(study), kind) if study is not None else "—"
        rows.append([label, format_stat(stats[key], kind), study_text])
    drawn = text_table([("", False), ("yours", True), ("study", True)], rows)
    lines.append(render(drawn).rstrip("\n"))
    lines.append(
        "a stream is one (session, agent): each subagent counts as one, as the study counted "
        "its sessions; gaps are between consecutive calls of one stream"
    )
    return "\n".join(lines)


def format_stat(value: float | None, kind: str) -> str:
    """One figure as ``toolwatch stats`` prints it (the app's corpus page uses it too):
    ``kind`` "n" integer, "s" seconds, "%" share; NaN or None → "—"."""
    if value is None or math.isnan(value):
        return "—"
    if kind == "n":
        return f"{value:,.0f}"
    if kind == "s":
        return f"{value:,.2f} s"
    return f"{100 * value:.1f} %"


def _json_number(value: float) -> float | int | None:
    if math.isnan(value):
        return None
    return int(value) if value.is_integer() else value
