"""Beyond the study's record: the provenance cue (and any other cue beyond the study's four)
beside the study's headline statistic, and the two together as the live scorer runs them.

The live scorer alerts on all·CUSUM *or* a provenance excess. So beside each cue alone this
reports that union at one false-alarm level: the provenance cue at its learned thresholds, and
all·CUSUM's threshold chosen so that the union reaches the largest level not above the target
(a normal stream the provenance cue alarms on always counts as alarming). Detection uses each
run's largest statistic inside its detection window (``RunOutcomes.window_max``), exactly the
window the cells use.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import toolwatch.injection.experiment.metrics as M
from toolwatch.injection.experiment.results import NORMAL, ExperimentResult
from toolwatch.injection.spans.kinds import ANOMALY_KINDS, PROVENANCE_KINDS

#: statistics beyond the study's cue sets, in report order (those present are shown)
BEYOND: tuple[tuple[str, str], ...] = (("provenance", "point"),)
HEADLINE = ("all", "cusum")


def union_figures(result: ExperimentResult, variant: str = "standard") -> dict[str, Any] | None:
    """all·CUSUM ∨ provenance (learned thresholds) at the target: the all·CUSUM threshold, the
    level reached and the detection rate per kind; ``None`` without provenance runs."""
    runs = {r.kind: r for r in result.runs if r.variant == variant}
    normal = runs.get(NORMAL)
    prov = ("provenance", "point")
    if normal is None or prov not in normal.window_max:
        return None
    op = result.thresholds[(variant, *prov, "operating_point")].value
    prov_alarm = normal.window_max[prov] > op
    maxima = np.where(prov_alarm, np.inf, normal.window_max[HEADLINE])
    choice = M.threshold_for_false_alarm(maxima, result.config.target_fa)
    rates: dict[str, float] = {}
    for kind, r in runs.items():
        if kind == NORMAL or HEADLINE not in r.window_max or not len(r.seed):
            continue
        hit = (r.window_max[HEADLINE] > choice.threshold) | (r.window_max[prov] > op)
        rates[kind] = float(hit.mean())
    return {
        "all_cusum_threshold": choice.threshold,
        "fa_reached": choice.reached,
        "alarming": round(choice.reached * len(maxima)),
        "streams": len(maxima),
        "rates": rates,
    }


def beyond_section(result: ExperimentResult, label: Any, pct: Any) -> str | None:
    """The text section (``label``/``pct`` are the report's formatters); ``None`` when no
    statistic beyond the study's was measured."""
    present = [s for s in BEYOND if ("standard", *s, "operating_point") in result.thresholds]
    if not present:
        return None
    n = result.split["test"][0]
    kinds = [k for k in (*ANOMALY_KINDS, *PROVENANCE_KINDS) if k in result.config.kinds]
    union = union_figures(result)
    header = ["kind", "all·CUSUM"]
    levels = []
    for cue, det in present:
        for mode, what in (("operating_point", "learned thresholds"), ("fa_target", "fa target")):
            t = result.thresholds[("standard", cue, det, mode)]
            header.append(f"{cue} ({what})")
            levels.append(
                f"{cue}·{det} at its {what}: {pct(t.fa_reached, 1)} = "
                f"{round(t.fa_reached * n)}/{n} normal test streams"
            )
    if union is not None:
        header.append("all·CUSUM ∨ provenance")
        levels.append(
            f"all·CUSUM ∨ provenance (all·CUSUM threshold {union['all_cusum_threshold']:.2f}): "
            f"{pct(union['fa_reached'], 1)} = {union['alarming']}/{union['streams']}"
        )
    rows = []
    for kind in kinds:
        c = result.cell(kind, *HEADLINE)
        row = [label(kind), pct(c.rate) if c else "–"]
        for cue, det in present:
            for mode in ("operating_point", "fa_target"):
                cell = result.cell(kind, cue, det, mode=mode)
                row.append(pct(cell.rate, 1) if cell else "–")
        if union is not None:
            rate = union["rates"].get(kind)
            row.append("–" if rate is None else pct(rate, 1))
        rows.append(row)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    foot = "false alarms: " + "; ".join(levels)
    if any(k in result.config.kinds for k in PROVENANCE_KINDS):
        foot += (
            "\nthe study's kinds insert calls without provenance (not measured: they never "
            "alarm the provenance cue); exfil_<payload>_<encoding> carry it (key 40 B, "
            "document 400 B, file 3 KB)"
        )
    return (
        "Beyond the study's record — the provenance cue (per-egress-class payload thresholds, "
        f"rule {result.config.model.get('provenance_rule', 'capped')}) beside all cues + CUSUM\n"
        + "\n".join(lines)
        + "\n"
        + foot
    )
